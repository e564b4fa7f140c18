#pragma once
// Shared device vocabulary: error checks, the shared-memory opt-in, the lane tile of one head
// row, warp reductions, fragment loads. Every kernel family builds on these.

#include "element.cuh"

#include <dfgnn/dropout.hpp>

#include <cuda_runtime.h>

#include <atomic>
#include <cfloat>
#include <cstdint>
#include <initializer_list>

namespace dfgnn::cuda::detail {

/// Throws std::runtime_error naming the call and cudaGetErrorString(e) when e != cudaSuccess.
void check(cudaError_t e, const char* what);
#define DFGNN_CUDA(call) ::dfgnn::cuda::detail::check((call), #call)

constexpr int kWarp = 32;
constexpr unsigned kFull = 0xffffffffu;

/// Raises a kernel's dynamic shared-memory limit once per size actually asked for.
template <auto Kernel>
void allow_smem(std::size_t bytes) {
  static std::atomic<std::size_t> allowed{48 * 1024};
  if (bytes <= allowed.load()) return;
  DFGNN_CUDA(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  allowed.store(bytes);
}

/// Whether every pointer allows 16-byte (float4) accesses.
inline bool aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* q : ptrs)
    if (reinterpret_cast<std::uintptr_t>(q) % 16 != 0) return false;
  return true;
}

/// Programmatic dependent launch (sm_90): the merge kernels, small and launched right after the
/// kernel whose partials they combine, cost 5-8 us each mostly in launch and first loads
/// (ncu, H100). A kernel calls allow_dependents() so that the next one, if launched by
/// launch_dependent(), may become resident while it drains; that one does its independent
/// loads, then wait_for_previous() (the previous grid finished, its writes visible). A
/// dependent that needs nothing of the previous grid still waits before it ends, so that its
/// completion implies the previous one's to whatever the stream runs next.
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_previous() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
template <class... Params, class... Args>
void launch_dependent_blocks(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                             cudaStream_t stream, Args... args) {
  cudaLaunchAttribute early{};
  early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &early;
  config.numAttrs = 1;
  DFGNN_CUDA(cudaLaunchKernelEx(&config, kernel, Params(args)...));
}
/// `threads` threads in blocks of 256.
template <class... Params, class... Args>
void launch_dependent(void (*kernel)(Params...), std::size_t threads, cudaStream_t stream, Args... args) {
  launch_dependent_blocks(kernel, dim3(unsigned((threads + 255) / 256)), dim3(256), 0, stream, args...);
}

/// How the lanes of a warp cover one head row of D elements: LANES lanes per (edge, head) pair,
/// each holding CHUNKS loads of VEC elements (16-byte loads: VEC = 4 floats or 8 two-byte
/// elements), widened to floats. A warp holds 32 / LANES pairs at once, so at small D it works
/// on several edges or heads without idle lanes.
template <int VEC_, int LANES_, int CHUNKS_>
struct Tile {
  static constexpr int VEC = VEC_;
  static constexpr int LANES = LANES_;
  static constexpr int CHUNKS = CHUNKS_;
  static constexpr int GROUPS = kWarp / LANES;
  static constexpr int PER_LANE = VEC * CHUNKS;
  static constexpr int MAX_D = VEC * LANES * CHUNKS;
};

/// Whether with_tile<true> pairs rows: on even degrees, where the unpaired tile gives a warp
/// one row: 32 lanes at 64 < D <= 128, 8 lanes x 4 heads at 16 < D <= 32 (at 1x32, four rows
/// per warp already, pairing made the backward 15-22% slower).
inline bool pair_rows(bool even, int H, int D) { return even && (D > 32 || H >= 4); }

/// Calls f(Tile{}) with the tile for head width D of elements E: lanes of kVec elements (16
/// bytes by default: 4 floats, 8 two-byte ones) when D is a multiple of kVec and the rows are
/// 16-byte aligned (`vec16`), else one element per lane. Lanes per head grow with D up to a
/// warp; larger D gives each lane several chunks. kMayPair and `pair` (pair_rows, 4-element
/// lanes): 16 lanes x 2 chunks instead of 32 x 1 at 64 < D <= 128, 4 x 2 instead of 8 x 1 at
/// 16 < D <= 32, so that a warp walks two rows at once (Online and the backward walks: faster
/// only for scalar keys on even degrees, docs/cuda.md). Two-byte elements on 8-byte lanes
/// (kVec 4) take the float tiles (the backward walks', docs/cuda.md "Element types").
template <bool kMayPair = false, class E = float, int kVec = int(16 / sizeof(E)), class F>
void with_tile(int D, bool vec16, F&& f, bool pair = false) {
  static_assert(kVec == 4 || (kVec == 8 && sizeof(E) == 2));
  if constexpr (kVec == 8) {
    if (vec16 && D % 8 == 0) {
      if (D <= 16) return f(Tile<8, 2, 1>{});
      if (D <= 32) return f(Tile<8, 4, 1>{});
      if (D <= 64) return f(Tile<8, 8, 1>{});
      if (D <= 128) return f(Tile<8, 16, 1>{});
      if (D <= 256) return f(Tile<8, 32, 1>{});
      return f(Tile<8, 32, 2>{});
    }
  } else if (vec16 && D % 4 == 0) {
    if (D <= 8) return f(Tile<4, 2, 1>{});
    if (D <= 16) return f(Tile<4, 4, 1>{});
    if (D <= 32) {
      if constexpr (kMayPair)
        if (pair) return f(Tile<4, 4, 2>{});
      return f(Tile<4, 8, 1>{});
    }
    if (D <= 64) return f(Tile<4, 16, 1>{});
    if (D <= 128) {
      if constexpr (kMayPair)
        if (pair) return f(Tile<4, 16, 2>{});
      return f(Tile<4, 32, 1>{});
    }
    if (D <= 256) return f(Tile<4, 32, 2>{});
    return f(Tile<4, 32, 4>{});
  }
  if (D <= 8) return f(Tile<1, 8, 1>{});
  if (D <= 32) return f(Tile<1, 32, 1>{});
  if (D <= 64) return f(Tile<1, 32, 2>{});
  return f(Tile<1, 32, 8>{});
}

/// A lane's slice of one head row.
template <class T>
struct Frag {
  float x[T::PER_LANE];
};

template <int LANES>
__device__ __forceinline__ float group_sum(float x) {
#pragma unroll
  for (int o = LANES / 2; o > 0; o /= 2) x += __shfl_xor_sync(kFull, x, o);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(kFull, x, o));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) { return group_sum<kWarp>(x); }

/// 2^x by one ex2 (no denormal handling: results under 2^-126 flush to 0, irrelevant in a
/// softmax sum); exp2f and __expf spend more instructions on denormals.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float fast_exp(float x) { return fast_exp2(x * 1.4426950408889634f); }

/// Online-softmax pair (running max, sum of exp(score - max)) of one lane, merged across the
/// warp; an empty pair is (-inf, 0).
__device__ __forceinline__ void warp_merge_stats(float& m, float& s) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const float m2 = __shfl_xor_sync(kFull, m, o);
    const float s2 = __shfl_xor_sync(kFull, s, o);
    const float mm = fmaxf(m, m2);
    s = (mm == -INFINITY) ? 0.f : s * __expf(m - mm) + s2 * __expf(m2 - mm);
    m = mm;
  }
}

/// Element d of lane `l` (lane inside its group), chunk c: d = (c * LANES + l) * VEC + i.
template <class T>
__device__ __forceinline__ int frag_col(int c, int l) {
  return (c * T::LANES + l) * T::VEC;
}

/// Keeps a row table's base pointer in a register: otherwise the compiler rebuilds it from the
/// kernel parameters at every load of an unrolled loop.
__device__ __forceinline__ void keep_in_register(const char*& base) { asm("" : "+l"(base)); }

/// Row r of a table of E whose rows are `stride` bytes apart: one wide multiply-add of the
/// 32-bit row and stride (the compiler otherwise widens both and multiplies in 64 bits).
template <class E = float>
__device__ __forceinline__ const E* row_at(const char* base, unsigned r, unsigned stride) {
  const char* row;
  asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(row) : "r"(r), "r"(stride), "l"(base));
  return reinterpret_cast<const E*>(row);
}

/// Loads a lane's fragment through the read-only path: chunk c at lane_row + c * LANES * VEC
/// (lane_row: the lane's first column), 0 where !in(c).
template <class T, class E, class In>
__device__ __forceinline__ void load_chunks(Frag<T>& f, const E* lane_row, In in) {
#pragma unroll
  for (int c = 0; c < T::CHUNKS; ++c) load_vec<T::VEC>(lane_row + c * T::LANES * T::VEC, in(c), f.x + T::VEC * c);
}

/// Loads a lane's slice of the head row at `row` (D elements) from global memory; columns at or
/// past D read as 0. Rows are 16-byte aligned when VEC > 1.
template <class T, class E>
__device__ __forceinline__ void load_global(Frag<T>& f, const E* __restrict__ row, int D, int l) {
  load_chunks<T>(f, row + frag_col<T>(0, l), [&](int c) { return frag_col<T>(c, l) < D; });
}

/// Same from shared memory (staged features).
template <class T>
__device__ __forceinline__ void load_shared(Frag<T>& f, const float* row, int D, int l) {
#pragma unroll
  for (int c = 0; c < T::CHUNKS; ++c) {
    const int d = frag_col<T>(c, l);
    if constexpr (T::VEC == 4) {
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (d < D) v = *reinterpret_cast<const float4*>(row + d);
      f.x[4 * c] = v.x, f.x[4 * c + 1] = v.y, f.x[4 * c + 2] = v.z, f.x[4 * c + 3] = v.w;
    } else {
      f.x[c] = d < D ? row[d] : 0.f;
    }
  }
}

template <class T, class E>
__device__ __forceinline__ void store_row(E* row, const Frag<T>& f, int D, int l) {
#pragma unroll
  for (int c = 0; c < T::CHUNKS; ++c) {
    const int d = frag_col<T>(c, l);
    if (d < D) store_vec<T::VEC>(row + d, f.x + T::VEC * c);
  }
}

/// Which (edge slot, head) pair a lane group holds while a warp works on `pass` of a row:
/// a pass covers `hp` consecutive heads, and the warp's GROUPS groups take ep = GROUPS / hp
/// edges at once. Groups past ep * hp, and heads past H, sit the pass out.
template <class T>
struct Slot {
  int lane;    ///< lane in the warp
  int l;       ///< lane inside the group
  int edge;    ///< edge offset within the warp's step, in [0, ep)
  int head;    ///< head of this group
  int ep;      ///< edges a warp step covers
  bool active;

  __device__ Slot(int lane_, int H, int pass) {
    const int lane = lane_;
    const int hp = H < T::GROUPS ? H : T::GROUPS;
    const int g = lane / T::LANES;
    this->lane = lane;
    l = lane % T::LANES;
    ep = T::GROUPS / hp;
    edge = g / hp;
    head = pass * hp + g % hp;
    active = edge < ep && head < H;
  }
  /// Lanes between two groups that hold the same head on consecutive edge slots.
  __device__ int edge_stride(int H) const { return (H < T::GROUPS ? H : T::GROUPS) * T::LANES; }
};

__host__ __device__ inline int head_passes(int H, int groups) {
  const int hp = H < groups ? H : groups;
  return (H + hp - 1) / hp;
}

/// The caller's edge id of walk position e: ids[e], or e itself where the plan keeps no ids
/// because the caller's edges are in CSR order (DeviceGraph::edge_id, docs/cuda.md "Device memory").
__device__ __forceinline__ edge_t caller_edge(const edge_t* ids, edge_t e) { return ids ? __ldg(ids + e) : e; }

/// Optional per-edge multipliers of element type E in the caller's edge order; `data ==
/// nullptr` means none.
template <class E>
struct EdgeScaleOf {
  const E* data = nullptr;
  const edge_t* edge_id = nullptr;
  int heads = 0;  ///< 1 or H
  __device__ __forceinline__ float operator()(edge_t e, int h) const {
    if (data == nullptr) return 1.f;
    return load_one(data + caller_edge(edge_id, e) * heads + (heads == 1 ? 0 : h));
  }
};
using EdgeScale = EdgeScaleOf<float>;

/// Training mode: the per-row statistic logsumexp = max + log(sum) [N,H] (0 for a row without
/// edges; null: inference) and attention dropout, whose factor multiplies each probability in
/// the accumulator but not in the softmax sum.
struct Train {
  float* lse = nullptr;
  const edge_t* edge_id = nullptr;  ///< CSR position -> caller's edge index, the dropout counter
  Dropout dropout;
  /// The dropout factor of CSR edge e, head h. Kernels whose inner loop takes it are compiled
  /// twice (with_dropout): kDrop = false removes the hash from the inference loop.
  template <bool kDrop = true>
  __device__ __forceinline__ float keep(edge_t e, int h) const {
    if constexpr (!kDrop) return 1.f;
    return dropout.rate > 0.f ? dropout.factor(caller_edge(edge_id, e), h) : 1.f;
  }
  __device__ __forceinline__ void store(node_t v, int h, int H, float m, float s) const {
    if (lse != nullptr) lse[std::size_t(v) * H + h] = s > 0.f ? m + logf(s) : 0.f;
  }
};

/// Partial (max, sum, unnormalised accumulator) of the pieces of split rows, in workspace;
/// the merge kernel combines the pieces of each row.
struct Partials {
  float* max = nullptr;  ///< [slots, H]
  float* sum = nullptr;  ///< [slots, H]
  float* acc = nullptr;  ///< [slots, H, D]
};

/// Ends every row: a whole row (slot < 0) goes to out as acc / sum (0 for a row without
/// edges) with its logsumexp; a piece of a split row goes to its partial slot with its (max, sum).
template <class T, class E>
__device__ __forceinline__ void finish_row(const Frag<T>& acc, float m, float s, int slot, node_t v,
                                           int h, int H, int D, int l, E* __restrict__ out,
                                           const Partials& part, const Train& tr) {
  if (slot < 0) {
    const float scale = s > 0.f ? 1.f / s : 0.f;
    if (l == 0) tr.store(v, h, H, m, s);
    Frag<T> r;
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) r.x[i] = acc.x[i] * scale;
    store_row<T>(out + (std::size_t(v) * H + h) * D, r, D, l);
  } else {  // partials stay float whatever E is
    if (l == 0) part.max[std::size_t(slot) * H + h] = m, part.sum[std::size_t(slot) * H + h] = s;
    store_row<T>(part.acc + (std::size_t(slot) * H + h) * D, acc, D, l);
  }
}

}  // namespace dfgnn::cuda::detail
