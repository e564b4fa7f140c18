#pragma once
// SMMF: SDDMM, softmax and SpMM in one node-parallel kernel, scores in team scratch.
//
// A team owns a run of consecutive rows (Plan::Layout::team_rows) whose scores fit the scratch:
//   1. SDDMM, warp-balanced: the team's (edge, head) pairs are spread evenly over its thread
//      groups, whatever the degrees of the rows; vector lanes reduce over features.
//   2. softmax, redundancy-free: one thread group per (row, head) finds the max, turns its
//      scores into exponentials in place and keeps 1/sum.
//   3. SpMM: one thread group per (row, head), vector lanes over features, neighbours in
//      order, reusing the exponentials from scratch.
// A row whose scores alone exceed the scratch (a super node) has a team of its own and is
// streamed in chunks with an online softmax: running max and sum per head, the partial
// output kept in `out` (owned by this team) and rescaled when the max grows.

#include "executor.hpp"

namespace dfgnn::kokkos_impl {

template <class Exec, class Score>
struct Smmf {
  using Mem = typename Exec::memory_space;
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  using scratch = Kokkos::View<float*, typename Exec::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  Problem<Mem> p;
  Score score;
  Kokkos::View<const node_t*, Mem> team_rows;
  int score_floats;  // scratch for scores; after them 3 * kMaxTeamRows * heads statistics

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const node_t r0 = team_rows(team.league_rank()), r1 = team_rows(team.league_rank() + 1);
    const edge_t e0 = p.row_ptr(r0), ne = p.row_ptr(r1) - e0;
    scratch s(team.team_scratch(0), score_floats + 3 * kMaxTeamRows * p.heads);
    if (ne * p.heads <= score_floats)
      rows(team, s, r0, r1, e0, ne);
    else
      super_row(team, s, r0, e0, ne);
  }

  KOKKOS_INLINE_FUNCTION void rows(const member& team, const scratch& s, node_t r0, node_t r1,
                                   edge_t e0, edge_t ne) const {
    const int heads = p.heads;
    // Scores of head h live at s[h * ne + i]: each (row, head) is one contiguous run.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, ne * heads), [&](edge_t k) {
      const int h = int(k / ne);
      const edge_t i = k - h * ne;
      const float x = edge_score(team, score, p, e0 + i, h);
      Kokkos::single(Kokkos::PerThread(team), [&] { s(k) = x; });
    });
    team.team_barrier();
    const int pairs = (r1 - r0) * heads;
    float* norm = s.data() + score_floats;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, pairs), [&](int k) {
      const node_t v = r0 + k / heads;
      const int h = k % heads;
      float* x = s.data() + h * ne;
      const edge_t a = p.row_ptr(v) - e0, b = p.row_ptr(v + 1) - e0;
      float m = 0.0f, sum = 0.0f;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, a, b),
          [&](edge_t i, float& mx) { mx = fmax(mx, x[i]); }, Kokkos::Max<float>(m));
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, a, b),
          [&](edge_t i, float& acc) {
            x[i] = exp(x[i] - m);
            acc += x[i];
          },
          sum);
      Kokkos::single(Kokkos::PerThread(team), [&] {
        norm[k] = b > a ? 1.0f / sum : 0.0f;
        p.record(v, h, m, sum);
      });
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, pairs), [&](int k) {
      const node_t v = r0 + k / heads;
      const int h = k % heads;
      const float* x = s.data() + h * ne;
      const edge_t a = p.row_ptr(v) - e0, b = p.row_ptr(v + 1) - e0;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, p.dim), [&](int d) {
        float acc = 0.0f;
        for (edge_t i = a; i < b; ++i)
          acc += x[i] * p.keep(e0 + i, h) * value_of(score, p.src(e0 + i), p.edge_id(e0 + i), h, d);
        p.out(v, h, d) = acc * norm[k];
      });
    });
  }

  KOKKOS_INLINE_FUNCTION void super_row(const member& team, const scratch& s, node_t v, edge_t e0,
                                        edge_t ne) const {
    const int heads = p.heads, dim = p.dim;
    const edge_t chunk = score_floats / heads;
    float* top = s.data() + score_floats;  // running max per head
    float* total = top + heads;            // running sum of exponentials per head
    float* rescale = total + heads;        // exp(old max - new max) per head
    for (edge_t c0 = 0; c0 < ne; c0 += chunk) {
      const edge_t n = ne - c0 < chunk ? ne - c0 : chunk;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * heads), [&](edge_t k) {
        const int h = int(k / n);
        const edge_t i = k - h * n;
        const float x = edge_score(team, score, p, e0 + c0 + i, h);
        Kokkos::single(Kokkos::PerThread(team), [&] { s(h * chunk + i) = x; });
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, heads), [&](int h) {
        float* x = s.data() + h * chunk;
        float m = 0.0f, part = 0.0f;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(team, n),
            [&](edge_t i, float& mx) { mx = fmax(mx, x[i]); }, Kokkos::Max<float>(m));
        if (c0 > 0) m = fmax(m, top[h]);
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(team, n),
            [&](edge_t i, float& acc) {
              x[i] = exp(x[i] - m);
              acc += x[i];
            },
            part);
        Kokkos::single(Kokkos::PerThread(team), [&] {
          rescale[h] = c0 > 0 ? exp(top[h] - m) : 0.0f;
          total[h] = (c0 > 0 ? total[h] * rescale[h] : 0.0f) + part;
          top[h] = m;
        });
      });
      team.team_barrier();
      // The whole team (threads and lanes) over (head, feature): coalesced rows of the values.
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, heads * dim), [&](int k) {
        const int h = k / dim, d = k % dim;
        const float* x = s.data() + h * chunk;
        float acc = c0 > 0 ? p.out(v, h, d) * rescale[h] : 0.0f;
        for (edge_t i = 0; i < n; ++i) {
          const edge_t e = e0 + c0 + i;
          acc += x[i] * p.keep(e, h) * value_of(score, p.src(e), p.edge_id(e), h, d);
        }
        p.out(v, h, d) = acc;
      });
      team.team_barrier();
    }
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, heads * dim), [&](int k) {
      p.out(v, k / dim, k % dim) /= total[k / dim];
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, heads), [&](int h) {
      Kokkos::single(Kokkos::PerThread(team), [&] { p.record(v, h, top[h], total[h]); });
    });
  }
};

template <class Exec, class Score>
void smmf(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
          const Score& score) {
  const auto& L = plan.layout();
  const int score_floats = L.scratch_floats - 3 * kMaxTeamRows * p.heads;
  const Smmf<Exec, Score> kernel{p, score, L.team_rows, score_floats};
  launch(exec, "dfgnn::smmf", int(L.team_rows.extent(0)) - 1, L.team_size, L.vector_length, kernel,
         std::size_t(L.scratch_floats) * sizeof(float));
}

}  // namespace dfgnn::kokkos_impl
