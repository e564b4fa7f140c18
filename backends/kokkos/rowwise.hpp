#pragma once
// Node-parallel steps over the global score buffer, shared by PMF and the unfused baseline:
// one thread group per (row, head) turns its scores into probabilities in place (Normalize)
// and sums the weighted neighbour features with vector lanes over D (Aggregate).

#include "executor.hpp"
#include "lanes.hpp"

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

/// Node-parallel walk: team t covers `rows` consecutive rows of [0, num_rows), one thread
/// group per (row, head) calls body(team, v, h).
template <class Exec, class Body>
struct RowHeads {
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  node_t num_rows;
  int heads, rows;
  Body body;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const node_t r0 = node_t(team.league_rank()) * rows;
    const int mine = num_rows - r0 < rows ? int(num_rows - r0) : rows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, mine * heads),
                         [&](int k) { body(team, r0 + k / heads, k % heads); });
  }
};

/// body over rows [0, num_rows) and every head: teams of `lanes`-lane thread groups (Geometry),
/// each team taking as many rows as its groups cover with all heads (at least one row).
template <class... Traits, class Exec, class Body>
void launch_rows(const Exec& exec, const char* name, node_t num_rows, int heads, int lanes, const Body& body) {
  if (num_rows == 0) return;
  RowHeads<Exec, Body> f{num_rows, heads, 1, body};
  const int groups = team_size_for<Traits...>(exec, Geometry<Exec>::groups(lanes), lanes, f);
  f.rows = std::max(1, groups / heads);
  launch_sized<Traits...>(exec, name, (std::int64_t(num_rows) + f.rows - 1) / f.rows, groups, lanes, f);
}

/// body over every (row, head) of the plan's graph, thread groups of the plan's vector length.
template <class Exec, class Body>
void launch_rows(const Exec& exec, const char* name, const PortablePlan<Exec>& plan, const Body& body) {
  launch_rows(exec, name, plan.graph().num_nodes(), plan.heads(), plan.layout().vector_length, body);
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
    // Lanes write distinct entries, which the SpMM that follows in the same group reads.
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, a, b), [&](edge_t e) {
      scores(e * p.heads + h) = exp(scores(e * p.heads + h) - m) / sum;
    });
    lane_barrier();
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
      for (edge_t e = a; e < b; ++e)
        acc += probs(e * p.heads + h) * p.keep(e, h) * value_of(score, p.src(e), p.edge_id(e), h, d);
      p.out(v, h, d) = acc;
    });
  }
};

}  // namespace dfgnn::kokkos_impl
