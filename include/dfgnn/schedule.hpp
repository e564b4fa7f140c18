#pragma once
/// \file schedule.hpp
/// Host-side scheduling decisions shared by the backends: which strategy Auto picks and how
/// rows are packed into node-parallel teams. Kokkos-free.

#include <dfgnn/csr.hpp>

#include <cstddef>
#include <vector>

namespace dfgnn {

/// Rows per team of the SMMF kernel: enough to fill a team with one row per thread group.
inline constexpr int kMaxTeamRows = 8;

/// The strategy Auto picks (DF-GNN's rule): when the heaviest row's scores do not fit in the
/// team scratch and the score needs a reduction over features (GT, AGNN), PMF computes them
/// edge-parallel once; otherwise SMMF keeps everything in one kernel.
Strategy choose_strategy(ScoreKind kind, int heads, const DegreeStats& stats,
                         std::size_t scratch_bytes);

/// SMMF row partition: team t owns rows [bounds[t], bounds[t+1]). Consecutive rows are packed
/// while the team has at most `max_rows` rows and its scores (edges * heads) fit in
/// `capacity` floats. A row that alone exceeds the capacity gets a team of its own.
std::vector<node_t> partition_rows(const HostGraph& g, int heads, edge_t capacity, int max_rows);

}  // namespace dfgnn
