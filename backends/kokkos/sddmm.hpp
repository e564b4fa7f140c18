#pragma once
// Edge-parallel SDDMM to global memory: PMF's first kernel, the unfused baseline's, and the
// attention weights a forward writes on request.

#include "executor.hpp"

namespace dfgnn::kokkos_impl {

/// Edges per team of the edge-parallel SDDMM: enough (edge, head) pairs to keep every thread
/// group of a team busy.
inline constexpr int kTeamEdges = 128;

/// Each (edge, head)'s score (edge_score) handed to `store`, teams over kTeamEdges edges.
template <class Exec, class Score, class Store>
struct EachEdge {
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  Problem<typename Exec::memory_space, typename Score::element> p;
  Score score;
  Store store;

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const edge_t e0 = edge_t(team.league_rank()) * kTeamEdges;
    const edge_t n = p.src.extent(0) - e0 < kTeamEdges ? p.src.extent(0) - e0 : kTeamEdges;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * p.heads), [&](edge_t k) {
      const edge_t e = e0 + k / p.heads;
      const int h = int(k % p.heads);
      const float x = edge_score(team, score, p, e, h);
      Kokkos::single(Kokkos::PerThread(team), [&] { store(e, h, x); });
    });
  }
};

template <class Store, class Exec, class Score>
void each_edge(const Exec& exec, const PortablePlan<Exec>& plan, const char* name,
               const Problem<typename Exec::memory_space, typename Score::element>& p, const Score& score,
               const Store& store) {
  const auto& L = plan.layout();
  const edge_t teams = (edge_t(p.src.extent(0)) + kTeamEdges - 1) / kTeamEdges;
  launch(exec, name, teams, L.team_size, L.vector_length, EachEdge<Exec, Score, Store>{p, score, store});
}

/// Scores to the plan's buffer [E * H], edge-major in CSR order.
template <class Mem>
struct ToScores {
  Kokkos::View<float*, Mem> scores;
  int heads;
  KOKKOS_INLINE_FUNCTION void operator()(edge_t e, int h, float x) const { scores(e * heads + h) = x; }
};

/// The attention weights (Call::weights): exp(score - logsumexp) times the dropout factor, at
/// the caller's edge index.
template <class Mem, class T>
struct ToWeights {
  Problem<Mem, T> p;
  ScalarsOut<Mem, T> weights;
  KOKKOS_INLINE_FUNCTION void operator()(edge_t e, int h, float x) const {
    weights(p.edge_id(e), h) = from_float<T>(exp(x - p.lse(p.dst(e), h)) * p.keep(e, h));
  }
};

template <class Exec, class Score>
void edge_scores(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
                 const Score& score) {
  each_edge(exec, plan, "dfgnn::edge_scores", p, score, ToScores<typename Exec::memory_space>{plan.layout().scores, p.heads});
}

template <class Exec, class Score, class T = typename Score::element>
void edge_weights(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space, T>& p,
                  const Score& score, const ScalarsOut<typename Exec::memory_space, T>& weights) {
  each_edge(exec, plan, "dfgnn::attention_weights", p, score, ToWeights<typename Exec::memory_space, T>{p, weights});
}

}  // namespace dfgnn::kokkos_impl
