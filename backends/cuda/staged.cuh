#pragma once
// Staged: batched (block-diagonal) graphs. A block takes one small graph, copies its nodes'
// key rows and value rows into shared memory once (16-byte copies), then each warp runs the
// fused online softmax over its rows: the destination's query stays in registers and every
// edge reads its source's key and value from shared memory instead of global memory.

#include "steps.cuh"

namespace dfgnn::cuda::detail {

/// Floats of shared memory per node a block stages: the key (D or 1 per head) and, unless the
/// values are the key rows, the value row.
template <class S>
__host__ __device__ inline std::size_t staged_floats_per_node(int H, int D) {
  const std::size_t key = (std::size_t(H) * key_width<S>(D) + 3) / 4 * 4;
  return key + (S::kValueIsKey ? 0 : std::size_t(H) * D);
}

template <class T>
__device__ __forceinline__ void copy_rows(float* dst, const float* __restrict__ src, std::size_t n) {
  std::size_t done = 0;
  if constexpr (T::VEC == 4) {
    for (std::size_t i = threadIdx.x; i < n / 4; i += blockDim.x)
      reinterpret_cast<float4*>(dst)[i] = __ldg(reinterpret_cast<const float4*>(src) + i);
    done = n / 4 * 4;
  }
  for (std::size_t i = done + threadIdx.x; i < n; i += blockDim.x) dst[i] = __ldg(src + i);
}

/// Warps of a Staged block: a full SM's worth when the tile leaves room in the registers, since
/// a large graph's block may be alone on its SM.
template <class T>
inline constexpr int kStagedWarps = T::PER_LANE <= 4 ? 32 : 16;

template <class S, class T, bool kDrop, int NW = kStagedWarps<T>>
__global__ void __launch_bounds__(NW * kWarp, 1)
    staged_kernel(S sc, DeviceGraph g, EdgeScale w, Train tr, const node_t* __restrict__ graph_ptr, int H, int D,
                  float* __restrict__ out) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const node_t n0 = graph_ptr[blockIdx.x], n1 = graph_ptr[blockIdx.x + 1];
  const int nodes = n1 - n0;
  const int KW = key_width<S>(D);
  const std::size_t key_row = std::size_t(H) * KW;
  const std::size_t key_floats = (std::size_t(nodes) * key_row + 3) / 4 * 4;
  float* keys = smem;
  const float* values = S::kValueIsKey ? keys : keys + key_floats;
  // A scalar key (GAT) of a graph starting at an odd offset is not 16-byte aligned.
  if (S::kRowKey || (std::size_t(n0) * key_row) % 4 == 0)
    copy_rows<T>(keys, sc.key + std::size_t(n0) * key_row, std::size_t(nodes) * key_row);
  else
    copy_rows<Tile<1, 1, 1>>(keys, sc.key + std::size_t(n0) * key_row, std::size_t(nodes) * key_row);
  if (!S::kValueIsKey)
    copy_rows<T>(keys + key_floats, sc.value + std::size_t(n0) * H * D, std::size_t(nodes) * H * D);
  __syncthreads();

  constexpr int U = 4;  // edge steps in flight
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int passes = head_passes(H, T::GROUPS);
  for (int j = warp; j < nodes * passes; j += NW) {
    const node_t v = n0 + j / passes;
    const Slot<T> sl(lane, H, j % passes);
    const int h = sl.head < H ? sl.head : H - 1;  // idle groups shadow a valid head
    const auto q = sc.template query<T>(v, h, H, D, sl.l);
    const edge_t a = __ldg(g.row_ptr + v), b = __ldg(g.row_ptr + v + 1);
    float m = -INFINITY, s = 0.f;
    Frag<T> acc;
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = 0.f;
    SourceStream sources(g.src, a, b, lane);
    for (edge_t c = a; c < b; c += kWarp) {
      sources.advance(c);
      const int n = int(b - c < kWarp ? b - c : kWarp);
      for (int k0 = 0; k0 < n; k0 += sl.ep * U) {
        float x[U];
        int u[U];
#pragma unroll
        for (int k = 0; k < U; ++k) {
          const int i = k0 + k * sl.ep + sl.edge;
          const bool ok = sl.active && i < n;
          u[k] = sources[ok ? i : 0] - n0;
          Frag<T> kf;
          sc.template load_key<T, true>(kf, keys + u[k] * key_row + std::size_t(h) * KW, D, sl.l);
          x[k] = eval(sc, q, kf);  // every lane: it shuffles
          x[k] = ok ? x[k] * w(c + i, h) : -INFINITY;
        }
        float mx = m;
#pragma unroll
        for (int k = 0; k < U; ++k) mx = fmaxf(mx, x[k]);
        if (mx == -INFINITY) continue;  // nothing valid yet for this group
        const float r = __expf(m - mx);
        s *= r;
#pragma unroll
        for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] *= r;
#pragma unroll
        for (int k = 0; k < U; ++k) {
          const float p = x[k] == -INFINITY ? 0.f : __expf(x[k] - mx);
          s += p;
          const float pd = x[k] == -INFINITY ? 0.f : p * tr.keep<kDrop>(c + k0 + k * sl.ep + sl.edge, h);
          Frag<T> vf;
          load_shared<T>(vf, values + std::size_t(u[k]) * H * D + std::size_t(h) * D, D, sl.l);
#pragma unroll
          for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = fmaf(pd, vf.x[i], acc.x[i]);
        }
        m = mx;
      }
    }
    merge_edge_slots<T>(m, s, acc, sl.edge, sl.ep, sl.edge_stride(H));
    if (sl.active && sl.edge == 0) finish_row<T>(acc, m, s, -1, v, h, H, D, sl.l, out, {}, tr);
  }
}

}  // namespace dfgnn::cuda::detail
