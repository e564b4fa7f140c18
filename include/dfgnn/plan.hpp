#pragma once
/// \file plan.hpp
/// A plan holds everything an attention call needs besides the tensors: the op, and the
/// executor of the backend that runs it, as the one plan factory (detail/factory.hpp) built it:
/// the portable kernels with their resolved strategy, launch geometry and workspace, or the
/// CUDA-native plan. Build it once per (graph, score kind, H, D); every call through it only
/// launches kernels.

#include <dfgnn/detail/factory.hpp>
#include <dfgnn/graph.hpp>

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace dfgnn {

namespace detail {
/// The portable kernels' builder of a plan on `exec` (backends/kokkos: its layout). Instantiated
/// for every enabled execution space.
template <class ExecutionSpace>
std::unique_ptr<Builder> portable_builder(const ExecutionSpace& exec,
                                          const Graph<typename ExecutionSpace::memory_space>& graph, const Op& op);
}  // namespace detail

/// Per-(graph, score kind, H, D) state of one backend's kernels (resolve_backend): the portable
/// kernels' plan, or, on Kokkos::Cuda with DFGNN_ENABLE_CUDA, the CUDA-native plan that forward
/// and backward calls then run. Copies are cheap and share the executor.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class Plan {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;

  /// A plan for float32 tensors.
  Plan(const ExecutionSpace& exec, Graph<memory_space> graph, ScoreKind kind, int heads, int dim,
       Strategy strategy = Strategy::Auto, Backend backend = Backend::Auto)
      : Plan(exec, std::move(graph), kind, heads, dim, DType::F32, strategy, backend) {}

  /// A plan for tensors of element type `dtype` (op.hpp; the logsumexp stays float32). Two-byte
  /// types run Online on the portable kernels, Online or Dense on the CUDA-native ones
  /// (detail::element_strategy).
  Plan(const ExecutionSpace& exec, Graph<memory_space> graph, ScoreKind kind, int heads, int dim, DType dtype,
       Strategy strategy = Strategy::Auto, Backend backend = Backend::Auto)
      : graph_(std::move(graph)),
        op_{kind, dtype, heads, dim, graph_.num_src_nodes(), graph_.num_nodes(), graph_.num_edges()},
        executor_(detail::make_executor("plan", op_, graph_.stats(), strategy, backend, where(exec))) {}

  const Graph<memory_space>& graph() const { return graph_; }
  const Op& op() const { return op_; }
  ScoreKind kind() const { return op_.kind; }
  int heads() const { return op_.heads; }
  int dim() const { return op_.dim; }
  /// The resolved strategy of the kernels calls run (never Auto).
  Strategy strategy() const { return executor_->strategy(); }
  /// Which kernels calls run (never Auto).
  Backend backend() const { return executor_->backend(); }
  /// What the dispatch hands this plan's calls to.
  const detail::Executor& executor() const { return *executor_; }

 private:
  // The backends that run on `exec`: the portable kernels everywhere, the CUDA-native ones on
  // Kokkos::Cuda in a build with DFGNN_ENABLE_CUDA (over the graph's device arrays, so neither
  // this header nor backends/kokkos includes the CUDA backend).
  detail::Where where(const ExecutionSpace& exec) const {
    detail::Where w;
    w.portable = detail::portable_builder(exec, graph_, op_);
#ifdef DFGNN_NATIVE_CUDA
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>) {
      w.native = detail::native_builder(graph_.host(), graph_.row_ptr().data(), graph_.src().data(),
                                        graph_.dst().data(), graph_.edge_id().data(), op_, nullptr);
      return w;
    }
#endif
    w.native_unavailable = "needs Kokkos::Cuda and dfgnn built with DFGNN_ENABLE_CUDA";
    return w;
  }

  Graph<memory_space> graph_;
  Op op_;
  std::shared_ptr<const detail::Executor> executor_;
};

}  // namespace dfgnn
