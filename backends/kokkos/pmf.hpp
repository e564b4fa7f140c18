#pragma once
// PMF: edge-parallel SDDMM to global memory, then one node-parallel kernel fusing softmax and
// SpMM. No scratch, so any degree runs; Auto picks it when the heaviest row's scores would not
// fit a team's scratch and the score is worth computing once per edge (GT, AGNN).

#include "sddmm.hpp"

namespace dfgnn::kokkos_impl {

// One thread group per (row, head): statistics over the row's scores, then vector lanes over
// features. Each lane recomputes the exponential of the (broadcast) score it reads, which
// costs less than a pass writing the exponentials back to global memory.
template <class Exec, class Score>
struct SoftmaxAggregate {
  Problem<typename Exec::memory_space> p;
  Score score;
  Kokkos::View<const float*, typename Exec::memory_space> scores;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, node_t v, int h) const {
    const edge_t a = p.row_ptr(v), b = p.row_ptr(v + 1);
    float m = 0.0f, sum = 0.0f;
    if (b > a) softmax_stats(team, scores, a, b, h, p.heads, m, sum);
    const float norm = b > a ? 1.0f / sum : 0.0f;
    Kokkos::single(Kokkos::PerThread(team), [&] { p.record(v, h, m, sum); });
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, p.dim), [&](int d) {
      float acc = 0.0f;
      for (edge_t e = a; e < b; ++e)
        acc += exp(scores(e * p.heads + h) - m) * p.keep(e, h) * score.value(p.src(e), h, d);
      p.out(v, h, d) = acc * norm;
    });
  }
};

template <class Exec, class Score>
void pmf(const Exec& exec, const Plan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
         const Score& score) {
  edge_scores(exec, plan, p, score);
  launch_rows(exec, "dfgnn::pmf_softmax_spmm", plan,
              SoftmaxAggregate<Exec, Score>{p, score, plan.layout().scores});
}

}  // namespace dfgnn::kokkos_impl
