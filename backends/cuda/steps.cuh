#pragma once
// The three steps as warp-level building blocks, shared by the SMMF, PMF and unfused kernels:
// SDDMM over a range of (edge, head) items, softmax statistics of a row, and the gathering
// SpMM of a row piece. Shared memory or global memory only differs in the functors passed.

#include "score.cuh"

#include <dfgnn/cuda.hpp>

namespace dfgnn::cuda::detail {

/// Item i, or the last one for a group past the end (it redoes valid work and stores nothing).
__device__ __forceinline__ std::int64_t last_valid(std::int64_t i, std::int64_t items) {
  return i < items ? i : items - 1;
}

/// Scores of items i in [0, items), item i being (edge e_base + i / H, head i % H), spread over
/// `groups` lane groups of tile ST (group `group` of them takes every groups-th item); calls
/// store(i, e, h, score) once per item. U items per group are in flight, and the next step's
/// edge ends are fetched while this step's rows load. All lanes of a warp run the same
/// number of iterations, so the groups' shuffles stay converged.
template <class ST, class S, class W, class Store>
__device__ __forceinline__ void sddmm_items(const S& sc, const DeviceGraph& g, const W& w,
                                            edge_t e_base, std::int64_t items, int H, int D,
                                            std::int64_t group, std::int64_t groups, int l, Store store) {
  constexpr int U = ST::PER_LANE >= 8 ? 2 : 4;
  const int KW = key_width<S>(D);
  const std::int64_t first = group - group % ST::GROUPS;  // the warp's first group
  const int offset = int(group % ST::GROUPS);
  node_t us[U], vs[U];
  auto fetch = [&](std::int64_t base) {
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const std::int64_t i = last_valid(base + j * groups + offset, items);
      const edge_t e = e_base + i / H;
      us[j] = __ldg(g.src + e), vs[j] = __ldg(g.dst + e);
    }
  };
  if (first < items) fetch(first);
  for (std::int64_t base = first; base < items; base += U * groups) {
    typename S::template Query<ST> q[U];
    Frag<ST> k[U];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const std::int64_t i = last_valid(base + j * groups + offset, items);
      const int h = int(i % H);
      q[j] = sc.template query<ST>(vs[j], h, H, D, l);
      sc.template load_key<ST, false>(k[j], sc.key + (std::size_t(us[j]) * H + h) * KW, D, l);
      if constexpr (kHasEdge<S>) {
        if (sc.edge != nullptr) {
          const edge_t id = caller_edge(g.edge_id, e_base + i / H);
          if constexpr (S::kRowKey)
            add_edge_row(k[j], sc.edge, sc.edge_layout, id, h, D, l);
          else
            add_edge_scalar(k[j], sc.edge, id, h, H);
        }
      }
    }
    fetch(base + U * groups);
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const float s = eval(sc, q[j], k[j]);
      const std::int64_t i = base + j * groups + offset;
      if (i < items && l == 0) {
        const edge_t e = e_base + i / H;
        const int h = int(i % H);
        store(i, e, h, s * w(e, h));
      }
    }
  }
}

/// Online (max, sum of exp) of scores[e * stride + h] over e in [a, b), merged over the warp.
template <class Score>
__device__ __forceinline__ void row_stats(Score score, edge_t a, edge_t b, int lane, float& m, float& s) {
  m = -INFINITY;
  s = 0.f;
  for (edge_t e = a + lane; e < b; e += kWarp) {
    const float x = score(e);
    if (x > m) {
      s = s * __expf(m - x) + 1.f;
      m = x;
    } else {
      s += __expf(x - m);
    }
  }
  warp_merge_stats(m, s);
}

/// Sums the accumulators of the groups holding the same head on different edge slots into
/// the group on slot 0 (a fixed tree: the result does not depend on timing).
template <class T>
__device__ __forceinline__ void sum_edge_slots(Frag<T>& acc, const Slot<T>& sl, int H) {
  const int stride = sl.edge_stride(H);
  for (int o = 1; o < sl.ep; o *= 2) {
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) {
      const float x = __shfl_down_sync(kFull, acc.x[i], o * stride);
      if (sl.edge % (2 * o) == 0 && sl.edge + o < sl.ep) acc.x[i] += x;
    }
  }
}

/// Merges the online-softmax states (max m, sum s, accumulator) of the ep groups holding the
/// same head on consecutive edge slots (`edge` in [0, ep), `stride` lanes apart) into the group
/// on slot 0, in a fixed tree.
template <class T>
__device__ __forceinline__ void merge_edge_slots(float& m, float& s, Frag<T>& acc, int edge, int ep, int stride) {
  for (int o = 1; o < ep; o *= 2) {
    const float m2 = __shfl_down_sync(kFull, m, o * stride);
    const float s2 = __shfl_down_sync(kFull, s, o * stride);
    const bool take = edge % (2 * o) == 0 && edge + o < ep;
    const float mm = fmaxf(m, m2);
    const float c1 = mm == -INFINITY ? 0.f : __expf(m - mm), c2 = mm == -INFINITY ? 0.f : __expf(m2 - mm);
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) {
      const float a2 = __shfl_down_sync(kFull, acc.x[i], o * stride);
      if (take) acc.x[i] = acc.x[i] * c1 + a2 * c2;
    }
    if (take) s = s * c1 + s2 * c2, m = mm;
  }
}

/// Source ids of a warp's edges, 32 at a time: one coalesced load per 32 edges, prefetched a
/// chunk ahead, handed to the lanes by shuffles.
class SourceStream {
 public:
  __device__ SourceStream(const node_t* __restrict__ src, edge_t a, edge_t b, int lane)
      : src_(src), b_(b), lane_(lane), next_(load(a)) {}
  /// Moves to the chunk at c (the previous chunk + 32) and prefetches the one after.
  __device__ void advance(edge_t c) {
    cur_ = next_;
    next_ = load(c + kWarp);
  }
  /// Source of edge c + i of the current chunk (every lane must call).
  __device__ node_t operator[](int i) const { return __shfl_sync(kFull, cur_, i & (kWarp - 1)); }

 private:
  __device__ node_t load(edge_t c) const { return c + lane_ < b_ ? __ldg(src_ + c + lane_) : 0; }
  const node_t* src_;
  edge_t b_;
  int lane_;
  node_t cur_ = 0, next_;
};

/// sum over e in [a, b) of weight(e, head) * value[src[e], head, :] for the lane group's head;
/// the warp takes ep edges per step and U steps at once (U * CHUNKS 16-byte loads in flight
/// per lane). The complete sum ends in the groups on edge slot 0.
template <class T, class Weight>
__device__ __forceinline__ Frag<T> gather_rows(const float* __restrict__ value,
                                               const node_t* __restrict__ src, edge_t a, edge_t b,
                                               int H, int D, const Slot<T>& sl, Weight weight) {
  constexpr int U = T::CHUNKS >= 4 ? 2 : 8 / T::CHUNKS;
  Frag<T> acc;
#pragma unroll
  for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = 0.f;
  const std::size_t row = std::size_t(H) * D;
  SourceStream sources(src, a, b, sl.lane);
  for (edge_t c = a; c < b; c += kWarp) {
    sources.advance(c);
    const int n = int(b - c < kWarp ? b - c : kWarp);
    for (int k = 0; k < n; k += sl.ep * U) {
      Frag<T> f[U];
      float p[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = k + u * sl.ep + sl.edge;
        const node_t s = sources[i];
        p[u] = 0.f;
        if (sl.active && i < n) {
          p[u] = weight(c + i, sl.head);
          load_global<T>(f[u], value + s * row + std::size_t(sl.head) * D, D, sl.l);
        } else {
#pragma unroll
          for (int x = 0; x < T::PER_LANE; ++x) f[u].x[x] = 0.f;
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int x = 0; x < T::PER_LANE; ++x) acc.x[x] = fmaf(p[u], f[u].x[x], acc.x[x]);
    }
  }
  sum_edge_slots<T>(acc, sl, H);
  return acc;
}

}  // namespace dfgnn::cuda::detail
