#pragma once
// Unfused baseline (as DGL's sparse ops run it): SDDMM, edge softmax and SpMM as three
// kernels, probabilities materialised in global memory between them.

#include "sddmm.hpp"

namespace dfgnn::kokkos_impl {

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
      for (edge_t e = a; e < b; ++e) acc += probs(e * p.heads + h) * p.keep(e, h) * score.value(p.src(e), h, d);
      p.out(v, h, d) = acc;
    });
  }
};

template <class Exec, class Score>
void unfused(const Exec& exec, const Plan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
             const Score& score) {
  edge_scores(exec, plan, p, score);
  const auto& L = plan.layout();
  launch_rows(exec, "dfgnn::edge_softmax", plan, Normalize<Exec>{p, L.scores});
  launch_rows(exec, "dfgnn::spmm", plan, Aggregate<Exec, Score>{p, score, L.scores});
}

}  // namespace dfgnn::kokkos_impl
