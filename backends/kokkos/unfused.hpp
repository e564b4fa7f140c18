#pragma once
// Unfused baseline (as DGL's sparse ops run it): SDDMM, edge softmax and SpMM as three
// kernels, probabilities materialised in global memory between them.

#include "rowwise.hpp"
#include "sddmm.hpp"

namespace dfgnn::kokkos_impl {

template <class Exec, class Score>
void unfused(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
             const Score& score) {
  edge_scores(exec, plan, p, score);
  const auto& L = plan.layout();
  launch_rows(exec, "dfgnn::edge_softmax", plan, Normalize<Exec>{p, L.scores});
  launch_rows(exec, "dfgnn::spmm", plan, Aggregate<Exec, Score>{p, score, L.scores});
}

}  // namespace dfgnn::kokkos_impl
