#pragma once
/// \file schedule.hpp
/// Host-side scheduling shared by the backends: how rows are packed into node-parallel teams and
/// cut into pieces, and their degree statistics (the decisions are strategy.hpp's). Kokkos-free.

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
