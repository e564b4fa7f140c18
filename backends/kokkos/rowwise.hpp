#pragma once
// Node-parallel steps over the global score buffer, shared by PMF and the unfused baseline:
// one thread group per (row, head) turns its scores into probabilities in place (Normalize)
// and sums the weighted neighbour features with vector lanes over D (Aggregate).

#include "scores.hpp"

namespace dfgnn::kokkos_impl {

/// Edges whose per-feature sums a thread group reduces in one pass over the features, so that
/// their rows' loads are in flight together (Online, the backward's destinations; a row's last
/// degree % kStepEdges edges go one at a time).
inline constexpr int kStepEdges = 4;

/// A lane's partial sums of the U values of a step.
template <int U>
struct EdgeSums {
  float x[U];
  KOKKOS_INLINE_FUNCTION EdgeSums() {
    for (int j = 0; j < U; ++j) x[j] = 0.0f;
  }
  KOKKOS_INLINE_FUNCTION EdgeSums& operator+=(const EdgeSums& o) {
    for (int j = 0; j < U; ++j) x[j] += o.x[j];
    return *this;
  }
};

}  // namespace dfgnn::kokkos_impl

// What Kokkos::Sum needs of a custom value type.
namespace Kokkos {
template <int U>
struct reduction_identity<dfgnn::kokkos_impl::EdgeSums<U>> {
  KOKKOS_FORCEINLINE_FUNCTION static dfgnn::kokkos_impl::EdgeSums<U> sum() { return {}; }
};
}  // namespace Kokkos

namespace dfgnn::kokkos_impl {

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

template <class Exec>
struct Normalize {
  Problem<typename Exec::memory_space> p;
  Kokkos::View<float*, typename Exec::memory_space> scores;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, node_t v, int h) const {
    const edge_t a = p.row_ptr(v), b = p.row_ptr(v + 1);
    float m = 0.0f, sum = 0.0f;
    if (b > a) softmax_stats(team, scores, a, b, h, p.heads, m, sum);
    Kokkos::single(Kokkos::PerThread(team), [&] { p.record(v, h, m, sum); });
    // Lanes write distinct entries; the vector range ends with a lane barrier (a __syncwarp on
    // CUDA), so the SpMM that follows in the same group sees them.
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, a, b), [&](edge_t e) {
      scores(e * p.heads + h) = exp(scores(e * p.heads + h) - m) / sum;
    });
  }
};

template <class Exec, class Score>
struct Aggregate {
  Problem<typename Exec::memory_space> p;
  Score score;
  Kokkos::View<const float*, typename Exec::memory_space> probs;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, node_t v, int h) const {
    const edge_t a = p.row_ptr(v), b = p.row_ptr(v + 1);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, p.dim), [&](int d) {
      float acc = 0.0f;
      for (edge_t e = a; e < b; ++e) acc += probs(e * p.heads + h) * p.keep(e, h) * value_of(score, p.src(e), h, d);
      p.out(v, h, d) = acc;
    });
  }
};

}  // namespace dfgnn::kokkos_impl
