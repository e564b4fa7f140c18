#pragma once
// The portable kernels' plan geometry and workspace (docs/design.md, "The Kokkos mapping"): lanes
// per thread group, groups per team, team scratch, SMMF's row partition, Online's pieces and
// partials, PMF's scores, AGNN's norms; and the builder the plan factory asks for them
// (detail/factory.hpp).

#include <dfgnn/detail/factory.hpp>
#include <dfgnn/detail/schedule.hpp>
#include <dfgnn/graph.hpp>

#include "lanes.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace dfgnn::kokkos_impl {

/// Rows per team of the SMMF kernel: enough to fill a team with one row per thread group.
inline constexpr int kMaxTeamRows = 8;
/// Alignment of the Online accumulator slots in team scratch (one 16-byte access per 4
/// features); the plan keeps this many bytes of the scratch free for it.
inline constexpr std::size_t kOnlineSlotAlign = 16;
/// Lanes of a thread group on graphs that fill the device: Online's (online_lanes) and, on even
/// degrees, the backward's destination walk's (row_walk_lanes).
inline constexpr int kNarrowLanes = 8;

/// The portable kernels' launch geometry on execution space Exec: one rule per kind of backend,
/// fed by what the space itself reports (docs/design.md, "The Kokkos mapping").
/// - A GPU (CUDA, HIP, SYCL): a thread group's lanes are its SIMD group at most (the policy's
///   vector_length_max: a CUDA warp of 32, a HIP wavefront of 64, a SYCL sub-group), and a team
///   256 threads, enough resident teams per multiprocessor at the kernels' launch bounds.
/// - A host (Serial, OpenMP, Threads): one lane, one thread a team. Vector ranges there are loops
///   of one thread, so lanes only add rounds of a loop, and a team of several threads makes them
///   wait for each other at its start and barriers while the pool has rows for all of them.
/// Launch bounds are CUDA's measurements (the H100's register budgets); elsewhere none is set.
template <class Exec>
struct Geometry {
  using policy = Kokkos::TeamPolicy<Exec>;
  static constexpr bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  static constexpr int team_threads = host ? 1 : 256;

  /// Lanes of a thread group at most.
  static int max_lanes() { return host ? 1 : int(policy::vector_length_max()); }
  /// Lanes of a thread group spanning `width` entries: the next power of two, at most max_lanes.
  static int lanes(int width) {
    int l = 1;
    while (l < width && l < max_lanes()) l *= 2;
    return l;
  }
  /// Thread groups of `lanes` lanes a team holds.
  static int groups(int lanes) { return std::max(1, team_threads / lanes); }

  /// Online's: five teams per SM (at most 48 registers a thread): its walk waits on gathers,
  /// and unbounded (70 registers, 3 teams) it took up to 1.5x as long on the H100.
  using OnlineBounds = std::conditional_t<kCudaSpace<Exec>, Kokkos::LaunchBounds<256, 5>, Kokkos::LaunchBounds<>>;
  /// The backward's gathers: four teams per SM (at most 64 registers a thread); without the
  /// bound (up to 87 registers) the backward was 2-39% slower on the H100.
  using GatherBounds = std::conditional_t<kCudaSpace<Exec>, Kokkos::LaunchBounds<256, 4>, Kokkos::LaunchBounds<>>;
};

/// Launch geometry and workspace of a plan, read by the kernels.
template <class Mem>
struct Layout {
  int vector_length = 1;   ///< lanes per thread group, over features (a power of two)
  int team_size = 1;       ///< thread groups per team wanted (clamped at launch)
  int scratch_floats = 0;  ///< level-0 scratch per team, in floats (SMMF, Online)
  Kokkos::View<const node_t*, Mem> team_rows;  ///< SMMF row partition [T+1]
  Kokkos::View<float*, Mem> scores;            ///< PMF / Unfused scores [E*H]
  int online_lanes = 1;  ///< Online: lanes per thread group, over groups of 4 features when D % 4 == 0
  int row_walk_lanes = 1;          ///< backward: lanes per thread group of the destination walk at most
  edge_t split = 0;                ///< Online: rows above this many edges run as pieces
  Kokkos::View<const RowPiece*, Mem> pieces;     ///< Online: the split rows' pieces
  Kokkos::View<const SplitRow*, Mem> split_rows;  ///< Online: which pieces merge
  /// Online: (max, sum, accumulator[D]) of each (piece, head), row piece * H + h [P*H, 2+D]
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> partials;
  /// A cosine score's 1/|X[u,h]| of the sources and 1/|X_dst[v,h]| of the destinations.
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> inv_norms, inv_norms_dst;
};

template <class Exec>
class PortablePlan;

/// The layout of a portable plan on `Exec`: the facts the strategy module decides on (the team
/// scratch the policy allows), then the layout of the resolved strategy.
template <class Exec>
class LayoutBuilder final : public detail::Builder {
 public:
  using memory_space = typename Exec::memory_space;
  using policy = Kokkos::TeamPolicy<Exec>;
  using geometry = Geometry<Exec>;

  LayoutBuilder(const Exec& exec, const Graph<memory_space>& graph, const Op& op)
      : exec_(exec), graph_(graph), op_(op) {}

  // Level-0 scratch as the policy allows it; the SMMF scores plus kMaxTeamRows * H normalisers
  // (or a super row's running max, sum and rescale per head) must fit.
  detail::DeviceFacts facts(Strategy) override {
    scratch_bytes_ = std::size_t(policy::scratch_size_max(0));
    capacity_ = edge_t(scratch_bytes_ / sizeof(float)) - 3 * edge_t(kMaxTeamRows) * op_.heads;
    detail::DeviceFacts f;
    f.strategies = detail::kPortableStrategies;
    f.scratch_bytes = std::size_t(std::max<edge_t>(capacity_, 0)) * sizeof(float);
    for (Strategy s : {Strategy::Staged, Strategy::Dense})
      f.why_not[int(s)] = std::string("the ") + to_string(s) + " strategy is CUDA-native only (dfgnn::cuda::Plan)";
    return f;
  }

  std::shared_ptr<const detail::Executor> build(Strategy resolved) override;

 private:
  Layout<memory_space> layout(Strategy resolved) const {
    const int heads = op_.heads, dim = op_.dim;
    if (capacity_ < heads)
      throw Error("plan: " + std::to_string(heads) + " heads do not fit the team scratch of " +
                  std::to_string(scratch_bytes_) + " bytes");
    Layout<memory_space> L;
    L.vector_length = geometry::lanes(dim);
    L.team_size = geometry::groups(L.vector_length);
    L.row_walk_lanes = row_walk_lanes(int(exec_.concurrency()));
    const edge_t E = graph_.num_edges();
    if (resolved == Strategy::SMMF) {
      const std::vector<node_t> bounds = partition_rows(graph_.host(), heads, capacity_, kMaxTeamRows);
      L.team_rows = detail::upload<node_t, memory_space>("dfgnn::team_rows", bounds);
      edge_t widest = 0;
      for (std::size_t t = 0; t + 1 < bounds.size(); ++t)
        widest = std::max(widest, graph_.host().row_ptr[bounds[t + 1]] - graph_.host().row_ptr[bounds[t]]);
      L.scratch_floats = int(std::min(widest * heads, capacity_)) + 3 * kMaxTeamRows * heads;
    } else if (resolved == Strategy::Online) {
      online_layout(L, scratch_bytes_ / sizeof(float));
    } else {
      L.scores = Kokkos::View<float*, memory_space>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dfgnn::scores"),
                                                    std::size_t(E) * heads);
    }
    if (visit_model(op_.kind, [](auto model) { return decltype(model)::cosine; })) {
      const auto norms = [&](const std::string& name, node_t nodes) {  // a const char* would be memory to wrap
        return decltype(L.inv_norms)(Kokkos::view_alloc(Kokkos::WithoutInitializing, name), std::size_t(nodes),
                                     std::size_t(heads));
      };
      L.inv_norms = norms("dfgnn::inv_norms", graph_.num_src_nodes());
      L.inv_norms_dst = norms("dfgnn::inv_norms_dst", graph_.num_nodes());
    }
    return L;
  }

  // Online: lanes over groups of 4 features where D allows it (the kernel moves 4 per access
  // when the tensors' rows are aligned; otherwise each lane takes 4 single features); a D-float
  // accumulator per thread group in scratch (fewer groups per team when D is large,
  // kOnlineSlotAlign bytes kept for their alignment); and the pieces of the rows above the
  // split with their partial statistics.
  void online_layout(Layout<memory_space>& L, std::size_t scratch_floats) const {
    const int concurrency = int(exec_.concurrency());
    L.online_lanes = online_lanes(concurrency);
    const int lanes = L.online_lanes, D = op_.dim;
    const std::size_t align = kOnlineSlotAlign / sizeof(float);
    const std::size_t fit = (scratch_floats - std::min(scratch_floats, align)) / std::size_t(D);
    const int groups = int(std::min<std::size_t>(std::size_t(geometry::groups(lanes)), fit));
    if (groups < 1)
      throw Error("plan: dim " + std::to_string(D) + " does not fit the team scratch of Online (" +
                  std::to_string(scratch_floats) + " floats)");
    L.scratch_floats = groups * D;
    L.split = detail::piece_edges(graph_.num_edges(), {lanes, concurrency, 32, detail::kMaxPieceEdges});
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
    const int wide = geometry::lanes(D % 4 == 0 ? D / 4 : D);
    return narrow_fits(concurrency) ? std::min(wide, kNarrowLanes) : wide;
  }

  // The backward's destination walk reduces 8 sums (4 edges' scores and dq_e) over its lanes
  // every step. 8 lanes instead of 32 took 5-26% off the batches' fwd+bwd on the H100, but made
  // rmat-s17-d64 up to 21% slower: a group then walks its row 4x as long, and with uneven degrees
  // the long rows finish last (docs/backward.md). So 8 on even degrees where Online takes 8.
  int row_walk_lanes(int concurrency) const {
    if (!narrow_fits(concurrency)) return geometry::max_lanes();  // no pass over the degrees then
    const bool even = !whole_degrees(graph_.host().row_ptr, std::numeric_limits<edge_t>::max()).uneven();
    return even ? std::min(kNarrowLanes, geometry::max_lanes()) : geometry::max_lanes();
  }

  // Whether 8-lane groups suit D (D % 4 == 0, at most 128) and the graph's (row, head) units
  // fill the device with them.
  bool narrow_fits(int concurrency) const {
    const int D = op_.dim;
    return D % 4 == 0 && D <= 128 && std::int64_t(graph_.num_nodes()) * op_.heads * kNarrowLanes >= concurrency;
  }

  Exec exec_;
  Graph<memory_space> graph_;
  Op op_;
  std::size_t scratch_bytes_ = 0;
  edge_t capacity_ = 0;
};

}  // namespace dfgnn::kokkos_impl
