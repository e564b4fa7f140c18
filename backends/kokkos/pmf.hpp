#pragma once
// PMF: edge-parallel SDDMM to global memory, then one node-parallel kernel fusing softmax and
// SpMM. No scratch, so any degree runs; Auto picks it when the heaviest row's scores would not
// fit a team's scratch and the score is worth computing once per edge (GT, AGNN).

#include "rowwise.hpp"
#include "sddmm.hpp"

namespace dfgnn::kokkos_impl {

// The unfused softmax and SpMM steps back to back in one thread group: the probabilities it
// writes are its own row's, so no team barrier (and no second launch) is needed.
template <class Exec, class Score>
struct SoftmaxAggregate {
  Normalize<Exec> softmax;
  Aggregate<Exec, Score> spmm;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, node_t v, int h) const {
    softmax(team, v, h);
    spmm(team, v, h);
  }
};

template <class Exec, class Score>
void pmf(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
         const Score& score) {
  edge_scores(exec, plan, p, score);
  const auto& scores = plan.layout().scores;
  launch_rows(exec, "dfgnn::pmf_softmax_spmm", plan,
              SoftmaxAggregate<Exec, Score>{{p, scores}, {p, score, scores}});
}

}  // namespace dfgnn::kokkos_impl
