#pragma once
/// \file schedule.hpp
/// Host-side scheduling decisions shared by the backends: which strategy Auto picks and how
/// rows are packed into node-parallel teams. Kokkos-free.

#include <dfgnn/csr.hpp>
#include <dfgnn/op.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dfgnn {

/// Rows per team of the SMMF kernel: enough to fill a team with one row per thread group.
inline constexpr int kMaxTeamRows = 8;

/// Alignment of the portable Online's accumulator slots in team scratch (one 16-byte access per
/// 4 features); the plan keeps this many bytes of the scratch free for it.
inline constexpr std::size_t kOnlineSlotAlign = 16;
/// Lanes of a thread group on graphs that fill the device: Online's (Plan::online_lanes) and,
/// on even degrees, the backward's destination walk's (Plan::row_walk_lanes).
inline constexpr int kNarrowLanes = 8;

/// What a backend offers an op on its device, for Auto: the strategies it can run for this op
/// and graph (Dense and Staged only where their kernels' limits allow it), and the team scratch
/// or shared memory (bytes) free for a row's scores or a thread group's accumulator.
struct DeviceFacts {
  unsigned strategies = 0;  ///< bit `1 << int(s)` for each strategy s
  std::size_t scratch_bytes = 0;
  bool has(Strategy s) const { return (strategies >> int(s) & 1u) != 0; }
};

/// The strategies of both backends (kPortableStrategies) and of the CUDA-native one only.
inline constexpr unsigned strategy_bit(Strategy s) { return 1u << int(s); }
inline constexpr unsigned kPortableStrategies = strategy_bit(Strategy::SMMF) | strategy_bit(Strategy::PMF) |
                                                strategy_bit(Strategy::Unfused) | strategy_bit(Strategy::Online);

/// A batch of small graphs as Dense's rule reads it: its edges over the sum of n^2 over the
/// graphs (the share of (row, node) pairs that are edges) and the mean nodes of a non-empty
/// graph. Zero for a graph Dense cannot run.
struct BatchStats {
  double density = 0, mean_nodes = 0;
};

/// Auto, the one cost model of every backend (docs/design.md, "How Auto decides"):
/// 1. Dense, where the device has it, on batches whose density reaches a bar that depends on
///    the score and D, with at least 64 nodes a graph;
/// 2. else Online, wherever a thread group's accumulator (dim floats) fits the scratch: one pass
///    over the edges, no per-edge scores, heavy rows split;
/// 3. else DF-GNN's rule: PMF when the heaviest row's scores do not fit the scratch and the
///    score reduces over features (GT, AGNN), so they are computed once, edge-parallel;
///    otherwise SMMF.
Strategy choose_strategy(const Op& op, const DegreeStats& degrees, const BatchStats& batch, const DeviceFacts& device);

/// SMMF row partition: team t owns rows [bounds[t], bounds[t+1]). Consecutive rows are packed
/// while the team has at most `max_rows` rows and its scores (edges * heads) fit in
/// `capacity` floats. A row that alone exceeds the capacity gets a team of its own. Throws
/// Error unless g's row offsets are well formed (the only part of g it reads).
std::vector<node_t> partition_rows(const HostGraph& g, int heads, edge_t capacity, int max_rows);

/// A piece of a heavy row: edges [e0, e1) of `row`, whose partial statistics go to partial
/// slot `slot` (its index among the pieces).
struct RowPiece {
  edge_t e0, e1;
  node_t row;
  int slot;
};

/// A split row's pieces: pieces[first, first + count), whose partial statistics are merged in
/// that order.
struct SplitRow {
  node_t row;
  int first, count;
};

struct RowPieces {
  std::vector<RowPiece> pieces;
  std::vector<SplitRow> rows;
};

/// Bound of a piece on any device: a merge per 4096 edges is noise, while a device running few
/// threads (a CPU) would otherwise walk a super row in one group.
inline constexpr edge_t kMaxPieceEdges = 4096;

/// Online's piece length: a thread group's share of the edges (`lanes` lanes per group,
/// `concurrency` threads the device runs at once), so no piece outlasts the rest of the
/// graph, at least 32 edges so the merge stays small, and at most kMaxPieceEdges.
edge_t piece_edges(edge_t num_edges, int lanes, int concurrency);

/// Segments of `ptr` (CSR rows, or CSC columns) above `split` edges cut into equal consecutive
/// pieces of at most `split` edges: Online's on both backends, the CUDA PMF's, the backward's
/// and the message kernels'.
RowPieces row_pieces(const std::vector<edge_t>& ptr, edge_t split);

/// Degrees are uneven above this coefficient of variation: a GPU block then holds its SM
/// slots until its slowest walk ends, so the CUDA kernels launch smaller blocks
/// (docs/cuda.md, docs/message_passing.md).
inline constexpr double kUnevenDegrees = 0.7;

/// Degrees of the segments of `ptr` a thread group walks whole (at most `split` edges): their
/// mean and coefficient of variation (0 when there are none).
struct WholeDegrees {
  double mean = 0, cv = 0;
  bool uneven() const { return cv > kUnevenDegrees; }
};
WholeDegrees whole_degrees(const std::vector<edge_t>& ptr, edge_t split);
/// The same from the segments' count, sum of degrees and sum of squared degrees (exact integer
/// sums, so the host's and the device's statistics agree bit for bit).
WholeDegrees whole_degrees_of(std::uint64_t count, std::uint64_t sum, std::uint64_t squares);

}  // namespace dfgnn
