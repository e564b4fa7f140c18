#pragma once
// PMF: edge-parallel SDDMM to global memory, then one node-parallel kernel fusing softmax and
// SpMM. No scratch, so any degree runs; Auto picks it when the heaviest row's scores would not
// fit a team's scratch and the score is worth computing once per edge (GT, AGNN).

#include "rowwise.hpp"
#include "sddmm.hpp"

namespace dfgnn::kokkos_impl {

template <class Exec, class Score>
void pmf(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
         const Score& score) {
  edge_scores(exec, plan, p, score);
  const auto& scores = plan.layout().scores;
  // The unfused softmax and SpMM steps in one launch: each (row, head)'s lanes over features
  // read the probabilities that the group's lanes over edges wrote, so the two run as Phases,
  // a team barrier between them (no second launch).
  launch_rows(exec, "dfgnn::pmf_softmax_spmm", plan,
              Phases<Normalize<Exec>, Aggregate<Exec, Score>>{{p, scores}, {p, score, scores}});
}

}  // namespace dfgnn::kokkos_impl
