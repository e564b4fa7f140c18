#pragma once
// SMMF: one node-parallel kernel. A block takes a run of consecutive rows whose edges fit in
// shared memory (or one piece of a split super row) and runs the three steps on them:
//   1. SDDMM over the block's (edge, head) items, balanced over all its lane groups, scores
//      into shared memory [H][edges];
//   2. softmax, one warp per (row, head): the row max, then the exponentials (times the
//      dropout factor) written back over the scores and their sum (no score is recomputed);
//   3. SpMM, one warp per row with 16-byte gathers weighted by the stored exponentials; a
//      "wide" block (a single heavy row) splits its edges over all warps and sums their
//      accumulators in a fixed order through shared memory.
// A piece of a split row writes (max, sum, accumulator) to its partial slot for merge.cuh.

#include "steps.cuh"

namespace dfgnn::cuda::detail {

/// The work of one SMMF block.
struct SmmfBlock {
  edge_t e0, e1;   ///< the block's edges
  node_t r0, r1;   ///< its rows (r1 = r0 + 1 for a wide block)
  int slot;        ///< partial slot of a split-row piece, -1 for whole rows
  int wide;        ///< 1: one row, every warp takes a slice of its edges
};

/// Floats of dynamic shared memory a block needs (scores, per-row stats, wide accumulators).
__host__ __device__ inline std::size_t smmf_smem_floats(std::int64_t edges, int rows, int H, int D,
                                                         bool wide, int warps) {
  const std::size_t head = (std::size_t(edges) * H + 2 * std::size_t(rows) * H + 3) / 4 * 4;
  return head + (wide ? std::size_t(warps) * H * D : 0);
}

/// Four blocks per SM: the register cap keeps enough warps resident to cover the gathers.
template <class S, class T, int NW>
__global__ void __launch_bounds__(NW * kWarp, 4)
    smmf_kernel(S sc, DeviceGraph g, EdgeScale w, Train tr, const SmmfBlock* __restrict__ blocks, int H, int D,
                float* __restrict__ out, Partials part) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const SmmfBlock b = blocks[blockIdx.x];
  const int n = int(b.e1 - b.e0);
  const int rows = b.r1 - b.r0;
  float* p = smem;               // [H][n]
  float* rmax = p + H * n;       // [rows][H]
  float* rsum = rmax + rows * H;  // [rows][H]
  float* wacc = smem + smmf_smem_floats(n, rows, H, D, false, 0);  // [NW][H][D]
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;

  using ST = ScoreTile<S, T>;
  sddmm_items<ST>(sc, g, w, b.e0, std::int64_t(n) * H, H, D, warp * ST::GROUPS + lane / ST::LANES,
                  NW * ST::GROUPS, lane % ST::LANES,
                  [&](std::int64_t, edge_t e, int h, float s) { p[h * n + int(e - b.e0)] = s; });
  __syncthreads();

  auto row_range = [&](int r, int& a, int& e) {
    a = int(max(__ldg(g.row_ptr + b.r0 + r), b.e0) - b.e0);
    e = int(min(__ldg(g.row_ptr + b.r0 + r + 1), b.e1) - b.e0);
  };
  for (int j = warp; j < rows * H; j += NW) {
    int a, e;
    row_range(j / H, a, e);
    float* ph = p + (j % H) * n;
    float m = -INFINITY;
    for (int i = a + lane; i < e; i += kWarp) m = fmaxf(m, ph[i]);
    m = warp_max(m);
    float s = 0.f;
    for (int i = a + lane; i < e; i += kWarp) {
      const float x = __expf(ph[i] - m);
      ph[i] = x * tr.keep(b.e0 + i, j % H);
      s += x;
    }
    s = warp_sum(s);
    if (lane == 0) rmax[j] = m, rsum[j] = s;
  }
  __syncthreads();

  const int passes = head_passes(H, T::GROUPS);
  auto weight = [&](edge_t e, int h) { return p[h * n + int(e - b.e0)]; };
  if (!b.wide) {
    for (int j = warp; j < rows * passes; j += NW) {
      const int r = j / passes;
      const Slot<T> sl(lane, H, j % passes);
      int a, e;
      row_range(r, a, e);
      const Frag<T> acc = gather_rows<T>(sc.value, g.src, b.e0 + a, b.e0 + e, H, D, sl, weight);
      if (sl.active && sl.edge == 0) {
        const int k = r * H + sl.head;
        finish_row<T>(acc, rmax[k], rsum[k], b.slot, b.r0 + r, sl.head, H, D, sl.l, out, part, tr);
      }
    }
    return;
  }
  // Wide block: warp w gathers its slice of the row for every head, then the block adds the
  // NW partial sums in warp order.
  const edge_t a = b.e0 + edge_t(n) * warp / NW, e = b.e0 + edge_t(n) * (warp + 1) / NW;
  for (int pass = 0; pass < passes; ++pass) {
    const Slot<T> sl(lane, H, pass);
    const Frag<T> acc = gather_rows<T>(sc.value, g.src, a, e, H, D, sl, weight);
    if (sl.active && sl.edge == 0) store_row<T>(wacc + (std::size_t(warp) * H + sl.head) * D, acc, D, sl.l);
  }
  __syncthreads();
  const std::size_t W = std::size_t(H) * D;
  for (std::size_t k = threadIdx.x; k < W; k += NW * kWarp) {
    float x = 0.f;
#pragma unroll 4
    for (int i = 0; i < NW; ++i) x += wacc[i * W + k];
    const int h = int(k / D);
    if (b.slot < 0) {
      out[std::size_t(b.r0) * W + k] = rsum[h] > 0.f ? x / rsum[h] : 0.f;
      if (k % D == 0) tr.store(b.r0, h, H, rmax[h], rsum[h]);
    } else {
      part.acc[std::size_t(b.slot) * W + k] = x;
      if (k % D == 0) part.max[std::size_t(b.slot) * H + h] = rmax[h], part.sum[std::size_t(b.slot) * H + h] = rsum[h];
    }
  }
}

}  // namespace dfgnn::cuda::detail
