#pragma once
// Edge-parallel SDDMM to global memory: PMF's first kernel, and the unfused baseline's.

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
void edge_scores(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
                 const Score& score) {
  const auto& L = plan.layout();
  const edge_t teams = (edge_t(p.src.extent(0)) + kTeamEdges - 1) / kTeamEdges;
  launch(exec, "dfgnn::edge_scores", int(teams), L.team_size, L.vector_length,
         EdgeScores<Exec, Score>{p, score, L.scores});
}

}  // namespace dfgnn::kokkos_impl
