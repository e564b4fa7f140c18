#pragma once
/// \file message_passing.hpp
/// Generalized message passing on Kokkos (DGL's fused g-SpMM / g-SDDMM, message.hpp has the
/// semantics): SpMM-based convolutions (GCN, GraphSAGE-mean, GIN) and max/min/mean/sum
/// aggregations without materialising per-edge messages, forward and backward.
///
/// \code
///   dfgnn::Graph<Mem> graph(dfgnn::graph_from_edges(N, src, dst));
///   dfgnn::MessagePlan<Exec> plan(exec, graph);                           // once per graph
///   // GraphSAGE-mean: out[v] = mean over u -> v of x[u]                     x, out [N,H,D]
///   dfgnn::gspmm(exec, plan, dfgnn::Message::copy_u(), dfgnn::Reduce::Mean, x, {}, out);
///   // weighted max: out[v] = max over e = u -> v of x[u] * w[e], w [E,1,1]; arg [N,H,D]
///   dfgnn::gspmm(exec, plan, dfgnn::Message::u_op_e(dfgnn::BinaryOp::Mul), dfgnn::Reduce::Max, x, w, out, arg);
///   dfgnn::gspmm_backward(exec, plan, msg, dfgnn::Reduce::Max, x, w, arg, dout, dx, dw);
///   dfgnn::gsddmm(exec, plan, dfgnn::BinaryOp::Dot, q, k, scores);       // scores [E,H,1]
///   dfgnn::gcn_aggregate(exec, plan, x, out);                             // D^-1/2 A D^-1/2 x
/// \endcode
///
/// Tensors are rank-3 LayoutRight Views on the graph's memory space, [rows, heads, dim]; an
/// operand's heads and dim may be 1 (broadcast). Every shape is checked and an output
/// overlapping an input throws dfgnn::Error naming both. No atomics: each output entry is summed
/// by one lane in an order fixed by the graph, so results are bitwise reproducible. Gradients are
/// gathered, not scattered: at destinations over the CSR rows, at sources over the CSC (built by
/// Graph::transposed() on first use), per edge for edge tensors. Kernels run asynchronously on
/// `exec`. A MessagePlan is the op family's plan, as Plan is attention's (detail/messages.hpp):
/// the portable kernels on every execution space, and on Kokkos::Cuda in a build with
/// DFGNN_ENABLE_CUDA the CUDA-native ones (cuda_message_passing.hpp; Backend::Portable keeps the
/// portable ones). The entries taking a Graph run the portable kernels through a plan of their
/// own.

#include <dfgnn/detail/messages.hpp>
#include <dfgnn/graph.hpp>
#include <dfgnn/message.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace dfgnn {

/// An input [rows, 1|H, 1|D]: rows N for node tensors, E (caller's edge order) for edge tensors.
template <class MemorySpace>
using Tensor = Kokkos::View<const float***, Kokkos::LayoutRight, MemorySpace>;
/// An output or gradient [rows, heads, dim].
template <class MemorySpace>
using TensorOutput = Kokkos::View<float***, Kokkos::LayoutRight, MemorySpace>;
/// The winning edge (caller's index) of every entry of a max/min g-SpMM [N,H,D]; -1: empty row.
template <class MemorySpace>
using ArgOutput = Kokkos::View<edge_t***, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using ArgInput = Kokkos::View<const edge_t***, Kokkos::LayoutRight, MemorySpace>;

namespace detail {
/// The portable kernels' message-passing builder on `exec` (backends/kokkos). Instantiated for
/// every enabled execution space.
template <class ExecutionSpace>
std::unique_ptr<MessageBuilder> portable_message_builder(const ExecutionSpace& exec,
                                                         const Graph<typename ExecutionSpace::memory_space>& graph);

/// What the checks see of a View.
template <class View>
Extents extents(const char* name, const View& t) {
  return {name, t.data(), t.extent(0), t.extent(1), t.extent(2), sizeof(typename View::value_type)};
}
}  // namespace detail

/// The message-passing plan of a square graph on one backend (resolve_backend): the portable
/// kernels, or on Kokkos::Cuda with DFGNN_ENABLE_CUDA the CUDA-native ones. Copies are cheap and
/// share the executor.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class MessagePlan {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;

  /// Throws Error for a bipartite graph: message passing reads node tensors at both ends of an
  /// edge with one row count.
  MessagePlan(const ExecutionSpace& exec, Graph<memory_space> graph, Backend backend = Backend::Auto)
      : graph_(std::move(graph)), executor_(detail::make_message_executor("message plan", backend, where(exec))) {}

  const Graph<memory_space>& graph() const { return graph_; }
  /// Which kernels calls run (never Auto).
  Backend backend() const { return executor_->backend(); }
  const detail::MessageExecutor& executor() const { return *executor_; }

 private:
  detail::MessageWhere where(const ExecutionSpace& exec) const {
    if (graph_.host().bipartite())
      throw Error("message plan: message passing needs a square graph, not a bipartite one");
    detail::MessageWhere w;
    w.portable = detail::portable_message_builder(exec, graph_);
#ifdef DFGNN_NATIVE_CUDA
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>) {
      w.native = detail::native_message_builder(graph_.host(), graph_.row_ptr().data(), graph_.src().data(),
                                                graph_.dst().data(), graph_.edge_id().data());
      return w;
    }
#endif
    w.native_unavailable = "needs Kokkos::Cuda and dfgnn built with DFGNN_ENABLE_CUDA";
    return w;
  }

  Graph<memory_space> graph_;
  std::shared_ptr<const detail::MessageExecutor> executor_;
};

namespace detail {
/// `c` of the given pass on `exec`, checked and run through `plan`.
template <class Exec>
void run(const char* who, const Exec& exec, const MessagePlan<Exec>& plan, MessageCall c) {
  c.space = &exec;
#ifdef DFGNN_NATIVE_CUDA
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) c.stream = exec.cuda_stream();
#endif
  run(who, plan.executor(), c);
}
}  // namespace detail

/// out [N,H,D] = reduce over u -> v of message(lhs, rhs). lhs is on U (on E for copy_e), rhs
/// on E or V, empty for a copy. arg, optional and for max/min only, receives the winners (the
/// first edge of the row among equal messages); the backward of max/min needs it.
template <class Exec>
void gspmm(const Exec& exec, const MessagePlan<Exec>& plan, const Message& message, Reduce reduce,
           const Tensor<typename Exec::memory_space>& lhs, const Tensor<typename Exec::memory_space>& rhs,
           const TensorOutput<typename Exec::memory_space>& out, const ArgOutput<typename Exec::memory_space>& arg = {}) {
  detail::MessageCall c;
  c.pass = detail::MessagePass::Spmm, c.message = message, c.reduce = reduce;
  c.heads = int(out.extent(1)), c.dim = int(out.extent(2));
  c.lhs = detail::extents("lhs", lhs), c.rhs = detail::extents("rhs", rhs), c.out = detail::extents("out", out);
  c.arg = detail::extents("arg", arg);
  detail::run("gspmm", exec, plan, c);
}

/// Gradients of gspmm from dout = dLoss/dout [N,H,D]: dlhs shaped like lhs, drhs like rhs
/// (summed over broadcast axes; either may be empty to skip it), overwritten. arg is the
/// forward's (max/min only): the gradient of each output entry goes to its winning message.
template <class Exec>
void gspmm_backward(const Exec& exec, const MessagePlan<Exec>& plan, const Message& message, Reduce reduce,
                    const Tensor<typename Exec::memory_space>& lhs, const Tensor<typename Exec::memory_space>& rhs,
                    const ArgInput<typename Exec::memory_space>& arg, const Tensor<typename Exec::memory_space>& dout,
                    const TensorOutput<typename Exec::memory_space>& dlhs,
                    const TensorOutput<typename Exec::memory_space>& drhs) {
  detail::MessageCall c;
  c.pass = detail::MessagePass::SpmmBackward, c.message = message, c.reduce = reduce;
  c.heads = int(dout.extent(1)), c.dim = int(dout.extent(2));
  c.lhs = detail::extents("lhs", lhs), c.rhs = detail::extents("rhs", rhs), c.arg = detail::extents("arg", arg);
  c.dout = detail::extents("dout", dout), c.dlhs = detail::extents("dlhs", dlhs), c.drhs = detail::extents("drhs", drhs);
  detail::run("gspmm_backward", exec, plan, c);
}

/// out[e] = op(x[u], y[v]) for every edge e = u -> v, out [E,H,D] ([E,H,1] for dot) in the
/// caller's edge order; x and y [N, 1|H, 1|D]. Edge-parallel.
template <class Exec>
void gsddmm(const Exec& exec, const MessagePlan<Exec>& plan, BinaryOp op, const Tensor<typename Exec::memory_space>& x,
            const Tensor<typename Exec::memory_space>& y, const TensorOutput<typename Exec::memory_space>& out) {
  detail::MessageCall c;
  c.pass = detail::MessagePass::Sddmm, c.op = op;
  c.heads = int(out.extent(1)), c.dim = int(op == BinaryOp::Dot ? std::max(x.extent(2), y.extent(2)) : out.extent(2));
  c.lhs = detail::extents("x", x), c.rhs = detail::extents("y", y), c.out = detail::extents("out", out);
  detail::run("gsddmm", exec, plan, c);
}

/// Gradients of gsddmm from dout [E,H,D] ([E,H,1] for dot): dx like x, dy like y (either may
/// be empty), overwritten.
template <class Exec>
void gsddmm_backward(const Exec& exec, const MessagePlan<Exec>& plan, BinaryOp op,
                     const Tensor<typename Exec::memory_space>& x, const Tensor<typename Exec::memory_space>& y,
                     const Tensor<typename Exec::memory_space>& dout, const TensorOutput<typename Exec::memory_space>& dx,
                     const TensorOutput<typename Exec::memory_space>& dy) {
  detail::MessageCall c;
  c.pass = detail::MessagePass::SddmmBackward, c.op = op;
  c.heads = int(dout.extent(1)), c.dim = int(op == BinaryOp::Dot ? std::max(x.extent(2), y.extent(2)) : dout.extent(2));
  c.lhs = detail::extents("x", x), c.rhs = detail::extents("y", y), c.dout = detail::extents("dout", dout);
  c.dlhs = detail::extents("dx", dx), c.drhs = detail::extents("dy", dy);
  detail::run("gsddmm_backward", exec, plan, c);
}

/// GCN's symmetric normalisation fused in the SpMM: out[v] = sum over u -> v of
/// x[u] / sqrt(d_out(u) d_in(v)), degrees clamped to at least 1 (add self loops to the graph for
/// the usual D^-1/2 (A + I) D^-1/2). x, out [N,H,D].
template <class Exec>
void gcn_aggregate(const Exec& exec, const MessagePlan<Exec>& plan, const Tensor<typename Exec::memory_space>& x,
                   const TensorOutput<typename Exec::memory_space>& out) {
  detail::MessageCall c;
  c.pass = detail::MessagePass::Gcn;
  c.heads = int(out.extent(1)), c.dim = int(out.extent(2));
  c.lhs = detail::extents("x", x), c.out = detail::extents("out", out);
  detail::run("gcn_aggregate", exec, plan, c);
}

/// Its gradient: dx [N,H,D] from dout [N,H,D].
template <class Exec>
void gcn_aggregate_backward(const Exec& exec, const MessagePlan<Exec>& plan,
                            const Tensor<typename Exec::memory_space>& dout,
                            const TensorOutput<typename Exec::memory_space>& dx) {
  detail::MessageCall c;
  c.pass = detail::MessagePass::GcnBackward;
  c.heads = int(dx.extent(1)), c.dim = int(dx.extent(2));
  c.dout = detail::extents("dout", dout), c.dlhs = detail::extents("dx", dx);
  detail::run("gcn_aggregate_backward", exec, plan, c);
}

// The entries above on the portable kernels, for one call on `graph` (a plan of their own).
template <class Exec>
void gspmm(const Exec& exec, const Graph<typename Exec::memory_space>& graph, const Message& message, Reduce reduce,
           const Tensor<typename Exec::memory_space>& lhs, const Tensor<typename Exec::memory_space>& rhs,
           const TensorOutput<typename Exec::memory_space>& out, const ArgOutput<typename Exec::memory_space>& arg = {}) {
  gspmm(exec, MessagePlan<Exec>(exec, graph, Backend::Portable), message, reduce, lhs, rhs, out, arg);
}
template <class Exec>
void gspmm_backward(const Exec& exec, const Graph<typename Exec::memory_space>& graph, const Message& message,
                    Reduce reduce, const Tensor<typename Exec::memory_space>& lhs,
                    const Tensor<typename Exec::memory_space>& rhs, const ArgInput<typename Exec::memory_space>& arg,
                    const Tensor<typename Exec::memory_space>& dout,
                    const TensorOutput<typename Exec::memory_space>& dlhs,
                    const TensorOutput<typename Exec::memory_space>& drhs) {
  gspmm_backward(exec, MessagePlan<Exec>(exec, graph, Backend::Portable), message, reduce, lhs, rhs, arg, dout, dlhs,
                 drhs);
}
template <class Exec>
void gsddmm(const Exec& exec, const Graph<typename Exec::memory_space>& graph, BinaryOp op,
            const Tensor<typename Exec::memory_space>& x, const Tensor<typename Exec::memory_space>& y,
            const TensorOutput<typename Exec::memory_space>& out) {
  gsddmm(exec, MessagePlan<Exec>(exec, graph, Backend::Portable), op, x, y, out);
}
template <class Exec>
void gsddmm_backward(const Exec& exec, const Graph<typename Exec::memory_space>& graph, BinaryOp op,
                     const Tensor<typename Exec::memory_space>& x, const Tensor<typename Exec::memory_space>& y,
                     const Tensor<typename Exec::memory_space>& dout,
                     const TensorOutput<typename Exec::memory_space>& dx,
                     const TensorOutput<typename Exec::memory_space>& dy) {
  gsddmm_backward(exec, MessagePlan<Exec>(exec, graph, Backend::Portable), op, x, y, dout, dx, dy);
}
template <class Exec>
void gcn_aggregate(const Exec& exec, const Graph<typename Exec::memory_space>& graph,
                   const Tensor<typename Exec::memory_space>& x, const TensorOutput<typename Exec::memory_space>& out) {
  gcn_aggregate(exec, MessagePlan<Exec>(exec, graph, Backend::Portable), x, out);
}
template <class Exec>
void gcn_aggregate_backward(const Exec& exec, const Graph<typename Exec::memory_space>& graph,
                            const Tensor<typename Exec::memory_space>& dout,
                            const TensorOutput<typename Exec::memory_space>& dx) {
  gcn_aggregate_backward(exec, MessagePlan<Exec>(exec, graph, Backend::Portable), dout, dx);
}

/// out[i] = in[index[i]] for node tensors [N,H,D]: moves them into a reordered graph's order
/// (index = Reordered::order) and results back (index = Reordered::position), reorder.hpp.
/// index must hold a node id in [0, N) per entry (not checked on the device).
template <class Exec>
void permute_nodes(const Exec& exec, const Kokkos::View<const node_t*, typename Exec::memory_space>& index,
                   const Tensor<typename Exec::memory_space>& in, const TensorOutput<typename Exec::memory_space>& out);

}  // namespace dfgnn
