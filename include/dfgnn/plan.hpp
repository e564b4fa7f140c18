#pragma once
/// \file plan.hpp
/// A plan holds everything an attention call needs besides the tensors: the op, and the
/// executor of the backend that runs it (the portable kernels with their resolved strategy,
/// launch geometry, SMMF row partition or Online's pieces and workspace; or the CUDA-native
/// plan). Build it once per (graph, score kind, H, D); every call through it only launches
/// kernels.

#include <dfgnn/dispatch.hpp>
#include <dfgnn/graph.hpp>
#include <dfgnn/schedule.hpp>

#if defined(DFGNN_ENABLE_CUDA) && defined(KOKKOS_ENABLE_CUDA)
#define DFGNN_NATIVE_CUDA 1
#endif

// Applies M to every enabled execution space: the library's entries and executors are
// instantiated once per space.
#ifdef KOKKOS_ENABLE_SERIAL
#define DFGNN_ON_SERIAL(M) M(Kokkos::Serial)
#else
#define DFGNN_ON_SERIAL(M)
#endif
#ifdef KOKKOS_ENABLE_OPENMP
#define DFGNN_ON_OPENMP(M) M(Kokkos::OpenMP)
#else
#define DFGNN_ON_OPENMP(M)
#endif
#ifdef KOKKOS_ENABLE_THREADS
#define DFGNN_ON_THREADS(M) M(Kokkos::Threads)
#else
#define DFGNN_ON_THREADS(M)
#endif
#ifdef KOKKOS_ENABLE_CUDA
#define DFGNN_ON_CUDA(M) M(Kokkos::Cuda)
#else
#define DFGNN_ON_CUDA(M)
#endif
#define DFGNN_FOR_EACH_EXECUTION_SPACE(M) DFGNN_ON_SERIAL(M) DFGNN_ON_OPENMP(M) DFGNN_ON_THREADS(M) DFGNN_ON_CUDA(M)

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace dfgnn {

template <class ExecutionSpace>
class Plan;

namespace detail {
/// Lanes of a thread group at most (a CUDA warp).
inline constexpr int kMaxLanes = 32;

/// Vector lanes of a thread group spanning `width` entries: the next power of two, at most
/// kMaxLanes and at most what the team policy allows.
template <class Policy>
int vector_lanes(int width) {
  int lanes = 1;
  while (lanes < width && lanes < Policy::vector_length_max() && lanes < kMaxLanes) lanes *= 2;
  return lanes;
}

/// The portable kernels' executor of a plan (backends/kokkos): its graph, op and layout, and
/// the strategy the layout is for. Instantiated for every enabled execution space.
template <class ExecutionSpace>
std::shared_ptr<const Executor> portable_executor(const Plan<ExecutionSpace>& plan, Strategy strategy);
}  // namespace detail

/// Per-(graph, score kind, H, D) state of one backend's kernels (resolve_backend): the portable
/// kernels' layout, or, on Kokkos::Cuda with DFGNN_ENABLE_CUDA, the CUDA-native plan that
/// forward and backward calls then run. Copies are cheap and share the executor.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class Plan {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using policy = Kokkos::TeamPolicy<ExecutionSpace>;

  /// Launch geometry and workspace, read by the kernels in backends/kokkos.
  struct Layout {
    int vector_length = 1;  ///< lanes per thread group, over features (a power of two)
    int team_size = 1;      ///< thread groups per team wanted (clamped at launch)
    int scratch_floats = 0;  ///< level-0 scratch per team, in floats (SMMF, Online)
    Kokkos::View<const node_t*, memory_space> team_rows;  ///< SMMF row partition [T+1]
    Kokkos::View<float*, memory_space> scores;     ///< PMF / Unfused scores [E*H]
    int online_lanes = 1;  ///< Online: lanes per thread group, over groups of 4 features when D % 4 == 0
    int row_walk_lanes = detail::kMaxLanes;  ///< backward: lanes per thread group of the destination walk at most
    edge_t split = 0;  ///< Online: rows above this many edges run as pieces
    Kokkos::View<const RowPiece*, memory_space> pieces;     ///< Online: the split rows' pieces
    Kokkos::View<const SplitRow*, memory_space> split_rows;  ///< Online: which pieces merge
    /// Online: (max, sum, accumulator[D]) of each (piece, head), row piece * H + h [P*H, 2+D]
    Kokkos::View<float**, Kokkos::LayoutRight, memory_space> partials;
    Kokkos::View<float**, Kokkos::LayoutRight, memory_space> inv_norms;  ///< AGNN 1/|X[n,h]|
  };

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
        op_{kind, dtype, heads, dim, graph_.num_src_nodes(), graph_.num_nodes(), graph_.num_edges()} {
    check_named("plan", strategy, kind, backend);
    detail::check_op("plan", op_);
    backend_ = resolve_backend("plan", backend, native_unavailable());
    if (backend_ == Backend::Native) {
      executor_ = native(strategy);  // the native plan is the whole plan: no portable layout
      return;
    }
    strategy = detail::element_strategy("plan", strategy, dtype, strategy_bit(Strategy::Online));
    if (strategy == Strategy::Staged || strategy == Strategy::Dense)
      throw Error(std::string("plan: the ") + to_string(strategy) + " strategy is CUDA-native only (dfgnn::cuda::Plan)");
    // Level-0 scratch as the policy allows it; the SMMF scores plus kMaxTeamRows * H
    // normalisers (or a super row's running max, sum and rescale per head) must fit.
    const std::size_t scratch_bytes = std::size_t(policy::scratch_size_max(0));
    const edge_t capacity = edge_t(scratch_bytes / sizeof(float)) - 3 * edge_t(kMaxTeamRows) * heads;
    if (capacity < heads)
      throw Error("plan: " + std::to_string(heads) + " heads do not fit the team scratch of " +
                  std::to_string(scratch_bytes) + " bytes");
    const Strategy resolved = strategy == Strategy::Auto
                    ? choose_strategy(op_, graph_.stats(), BatchStats{},
                                      DeviceFacts{kPortableStrategies, std::size_t(capacity) * sizeof(float)})
                    : strategy;
    Layout L;
    L.vector_length = detail::vector_lanes<policy>(dim);
    L.team_size = std::max(1, 256 / L.vector_length);
    L.row_walk_lanes = row_walk_lanes(int(exec.concurrency()));
    const edge_t E = graph_.num_edges();
    if (resolved == Strategy::SMMF) {
      const std::vector<node_t> bounds = partition_rows(graph_.host(), heads, capacity, kMaxTeamRows);
      L.team_rows = detail::upload<node_t, memory_space>("dfgnn::team_rows", bounds);
      edge_t widest = 0;
      for (std::size_t t = 0; t + 1 < bounds.size(); ++t)
        widest = std::max(widest, graph_.host().row_ptr[bounds[t + 1]] - graph_.host().row_ptr[bounds[t]]);
      L.scratch_floats = int(std::min(widest * heads, capacity)) + 3 * kMaxTeamRows * heads;
    } else if (resolved == Strategy::Online) {
      online_layout(L, exec, scratch_bytes / sizeof(float));
    } else {
      L.scores = Kokkos::View<float*, memory_space>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "dfgnn::scores"), std::size_t(E) * heads);
    }
    if (kind == ScoreKind::AGNN)
      L.inv_norms = decltype(L.inv_norms)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dfgnn::inv_norms"),
                                          std::size_t(graph_.num_nodes()), std::size_t(heads));
    layout_ = std::make_shared<const Layout>(std::move(L));
    executor_ = detail::portable_executor(*this, resolved);
  }

  const Graph<memory_space>& graph() const { return graph_; }
  const Op& op() const { return op_; }
  ScoreKind kind() const { return op_.kind; }
  int heads() const { return op_.heads; }
  int dim() const { return op_.dim; }
  /// The resolved strategy of the kernels calls run (never Auto).
  Strategy strategy() const { return executor_->strategy(); }
  /// Which kernels calls run (never Auto).
  Backend backend() const { return backend_; }
  /// The portable kernels' layout; a plan of the native backend has none (Error).
  const Layout& layout() const {
    if (!layout_) throw Error("plan: a plan of the CUDA-native backend has no portable layout");
    return *layout_;
  }
  /// What the dispatch hands this plan's calls to.
  const detail::Executor& executor() const { return *executor_; }

 private:
  // Online: lanes over groups of 4 features where D allows it (the kernel moves 4 per access
  // when the tensors' rows are aligned; otherwise each lane takes 4 single features); a D-float
  // accumulator per thread group in scratch (fewer groups per team when D is large,
  // kOnlineSlotAlign bytes kept for their alignment); and the pieces of the rows above the
  // split with their partial statistics.
  void online_layout(Layout& L, const ExecutionSpace& exec, std::size_t scratch_floats) const {
    L.online_lanes = online_lanes(int(exec.concurrency()));
    const int lanes = L.online_lanes, D = op_.dim;
    const std::size_t align = kOnlineSlotAlign / sizeof(float);
    const std::size_t fit = (scratch_floats - std::min(scratch_floats, align)) / std::size_t(D);
    const int groups = int(std::min<std::size_t>(std::size_t(256 / lanes), fit));
    if (groups < 1)
      throw Error("plan: dim " + std::to_string(D) + " does not fit the team scratch of Online (" +
                  std::to_string(scratch_floats) + " floats)");
    L.scratch_floats = groups * D;
    L.split = piece_edges(graph_.num_edges(), lanes, int(exec.concurrency()));
    const RowPieces p = row_pieces(graph_.host().row_ptr, L.split);
    L.pieces = detail::upload<RowPiece, memory_space>("dfgnn::pieces", p.pieces);
    L.split_rows = detail::upload<SplitRow, memory_space>("dfgnn::split_rows", p.rows);
    L.partials = decltype(L.partials)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dfgnn::partials"),
                                      p.pieces.size() * std::size_t(op_.heads), std::size_t(D) + 2);
  }

  // One lane per 4 features, except that a graph whose (row, head) units fill the device even
  // at 8 lanes a group takes at most 8 lanes at D <= 128: the per-edge work every lane of a
  // group repeats (ids, score, exponential) and the score reduction are then shared by 8
  // lanes instead of 32, while the feature loads stay as wide. On the H100 that took
  // PATTERN-like and rmat-s17 forwards 7-27% off at D = 64 and 128; graphs too small to fill
  // the device (cora, pubmed, tolokers) were up to 1.5x slower with it (docs/design.md).
  int online_lanes(int concurrency) const {
    const int D = op_.dim;
    const int wide = detail::vector_lanes<policy>(D % 4 == 0 ? D / 4 : D);
    return narrow_fits(concurrency) ? std::min(wide, kNarrowLanes) : wide;
  }

  // The backward's destination walk reduces 8 sums (4 edges' scores and dq_e) over its lanes
  // every step. 8 lanes instead of 32 took 5-26% off the batches' fwd+bwd on the H100, but made
  // rmat-s17-d64 up to 21% slower: a group then walks its row 4x as long, and with uneven degrees
  // the long rows finish last (docs/backward.md). So 8 on even degrees where Online takes 8.
  int row_walk_lanes(int concurrency) const {
    if (!narrow_fits(concurrency)) return detail::kMaxLanes;  // no pass over the degrees then
    const bool even = !whole_degrees(graph_.host().row_ptr, std::numeric_limits<edge_t>::max()).uneven();
    return even ? kNarrowLanes : detail::kMaxLanes;
  }

  // Whether 8-lane groups suit D (D % 4 == 0, at most 128) and the graph's (row, head) units
  // fill the device with them.
  bool narrow_fits(int concurrency) const {
    const int D = op_.dim;
    return D % 4 == 0 && D <= 128 && std::int64_t(graph_.num_nodes()) * op_.heads * kNarrowLanes >= concurrency;
  }

  // Why this space cannot run the CUDA-native kernels (empty: it can).
  static std::string native_unavailable() {
#ifdef DFGNN_NATIVE_CUDA
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>) return {};
#endif
    return "needs Kokkos::Cuda and dfgnn built with DFGNN_ENABLE_CUDA";
  }

  // The CUDA-native plan over the graph's device arrays (resolve_backend picks Native only
  // where this space runs it).
  std::shared_ptr<const detail::Executor> native(Strategy strategy) const {
#ifdef DFGNN_NATIVE_CUDA
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>)
      return detail::native_executor(graph_.host(), graph_.row_ptr().data(), graph_.src().data(),
                                     graph_.dst().data(), graph_.edge_id().data(), op_, strategy);
#endif
    (void)strategy;
    return nullptr;
  }

  Graph<memory_space> graph_;
  Op op_;
  Backend backend_ = Backend::Portable;
  std::shared_ptr<const Layout> layout_;
  std::shared_ptr<const detail::Executor> executor_;
};

}  // namespace dfgnn
