#pragma once
// PMF's second kernel: softmax fused with the SpMM, one warp per row (or per piece of a split
// row, listed after the rows), reading the scores that sddmm_kernel wrote. The warp first
// takes each head's (max, sum) in one online pass, then gathers the values weighted by
// exp(score - max), so the probabilities never go to memory.

#include "merge.cuh"
#include "steps.cuh"

namespace dfgnn::cuda::detail {

template <class S, class T, bool kDrop>
__global__ void __launch_bounds__(256)
    pmf_kernel(S sc, DeviceGraph g, Train tr, const float* __restrict__ scores, int H, int D, edge_t split,
               const Piece* __restrict__ pieces, int num_pieces, float* __restrict__ out, Partials part) {
  const int passes = head_passes(H, T::GROUPS);
  const std::int64_t item = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  if (item >= (std::int64_t(g.num_nodes) + num_pieces) * passes) return;
  const int lane = threadIdx.x % kWarp;
  const std::int64_t unit = item / passes;
  const int pass = int(item % passes);
  edge_t a, b;
  node_t v;
  int slot = -1;
  if (unit < g.num_nodes) {
    v = node_t(unit);
    a = __ldg(g.row_ptr + v), b = __ldg(g.row_ptr + v + 1);
    if (b - a > split) return;  // its pieces do it
  } else {
    const Piece pc = pieces[unit - g.num_nodes];
    a = pc.e0, b = pc.e1, v = pc.row, slot = pc.slot;
  }
  const Slot<T> sl(lane, H, pass);
  float m = -INFINITY, s = 0.f;
  const int hp = H < T::GROUPS ? H : T::GROUPS;
  for (int j = 0; j < hp && pass * hp + j < H; ++j) {
    const int h = pass * hp + j;
    float mh, sh;
    row_stats([&](edge_t e) { return __ldg(scores + e * H + h); }, a, b, lane, mh, sh);
    if (sl.head == h) m = mh, s = sh;
  }
  const Frag<T> acc = gather_rows<T>(sc.value, g.src, a, b, H, D, sl,
                                     [&](edge_t e, int h) { return __expf(__ldg(scores + e * H + h) - m) * tr.keep<kDrop>(e, h); });
  if (sl.active && sl.edge == 0) finish_row<T>(acc, m, s, slot, v, sl.head, H, D, sl.l, out, part, tr);
}

}  // namespace dfgnn::cuda::detail
