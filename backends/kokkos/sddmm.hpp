#pragma once
// Edge-parallel SDDMM to global memory (PMF's first kernel, and the unfused baseline's), and
// the per-(row, head) softmax statistics over those global scores.

#include "scores.hpp"

namespace dfgnn::kokkos_impl {

/// Edges per team of the edge-parallel SDDMM: enough (edge, head) pairs to keep every thread
/// group of a team busy.
inline constexpr int kTeamEdges = 128;

template <class Exec, class Score>
struct EdgeScores {
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  Problem<typename Exec::memory_space> p;
  Score score;
  Kokkos::View<float*, typename Exec::memory_space> scores;  // [E * H], edge-major

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const edge_t e0 = edge_t(team.league_rank()) * kTeamEdges;
    const edge_t n = p.src.extent(0) - e0 < kTeamEdges ? p.src.extent(0) - e0 : kTeamEdges;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * p.heads), [&](edge_t k) {
      const edge_t e = e0 + k / p.heads;
      const int h = int(k % p.heads);
      const float x = edge_score(team, score, p, e, h);
      Kokkos::single(Kokkos::PerThread(team), [&] { scores(e * p.heads + h) = x; });
    });
  }
};

template <class Exec, class Score>
void edge_scores(const Exec& exec, const Plan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
                 const Score& score) {
  const auto& L = plan.layout();
  const edge_t teams = (edge_t(p.src.extent(0)) + kTeamEdges - 1) / kTeamEdges;
  launch(exec, "dfgnn::edge_scores", int(teams), L.team_size, L.vector_length,
         EdgeScores<Exec, Score>{p, score, L.scores});
}

/// Node-parallel walk shared by the fused softmax + SpMM and the unfused kernels: team t
/// covers kMaxTeamRows rows, one thread group per (row, head) calls body(team, v, h).
template <class Exec, class Body>
struct RowHeads {
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  node_t num_nodes;
  int heads;
  Body body;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const node_t r0 = node_t(team.league_rank()) * kMaxTeamRows;
    const int rows = num_nodes - r0 < kMaxTeamRows ? num_nodes - r0 : kMaxTeamRows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows * heads),
                         [&](int k) { body(team, r0 + k / heads, k % heads); });
  }
};

template <class Exec, class Body>
void launch_rows(const Exec& exec, const char* name, const Plan<Exec>& plan, const Body& body) {
  const auto& L = plan.layout();
  const node_t n = plan.graph().num_nodes();
  launch(exec, name, (n + kMaxTeamRows - 1) / kMaxTeamRows, L.team_size, L.vector_length,
         RowHeads<Exec, Body>{n, plan.heads(), body});
}

/// Max and sum of exponentials of the scores of row [a, b), head h (b > a), over the calling
/// thread group's vector lanes.
template <class Member, class Scores>
KOKKOS_INLINE_FUNCTION void softmax_stats(const Member& team, const Scores& scores, edge_t a,
                                          edge_t b, int h, int heads, float& max, float& sum) {
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(team, a, b),
      [&](edge_t e, float& mx) { mx = fmax(mx, scores(e * heads + h)); }, Kokkos::Max<float>(max));
  const float m = max;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(team, a, b),
      [&](edge_t e, float& acc) { acc += exp(scores(e * heads + h) - m); }, sum);
}

}  // namespace dfgnn::kokkos_impl
