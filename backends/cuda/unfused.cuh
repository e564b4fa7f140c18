#pragma once
// The unfused baseline after sddmm_kernel: a softmax kernel that turns the scores into
// probabilities in place (one warp per (row, head)) and an SpMM kernel (one warp per row).

#include "steps.cuh"

namespace dfgnn::cuda::detail {

/// Launches the softmax over each row's scores [E, H]: the probabilities (times the dropout
/// factor) in place, and each row's logsumexp when tr.lse is set (defined in unfused.cu).
void launch_softmax(cudaStream_t stream, const DeviceGraph& g, int H, float* scores, const Train& tr);

template <class S, class T>
__global__ void __launch_bounds__(256) spmm_kernel(S sc, DeviceGraph g, const float* __restrict__ prob,
                                                   int H, int D, float* __restrict__ out) {
  const int passes = head_passes(H, T::GROUPS);
  const std::int64_t item = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  if (item >= std::int64_t(g.num_nodes) * passes) return;
  const node_t v = node_t(item / passes);
  const Slot<T> sl(threadIdx.x % kWarp, H, int(item % passes));
  const Frag<T> acc = gather_rows<T>(sc.value, g.src, __ldg(g.row_ptr + v), __ldg(g.row_ptr + v + 1), H, D,
                                     sl, [&](edge_t e, int h) { return __ldg(prob + e * H + h); });
  if (sl.active && sl.edge == 0) finish_row<T>(acc, 0.f, 1.f, -1, v, sl.head, H, D, sl.l, out, {}, Train{});
}

}  // namespace dfgnn::cuda::detail
