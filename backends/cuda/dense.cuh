#pragma once
// Dense (GT, AGNN, GAT): batched small graphs computed like attention on a dense block, on
// tensor cores. A block takes one graph of n <= 16 * WARPS nodes; warp w owns destination rows
// 16w..16w+15. The scores of all (row, node) pairs: GT's scale * Q K^T and AGNN's cosine (X
// times X with its staged rows scaled to unit norm, times beta / |X_v|) with mma.sync m16n8k8
// TF32, GAT's LeakyReLU(el[u] + er[v]) from the two vectors; masked by the graph's adjacency
// bitmask, row softmax in registers, O = P V with mma.sync, written out. Every K and V row is
// read from shared memory by all warps at once through tensor-core fragments instead of once
// per edge, and the 41%-dense PATTERN graphs waste less than they reuse.
//
// Accuracy: each fp32 operand is split as x = hi + lo (hi = x truncated to tf32, lo = x - hi)
// and a*b = hi_a*hi_b (a tf32 MMA) + x_a*lo_b + lo_a*hi_b (one bf16 MMA over both cross terms,
// SplitFrag): max relative error 1.3-1.4e-6 against float64 on the benchmark batches (plain
// TF32: 8e-4), as with three tf32 MMAs (which were 1-2.5% slower).
//
// Two-byte elements (bf16, f16): staged as they are, multiplied by native m16n8k16 MMAs (exact
// products, fp32 sums); P is normalised and split into hi + lo of the type for P V
// (split_pair), so out is one rounding of a float32-accurate result (docs/cuda.md, "Dense").
//
// Buckets: graphs of n <= 64, 128, 192 nodes run in kernels of 4, 8, 12 warps (one launch
// each, largest graphs first; each later bucket a programmatic dependent of the one before, so
// that it fills the SMs the earlier one's last blocks leave idle). Needs D % 32 == 0 and
// 16-byte aligned tensors (else the plan's Online data runs, attention.cuh). GAT at D = 32 walks
// the keys in chunks with an online softmax, for more blocks per SM (dense_chunked).
//
// Duplicate edges: a (row, key) pair stands for all its edges; graphs that have any carry a
// rank table (`first`), and the pair's probability is weighted by its multiplicity. Edge values
// and dropout need each edge's CSR position: the pair's rank among its row's edges in source
// order (mask bits below it, or `first`) indexes `order`, the row's edges sorted by source. That
// edge-wise softmax is a second instantiation, so inference keeps the plain loop.
//
// Index permutations (no shuffles, 16-byte loads everywhere): a contraction index can be
// permuted freely as long as A and B agree. S: k-steps 2b, 2b+1 of lane (g, t) take d = 16b+4t
// +{0,1} and +{2,3}, so Q and K fragments are one float4 each. PV: the S accumulator's columns
// (2t, 2t+1) become A's k = t, t+4, so P is used in place; V's output columns of n-tile i of a
// 32-column chunk are 4g + i, so one float4 of V feeds 4 MMAs and each lane writes 8
// consecutive outputs of a row.

#include "score.cuh"

#include <dfgnn/op.hpp>

#include <cstdint>

namespace dfgnn::cuda::detail {

// ---------------------------------------------------------------------------------------------
// Tensor-core helpers

__device__ __forceinline__ void mma_tf32(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Two floats as one bf16x2 register (rounded to nearest): `low` in the bits an MMA reads as
/// the lower k index of a pair.
__device__ __forceinline__ std::uint32_t pack_bf16(float low, float high) {
  std::uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(high), "f"(low));
  return r;
}

/// An operand fragment, split once and reused by every MMA it feeds: x = hi + lo with hi = x
/// truncated to tf32 (the MMA reads a tf32 operand's top 19 bits, so hi is x itself, no
/// register) and lo = x - hi exact in fp32. `cross` carries both cross products in one bf16
/// m16n8k16 MMA over the same contraction indices: the m16n8k16 bf16 fragments put the k pair
/// (2t, 2t+1) in the register where m16n8k8 tf32 has k = t (and 2t+8, 2t+9 where it has t+4),
/// so register i of A holds (x, lo) and register i of B (lo, hi), and the pair sums to
/// x_a lo_b + lo_a hi_b = a*b - hi_a hi_b. With hi*hi in tf32 the product is exact up to the
/// bf16 rounding of the cross terms (< 2^-17 |ab|): 2 MMAs, at the same rate per instruction.
template <int N, bool kA>
struct SplitFrag {
  std::uint32_t hi[N], cross[N];
  SplitFrag() = default;
  __device__ __forceinline__ explicit SplitFrag(const float (&x)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      hi[i] = __float_as_uint(x[i]);
      const float h = __uint_as_float(hi[i] & 0xffffe000u), lo = x[i] - h;
      cross[i] = kA ? pack_bf16(x[i], lo) : pack_bf16(lo, h);
    }
  }
};
using SplitA = SplitFrag<4, true>;
using SplitB = SplitFrag<2, false>;

/// MMAs per split product.
inline constexpr int kSplitTerms = 2;

/// One product of a split MMA, c += term: 0 = the cross terms (bf16), 1 = hi*hi (tf32). Callers
/// issue a term for all their independent accumulators before the next term, the small ones
/// first, so that consecutive MMAs never wait on each other.
__device__ __forceinline__ void mma_term(int term, float (&c)[4], const SplitA& a, const SplitB& b) {
  if (term == 0) return mma_bf16(c, a.cross, b.cross[0], b.cross[1]);
  mma_tf32(c, a.hi, b.hi[0], b.hi[1]);
}

/// c += a * b on two-byte operands (bf16 or f16; m16n8k16, fp32 accumulators).
template <class E>
__device__ __forceinline__ void mma_k16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<E, bf16>) {
    mma_bf16(c, a, b0, b1);
  } else {
    static_assert(std::is_same_v<E, f16>);
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

/// Four 8x8 matrices of two-byte elements from shared memory, transposed: lane i gives the
/// address of row i % 8 of matrix i / 8, and receives in r[m] elements (2t, g) and (2t + 1, g)
/// of matrix m, i.e. an m16n8k16 B fragment of a row-major [k][n] block.
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row) {
  const auto a = static_cast<std::uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

/// The 16 bytes of elements E at p (shared memory), widened.
template <class E>
__device__ __forceinline__ void widen16(const E* p, float (&x)[16 / sizeof(E)]) {
  if constexpr (sizeof(E) == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
  } else {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    widen_pair<E>(v.x, x), widen_pair<E>(v.y, x + 2), widen_pair<E>(v.z, x + 4), widen_pair<E>(v.w, x + 6);
  }
}

/// Two floats as a pair of E (x0 in the low half) split into hi = x rounded to E and lo = x - hi
/// rounded to E, so that hi + lo carries x to about twice E's precision: a two-byte P V as
/// P_hi V + P_lo V is then as exact as the float32 one (dense_kernel).
template <class E>
__device__ __forceinline__ void split_pair(float x0, float x1, std::uint32_t& hi, std::uint32_t& lo) {
  hi = narrow_pair<E>(x0, x1);
  float h[2];
  widen_pair<E>(hi, h);
  lo = narrow_pair<E>(x0 - h[0], x1 - h[1]);
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  const auto s = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// ---------------------------------------------------------------------------------------------
// Layout and limits (shared with the plan)

/// Shared row strides (elements of `bytes` bytes: 4 or 2) for `cols` staged columns. K
/// fragments are read as 16 bytes by lanes (g, t) at row g, column 16t bytes: a stride of 64
/// bytes mod 128 puts rows g and g+1 on disjoint banks. Floats: V fragments are read at rows 2t,
/// column 4g, and a stride of 4 mod 16 floats spreads rows 0, 2, 4, 6 over banks 0, 8, 16, 24;
/// two-byte elements: V goes through ldmatrix, whose 8 rows of 16 bytes each take distinct
/// banks at a stride of 16 bytes mod 128. Conflict-free, all of them.
__host__ __device__ constexpr int dense_key_stride(int cols, int bytes) {
  const int w = 128 / bytes;  // elements of one pass over the banks
  return (cols + w - 1) / w * w + w / 2;
}
__host__ __device__ constexpr int dense_value_stride(int cols, int bytes) {
  return bytes == 4 ? (cols + 15) / 16 * 16 + 4 : (cols + 63) / 64 * 64 + 8;
}
/// Rows a block stages for a graph of n nodes, zeros past n: whole key tiles of P V's MMA steps,
/// 8 keys (tf32 m16n8k8) or 16 (two-byte m16n8k16).
__host__ __device__ constexpr int dense_pad(int n, int bytes) {
  const int keys = bytes == 4 ? 8 : 16;
  return (n + keys - 1) / keys * keys;
}

/// Largest graph (nodes) a block handles: 192 keeps the S row of a warp (96 registers) and the
/// two regions (192 x (144 + 132) floats = 212 KB at H*D = 128) inside one SM.
inline constexpr int kDenseMaxNodes = 192;
/// Edges of one row at most: `first` and `order` hold 16-bit offsets within a row.
inline constexpr int kDenseMaxDegree = 65535;
/// Widest AGNN head Dense takes. The tensor cores truncate the fp32 sum at each MMA, so a sum of
/// terms of one sign drifts by up to ~2^-23 per k-step: AGNN's self loop, |X_v|^2 / |X_v|^2,
/// came out 1.5e-5 low at D = 512 (max relative error of the output 1.0e-5 at beta = 3, Online
/// 2e-7), 5.5e-6 at 256 (H100; docs/cuda.md, "Dense", AGNN's width limit).
inline constexpr int kDenseMaxCosineDim = 256;
/// Warp counts of the instantiated kernels: graph bucket b takes n <= 16 * kDenseWarps[b].
inline constexpr int kDenseWarps[] = {4, 8, 12};
inline constexpr int kDenseBuckets = 3;

/// The bucket of a graph of 1 .. kDenseMaxNodes nodes: each bucket 4 warps, 64 nodes, more.
__host__ __device__ constexpr int dense_bucket(int nodes) { return (nodes - 1) / 64; }
static_assert(kDenseWarps[0] == 4 && kDenseWarps[1] == 8 && kDenseWarps[2] == 12, "dense_bucket's steps");

/// Key tiles whose S products a warp interleaves (registers: a float4 of K and its lo parts per
/// tile): 4, or 2 for 12 warps, whose 96-float S rows leave no room for 4 (they spill).
template <int WARPS>
inline constexpr int kDenseTileGroup = WARPS >= 12 ? 2 : 4;

/// Blocks per SM the launch bounds ask for: 128 registers per thread below 12 warps, so that
/// two blocks of 8 warps share an SM; 12 warps keep 168 registers for their 96-float S rows.
/// With key chunks (dense_chunked) a warp holds 16 floats of S: 80 registers, 3 blocks of 8
/// warps and 2 of 12.
template <int WARPS, bool kChunked>
inline constexpr int kDenseMinBlocks = kChunked ? (WARPS <= 4 ? 6 : WARPS <= 8 ? 3 : 2)
                                                : (WARPS <= 4 ? 4 : WARPS <= 8 ? 2 : 1);


/// What a score stages besides V and the adjacency: K for S = Q K^T (GT; AGNN, whose Q, K and
/// V are X), none for GAT (S from el and er, read from global memory); AGNN also keeps the
/// inverse norms of the graph's rows, which its cosine divides by.
__host__ __device__ constexpr bool dense_stages_keys(ScoreKind kind) { return kind != ScoreKind::GAT; }
__host__ __device__ constexpr bool dense_keeps_norms(ScoreKind kind) { return kind == ScoreKind::AGNN; }
/// Whether Dense computes a call of score functor sc: a cosine's row norms are its staged keys'
/// (X), so AGNN with an X_dst of its own runs elsewhere.
template <class S>
bool dense_serves(const S& sc) {
  if constexpr (dense_keeps_norms(S::kKind))
    return sc.q == sc.key;
  else
    return true;
}

/// Whether a plan's plain kernel (no edge values, no dropout) walks each row's keys in chunks of
/// 4 tiles (32 keys, one mask word) with an online softmax, its one 32-column output block kept
/// in registers across them: S shrinks from n / 2 floats a lane to 16, and the kernels fit 80
/// registers, 3 blocks of 8 warps per SM instead of 2 and 2 of 12 instead of 1. For GAT at
/// D = 32 only (one V region per head, which the plan always picks for it): 7-11% faster on the
/// PATTERN- and CLUSTER-like batches at 4x32. GT and AGNN, whose S takes K fragments, either
/// spilled at 80 registers or lost their tile groups, and were 4-14% slower (docs/cuda.md).
/// Floats only: a two-byte P is normalised before it is rounded (dense_kernel), which needs
/// the whole row's sum.
inline bool dense_chunked(ScoreKind kind, int D, DType t) { return kind == ScoreKind::GAT && D == 32 && t == DType::F32; }

/// Elements per staged row (of `bytes` bytes each): `shared_region` stages K and V of one head
/// after the other in one region (half the memory, two blocks per SM); otherwise K and V of
/// all heads are resident in two regions from the start (V's copy overlaps S).
__host__ __device__ constexpr int dense_row_elements(bool keys, int H, int D, bool shared_region, int bytes) {
  const int cols = shared_region ? D : H * D;
  const int ks = dense_key_stride(cols, bytes), vs = dense_value_stride(cols, bytes);
  return !keys ? vs : shared_region ? (ks > vs ? ks : vs) : ks + vs;
}

/// Shared memory of a block for graphs of up to max_nodes nodes of element type t: the staged
/// rows, then the adjacency bitmask, then (AGNN) the inverse norms.
inline std::size_t dense_smem_bytes(ScoreKind kind, int max_nodes, int H, int D, bool shared_region, DType t) {
  const int bytes = int(size_of(t));
  const std::size_t rows = dense_pad(max_nodes, bytes), mask = rows * ((max_nodes + 31) / 32) * 4;
  return rows * dense_row_elements(dense_stages_keys(kind), H, D, shared_region, bytes) * bytes + mask +
         (dense_keeps_norms(kind) ? rows * 4 : 0);
}

/// The batch as Dense reads it (device arrays owned by the plan).
struct DenseGraphs {
  const node_t* graph_ptr = nullptr;        ///< node offsets of the batch [G+1]
  const std::uint32_t* mask = nullptr;      ///< per graph: [n][ceil(n/32)] words, bit u of row v = edge u -> v
  const std::int64_t* mask_off = nullptr;   ///< [G] first word of each graph
  /// Per graph with duplicate edges: [n][n+1], entry (v, u) = row v's edges from sources below
  /// u (so the pair's multiplicity is entry (v, u+1) minus entry (v, u)).
  const std::uint16_t* first = nullptr;
  const std::int64_t* first_off = nullptr;  ///< [G], -1 for a graph without duplicates; null: none anywhere
  const std::uint16_t* order = nullptr;     ///< [E]: row v's edges sorted by source, as offsets from row_ptr[v]
};

/// One launch: a size bucket's graphs, largest first, and the shared memory of its largest.
struct DenseBucket {
  const int* graphs = nullptr;
  int count = 0;
  std::size_t smem = 0;
  bool shared_region = false;
};

struct DenseData {
  DenseGraphs graphs;
  DenseBucket bucket[kDenseBuckets];
};

template <class S>
struct DenseArgs {
  S sc;  ///< GTScore, AGNNScore or GATScore (score.cuh), of element type S::Elem
  typename S::Elem* out;
  int H, D;
  DenseGraphs batch;
  const int* graphs;  ///< graph ids of this launch (one bucket)
  bool shared_region;
  const edge_t* row_ptr;  ///< the CSR's, for the edge-wise softmax
  EdgeScaleOf<typename S::Elem> w;
  Train tr;
};

/// Copies columns [col, col + cols) of rows [n0, n0 + n) of a [N, HD] tensor into shared rows
/// of `stride` elements with 16-byte cp.async, and zeroes rows n .. pad: padded keys must hold
/// finite values, since P = 0 times a stale NaN would still be NaN.
template <class E>
__device__ __forceinline__ void dense_stage(E* dst, int stride, const E* __restrict__ src, int HD, int col, int cols,
                                            node_t n0, int n, int pad) {
  constexpr int kVec = 16 / sizeof(E);
  const int cv = cols / kVec;
  for (int i = threadIdx.x; i < n * cv; i += blockDim.x) {
    const int r = i / cv, c = i - r * cv;
    cp_async16(dst + r * stride + kVec * c, src + (std::size_t(n0) + r) * HD + col + kVec * c);
  }
  for (int i = threadIdx.x; i < (pad - n) * cv; i += blockDim.x) {
    const int r = n + i / cv, c = i % cv;
    *reinterpret_cast<uint4*>(dst + r * stride + kVec * c) = make_uint4(0u, 0u, 0u, 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// Kernel

/// kEdgeWise: edge values or dropout, so every (row, key) pair goes through its CSR edges.
/// kChunked: the keys in passes of 4 tiles with an online softmax (dense_chunked).
template <class S, int WARPS, bool kEdgeWise, bool kChunked>
__global__ void __launch_bounds__(WARPS * kWarp, kDenseMinBlocks<WARPS, kChunked>) dense_kernel(DenseArgs<S> a) {
  using E = typename S::Elem;
  constexpr int kBytes = sizeof(E);
  constexpr bool kTf32 = kBytes == 4;  // float: split tf32 MMAs; two-byte: native m16n8k16 ones
  static_assert(!(kChunked && (kEdgeWise || dense_stages_keys(S::kKind) || !kTf32)),
                "key chunks: GAT's plain softmax on floats only (dense_chunked)");
  using Vec16 = std::conditional_t<kTf32, float4, uint4>;  // 16 bytes of a row
  constexpr int kLaneCols = 16 / kBytes;  // elements of a lane's 16 bytes
  constexpr int kStep = 4 * kLaneCols;    // d per Q fragment (a quad's 64 bytes): two k-steps
  constexpr int NKT = 2 * WARPS;          // key tiles of 8 (graphs of at most 16 * WARPS nodes)
  constexpr int KT = kChunked ? 4 : NKT;  // key tiles of a pass
  constexpr int MW = (KT + 3) / 4;        // mask words per row and pass
  constexpr int TG = kDenseTileGroup<WARPS>;
  constexpr bool kKeys = dense_stages_keys(S::kKind), kCosine = dense_keeps_norms(S::kKind);
  constexpr float kLog2e = 1.4426950408889634f;  // the softmax runs in base 2
  extern __shared__ float4 dense_smem4[];
  E* smem = reinterpret_cast<E*>(dense_smem4);
  allow_dependents();  // the next bucket's blocks may take the SMs this bucket's tail frees

  const int gid = a.graphs[blockIdx.x];
  const node_t n0 = a.batch.graph_ptr[gid];
  const int n = a.batch.graph_ptr[gid + 1] - n0;
  const int nkt = (n + 7) / 8, pad = dense_pad(n, kBytes);
  const int H = a.H, D = a.D, HD = H * D;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, g = lane / 4, t = lane % 4;
  const int row[2] = {16 * warp + g, 16 * warp + g + 8};  // this lane's destination rows (graph-local)
  const bool active = 16 * warp < n;                      // warp-uniform
  const std::int64_t foff = a.batch.first_off ? a.batch.first_off[gid] : -1;
  edge_t row_start[2] = {0, 0};
  if (kEdgeWise) {
#pragma unroll
    for (int x = 0; x < 2; ++x)
      if (row[x] < n) row_start[x] = __ldg(a.row_ptr + n0 + row[x]);
  }

  const bool shared_region = a.shared_region;  // kChunked: always (the plan's)
  const int ks = dense_key_stride(shared_region ? D : HD, kBytes), vs = dense_value_stride(shared_region ? D : HD, kBytes);
  E* kbuf = smem;
  E* vbuf = shared_region || !kKeys ? smem : smem + pad * ks;
  // The adjacency rows (n x nw words, bit u of word u/32) go behind the feature regions, in a
  // copy group of their own; kept out of registers until the softmax. AGNN's inverse row norms
  // follow.
  const int nw = (n + 31) / 32;
  std::uint32_t* mbuf =
      reinterpret_cast<std::uint32_t*>(smem + pad * dense_row_elements(kKeys, H, D, shared_region, kBytes));
  float* inv_norm = reinterpret_cast<float*>(mbuf + pad * nw);
  {
    const std::uint32_t* mg = a.batch.mask + a.batch.mask_off[gid];
    for (int i = threadIdx.x; i < n * nw; i += blockDim.x) {
      const auto d = static_cast<std::uint32_t>(__cvta_generic_to_shared(mbuf + i));
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(mg + i) : "memory");
    }
    cp_async_commit();
  }
  if (!shared_region) {  // K then V of every head, two groups: S waits for K only
    if constexpr (kKeys) {
      dense_stage(kbuf, ks, a.sc.key, HD, 0, HD, n0, n, pad);
      cp_async_commit();
    }
    dense_stage(vbuf, vs, a.sc.value, HD, 0, HD, n0, n, pad);
    cp_async_commit();
  }

  const E* q = a.sc.key;  // AGNN: X
  if constexpr (S::kKind == ScoreKind::GT) q = a.sc.q;
  auto load_q = [&](int r, int col) {
    return r < n ? __ldg(reinterpret_cast<const Vec16*>(q + (std::size_t(n0) + r) * HD + col)) : Vec16{};
  };

  for (int h = 0; h < H; ++h) {
    const int soff = shared_region ? 0 : h * D;  // head's column in the staged rows
    if (shared_region) {  // K now and V after S, into the same region; GAT: V now, under its scores
      if constexpr (kKeys)
        dense_stage(kbuf, ks, a.sc.key, HD, h * D, D, n0, n, pad);
      else
        dense_stage(vbuf, vs, a.sc.value, HD, h * D, D, n0, n, pad);
      cp_async_commit();
    }
    // First Q block in flight while the keys arrive.
    Vec16 qa{}, qb{};
    if constexpr (kKeys) {
      qa = load_q(row[0], h * D + kLaneCols * t), qb = load_q(row[1], h * D + kLaneCols * t);
      if (shared_region || h == 0) {
        if (shared_region)
          cp_async_wait<0>();
        else
          cp_async_wait<1>();
        __syncthreads();
      }

      if constexpr (kCosine) {  // the inverse norms of each warp's rows of the staged X (two lanes a row)
        // Two-byte S reads every row's norm (floats: a warp reads its own rows' only), so with
        // two regions, where a head starts without a barrier, the previous head's readers must
        // be done before this head's norms overwrite theirs.
        if (!kTf32 && h > 0 && !shared_region) __syncthreads();
        const int r = 16 * warp + lane / 2;
        E* xr = kbuf + r * ks + soff + (lane % 2) * (D / 2);
        float n2 = 0.f;
        if (r < n)
          for (int c = 0; c < D / 2; c += kLaneCols) {
            float x[kLaneCols];
            widen16(xr + c, x);
#pragma unroll
            for (int i = 0; i < kLaneCols; i += 4)
              n2 += x[i] * x[i] + x[i + 1] * x[i + 1] + x[i + 2] * x[i + 2] + x[i + 3] * x[i + 3];
          }
        n2 += __shfl_xor_sync(kFull, n2, 1);
        const float inv = n2 > 0.f ? 1.f / sqrtf(n2) : 0.f;  // a zero vector scores 0
        if (r < n) {
          // Floats: the rows scaled to unit norm in place. Two-byte rows stay as they are, since
          // rounding the scaled ones would cost a rounding; S divides by the key's norm instead.
          if constexpr (kTf32)
            for (int c = 0; c < D / 2; c += 4) {
              float4& x = *reinterpret_cast<float4*>(xr + c);
              x = make_float4(x.x * inv, x.y * inv, x.z * inv, x.w * inv);
            }
          if (lane % 2 == 0) inv_norm[r] = inv;
        } else if (r < pad && lane % 2 == 0) {
          inv_norm[r] = 0.f;
        }
        __syncthreads();
      }
    }

    // One pass over all keys, or (kChunked) one per chunk of KT tiles, the softmax online: the
    // row's max mx and sum l so far, the output block rescaled when the max grows.
    const int passes = kChunked ? (nkt + KT - 1) / KT : 1;
    float mx[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, inv[2] = {0.f, 0.f};
    float o[4][4];  // a 32-column output block (kChunked: the head's whole output)
    for (int kc = 0; kc < passes; ++kc) {
      const int j_base = kc * KT;  // the pass's first key tile
      const bool last = kc == passes - 1;
      float s[KT][4];
#pragma unroll
      for (int j = 0; j < KT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
      float to_log2[2];  // a row's factor from s to its base-2 score
      if constexpr (kKeys) {
        // ---- S = Q K^T over blocks of kStep columns of d (two k-steps each)
        if (active) {
          const E* kp = kbuf + g * ks + soff + kLaneCols * t;
          for (int b = 0; b < D / kStep; ++b) {
            const Vec16 xa = qa, xb = qb;
            if (b + 1 < D / kStep)
              qa = load_q(row[0], h * D + kStep * (b + 1) + kLaneCols * t),
              qb = load_q(row[1], h * D + kStep * (b + 1) + kLaneCols * t);
            if constexpr (kTf32) {
              const float a0[4] = {xa.x, xb.x, xa.y, xb.y}, a1[4] = {xa.z, xb.z, xa.w, xb.w};
              const SplitA A0(a0), A1(a1);
              const float* kq = kp + 16 * b;  // stepped by a key tile: no per-tile address registers
#pragma unroll
              for (int j0 = 0; j0 < KT; j0 += TG) {
                if (j0 < nkt) {
                  // TG key tiles at once: their MMAs are independent and interleave. Tiles past the
                  // graph are split as zeros and only their MMAs skipped, so that the group is one
                  // block of predicated code, scheduled as a whole (not a branch per tile).
                  float4 kv[TG];
#pragma unroll
                  for (int u = 0; u < TG; ++u) {
                    kv[u] = j0 + u < nkt ? *reinterpret_cast<const float4*>(kq) : make_float4(0.f, 0.f, 0.f, 0.f);
                    kq += 8 * ks;
                  }
                  SplitB kb[TG][2];
#pragma unroll
                  for (int u = 0; u < TG; ++u) {
                    const float b0[2] = {kv[u].x, kv[u].y}, b1[2] = {kv[u].z, kv[u].w};
                    kb[u][0] = SplitB(b0), kb[u][1] = SplitB(b1);
                  }
#pragma unroll
                  for (int term = 0; term < kSplitTerms; ++term)
#pragma unroll
                    for (int half = 0; half < 2; ++half)
#pragma unroll
                      for (int u = 0; u < TG; ++u)
                        if (j0 + u < nkt) mma_term(term, s[j0 + u], half ? A1 : A0, kb[u][half]);
                }
              }
            } else {
              // k-step 0 takes d 8t .. 8t+3 of the block (the pairs in x and y), k-step 1 d 8t+4 ..
              // 8t+7 (z, w): a lane's k pair (2t, 2t+1) is its first pair, (2t+8, 2t+9) the
              // second, in A and B alike.
              const std::uint32_t a0[4] = {xa.x, xb.x, xa.y, xb.y}, a1[4] = {xa.z, xb.z, xa.w, xb.w};
              const E* kq = kp + kStep * b;
#pragma unroll
              for (int j0 = 0; j0 < KT; j0 += TG) {
                if (j0 < nkt) {
                  uint4 kv[TG];
#pragma unroll
                  for (int u = 0; u < TG; ++u) {
                    kv[u] = j0 + u < nkt ? *reinterpret_cast<const uint4*>(kq) : make_uint4(0u, 0u, 0u, 0u);
                    kq += 8 * ks;
                  }
#pragma unroll
                  for (int half = 0; half < 2; ++half)
#pragma unroll
                    for (int u = 0; u < TG; ++u)
                      if (j0 + u < nkt)
                        mma_k16<E>(s[j0 + u], half ? a1 : a0, half ? kv[u].z : kv[u].x, half ? kv[u].w : kv[u].y);
                }
              }
            }
          }
        }
        if constexpr (kCosine && !kTf32) {  // S is X_v . X_u: the key's norm divides it here
#pragma unroll
          for (int j = 0; j < KT; ++j)
            if (j < nkt)
#pragma unroll
              for (int i = 0; i < 4; ++i) s[j][i] *= inv_norm[8 * j + 2 * t + i % 2];
        }
        if (shared_region) {  // every warp is done with K: V of this head into the same region
          __syncthreads();
          dense_stage(vbuf, vs, a.sc.value, HD, h * D, D, n0, n, pad);
          cp_async_commit();
        }
        // S is |X_v| cos(X_v, X_u) (two-byte: after the division by the key's norm above): the
        // row's own norm goes with beta.
        if constexpr (kCosine) {
          const float beta = load_one(a.sc.beta + (a.sc.beta_count == 1 ? 0 : h)) * kLog2e;
#pragma unroll
          for (int x = 0; x < 2; ++x) to_log2[x] = row[x] < n ? beta * inv_norm[row[x]] : 0.f;
        } else {
          to_log2[0] = to_log2[1] = a.sc.scale * kLog2e;
        }
      } else {
        // ---- GAT: S = LeakyReLU(el[u] + er[v]), while V arrives
        float er[2];
#pragma unroll
        for (int x = 0; x < 2; ++x) er[x] = row[x] < n ? load_one(a.sc.er + (std::size_t(n0) + row[x]) * H + h) : 0.f;
        if (active) {
#pragma unroll
          for (int j = 0; j < KT; ++j)
            if (j_base + j < nkt)
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const int u = 8 * (j_base + j) + 2 * t + e;
                const float el = u < n ? load_one(a.sc.key + (std::size_t(n0) + u) * H + h) : 0.f;
                s[j][e] = leaky_relu(el + er[0], a.sc.slope), s[j][2 + e] = leaky_relu(el + er[1], a.sc.slope);
              }
        }
        to_log2[0] = to_log2[1] = kLog2e;
        if (kc == 0 && h == 0) {  // the adjacency (V may still be in flight)
          cp_async_wait<1>();
          __syncthreads();
        }
      }

      // ---- masked row softmax in base 2. s[j][i] is row[i / 2], key 8(j_base + j) + 2t + i % 2
      // (the m16n8k8 accumulator layout); idle and padded pairs hold anything and are never read.
      // The pass's mask words: KT is a multiple of 4 tiles, one word each 4.
      std::uint32_t m[2][MW];
#pragma unroll
      for (int x = 0; x < 2; ++x)
#pragma unroll
        for (int w = 0; w < MW; ++w) {
          const int word = j_base / 4 + w;
          m[x][w] = (word < nw && row[x] < n) ? mbuf[row[x] * nw + word] : 0u;
        }
      auto key = [&](int j, int i) { return 8 * (j_base + j) + 2 * t + i % 2; };
      auto bit = [&](int j, int i) { return 8 * (j % 4) + 2 * t + i % 2; };  // of mask word j / 4
      auto edge = [&](int j, int i) { return ((m[i / 2][j / 4] >> bit(j, i)) & 1u) != 0; };
      auto first = [&](int j, int i) { return a.batch.first + foff + std::size_t(row[i / 2]) * (n + 1) + key(j, i); };
      // The CSR edges behind pair (j, i), f(e) for each: the pair's rank among its row's edges in
      // source order (from `first`, or the mask bits below it) indexes the row's `order`.
      auto for_edges = [&](int j, int i, auto&& f) {
        int k = 0, c = 0;
        if (foff >= 0) {
          if (row[i / 2] < n && key(j, i) < n) {
            const std::uint16_t* fr = first(j, i);
            k = fr[0], c = fr[1] - fr[0];
          }
        } else if (edge(j, i)) {
          c = 1, k = __popc(m[i / 2][j / 4] & ((1u << bit(j, i)) - 1u));
#pragma unroll
          for (int w = 0; w < j / 4; ++w) k += __popc(m[i / 2][w]);
        }
        const edge_t e0 = row_start[i / 2];
        for (int q = 0; q < c; ++q) f(e0 + a.batch.order[e0 + k + q]);
      };

      // Edge-wise pass 1 for pair (j, i) with base-2 score x: the row's max (of x * w with edge
      // values).
      auto raise = [&](int j, int i, float x) {
        float& top = mx[i / 2];
        if (a.w.data != nullptr)
          for_edges(j, i, [&](edge_t e) { top = fmaxf(top, x * a.w(e, h)); });
        else if (edge(j, i))
          top = fmaxf(top, x);
      };
      auto reduce_max = [&](float (&y)[2]) {
#pragma unroll
        for (int x = 0; x < 2; ++x)
          y[x] = fmaxf(y[x], __shfl_xor_sync(kFull, y[x], 1)), y[x] = fmaxf(y[x], __shfl_xor_sync(kFull, y[x], 2));
      };
      // Edge-wise pass 2: the pair's unnormalised probability; l sums the undropped
      // exponentials, the probability has the dropout factors.
      auto weigh = [&](int j, int i, float x) {
        const float top = mx[i / 2];
        float p = 0.f, sum = 0.f;
        for_edges(j, i, [&](edge_t e) {
          const float y = fast_exp2(x * a.w(e, h) - top);
          sum += y;
          p += y * a.tr.keep(e, h);
        });
        l[i / 2] += sum;
        return p;
      };
      float rescale[2] = {1.f, 1.f};  // kChunked: what the max's growth leaves of l and O so far
      if constexpr (kEdgeWise) {
        // Unrolled over the 4 * NKT pairs, the per-edge work (rank, edge values, dropout hash) would
        // be tens of thousands of instructions: the pairs go through local memory, in rolled loops.
        float xs[4 * NKT];
#pragma unroll
        for (int j = 0; j < NKT; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) xs[4 * j + i] = s[j][i] * to_log2[i / 2];
#pragma unroll 1
        for (int q = 0; q < 4 * NKT; ++q) raise(q / 4, q % 4, xs[q]);
        reduce_max(mx);
#pragma unroll 1
        for (int q = 0; q < 4 * NKT; ++q) xs[q] = weigh(q / 4, q % 4, xs[q]);
#pragma unroll
        for (int j = 0; j < NKT; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) s[j][i] = xs[4 * j + i];
      } else if (active) {  // an idle warp's rows have no edges (mx -inf, l 0) and PV skips it
        // The mask is tested once: a masked or padded pair's score (which may be anything) becomes
        // -inf, so that neither the max nor the exponentials select. The words are shifted to the
        // lane's first key, so that every test is at a constant bit.
        std::uint32_t ms[2][MW];
#pragma unroll
        for (int x = 0; x < 2; ++x)
#pragma unroll
          for (int w = 0; w < MW; ++w) ms[x][w] = m[x][w] >> (2 * t);
        float pass_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int j = 0; j < KT; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const bool on = ((ms[i / 2][j / 4] >> (8 * (j % 4) + i % 2)) & 1u) != 0;
            s[j][i] = on ? s[j][i] * to_log2[i / 2] : -INFINITY;
            pass_max[i / 2] = fmaxf(pass_max[i / 2], s[j][i]);
          }
        reduce_max(pass_max);
        float top[2];  // a row without edges so far: every exponential is 2^-inf = 0
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          const float grown = fmaxf(mx[x], pass_max[x]);
          if constexpr (kChunked) {
            rescale[x] = mx[x] == -INFINITY ? 0.f : fast_exp2(mx[x] - grown);
            l[x] *= rescale[x];
          }
          mx[x] = grown;
          top[x] = grown == -INFINITY ? 0.f : grown;
        }
#pragma unroll
        for (int j = 0; j < KT; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            float p = fast_exp2(s[j][i] - top[i / 2]);
            if (foff >= 0 && edge(j, i)) {  // duplicate edges: weight by multiplicity (rare path)
              const std::uint16_t* fr = first(j, i);
              p *= float(fr[1] - fr[0]);
            }
            l[i / 2] += p;
            s[j][i] = p;
          }
      }
      if (last) {
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          l[x] += __shfl_xor_sync(kFull, l[x], 1), l[x] += __shfl_xor_sync(kFull, l[x], 2);
          inv[x] = l[x] > 0.f ? 1.f / l[x] : 0.f;  // no in-edges: 0
          if (t == 0 && row[x] < n) a.tr.store(n0 + row[x], h, H, mx[x] * 0.6931471805599453f, l[x]);
        }
      }

      if (kc == 0 && (shared_region || h == 0)) {
        cp_async_wait<0>();
        __syncthreads();
      }

      // ---- O = P V in blocks of 32 output columns (16 accumulators; P stays in registers)
      if constexpr (kTf32) {
        if (active) {
          for (int c = 0; c < D / 32; ++c) {
            if (!kChunked || kc == 0) {
#pragma unroll
              for (int i = 0; i < 4; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
            } else {
#pragma unroll
              for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) o[i][e] *= rescale[e / 2];
            }
            const float* vp = vbuf + (8 * j_base + 2 * t) * vs + soff + 32 * c + 4 * g;
            // Key tiles in pairs, as one block of code with the second tile's MMAs predicated: the
            // compiler overlaps one tile's loads and splits with the other's MMAs. With the S groups
            // above, 3-5% faster than a branch per tile (docs/cuda.md, "Dense", Predicated tiles).
            // kChunked: the pass's 4 tiles as one block (with the pair branch it spilled 16 bytes, not 8).
#pragma unroll
            for (int j0 = 0; j0 < KT; j0 += 2) {
              if (kChunked || j_base + j0 < nkt) {
#pragma unroll
                for (int j = j0; j < j0 + 2; ++j) {
                  const bool on = j_base + j < nkt;  // a pair's second tile may be past the graph (and the staged rows)
                  float pa[4] = {s[j][0], s[j][2], s[j][1], s[j][3]};
                  // Opaque per block: else the compiler hoists every tile's P split out of the block
                  // loop (2 x 64 live registers) and spills. (kChunked has one block.)
                  if constexpr (!kChunked) asm volatile("" : "+f"(pa[0]), "+f"(pa[1]), "+f"(pa[2]), "+f"(pa[3]));
                  const SplitA A(pa);
                  const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
                  const float4 v0 = on ? *reinterpret_cast<const float4*>(vp) : z,
                               v1 = on ? *reinterpret_cast<const float4*>(vp + vs) : z;
                  vp += 8 * vs;
                  const float e0[2] = {v0.x, v1.x}, e1[2] = {v0.y, v1.y}, e2[2] = {v0.z, v1.z}, e3[2] = {v0.w, v1.w};
                  const SplitB B0(e0), B1(e1), B2(e2), B3(e3);
#pragma unroll
                  for (int term = 0; term < kSplitTerms; ++term)
                    if (on) {
                      mma_term(term, o[0], A, B0);
                      mma_term(term, o[1], A, B1);
                      mma_term(term, o[2], A, B2);
                      mma_term(term, o[3], A, B3);
                    }
                }
              }
            }
            if (!last) continue;
            // n-tile i, accumulator (row x, 2t + e) is o[i][2x + e], output column 32c + 8t + 4e + i.
            const int col = h * D + 32 * c + 8 * t;
#pragma unroll
            for (int x = 0; x < 2; ++x)
              if (row[x] < n) {
                float* dst = a.out + (std::size_t(n0) + row[x]) * HD + col;
                const float f = inv[x];
                *reinterpret_cast<float4*>(dst) =
                    make_float4(o[0][2 * x] * f, o[1][2 * x] * f, o[2][2 * x] * f, o[3][2 * x] * f);
                *reinterpret_cast<float4*>(dst + 4) =
                    make_float4(o[0][2 * x + 1] * f, o[1][2 * x + 1] * f, o[2][2 * x + 1] * f, o[3][2 * x + 1] * f);
              }
          }
        }
      } else {
        if (active) {
          // Key tiles in pairs (one k16 step). P is normalised first, which keeps it within
          // f16's range (a pair's multiplicity, dropout's factor), and split into hi + lo parts
          // of E (split_pair): P V within float32's error, at twice the MMAs of a rounded P.
          // Lanes give ldmatrix the rows of the pair's 16 keys (lane % 16) at the 8-column
          // halves of 16 output columns (lane / 16).
          std::uint32_t ph[KT / 2][4], pl[KT / 2][4];
#pragma unroll
          for (int j = 0; j < KT; j += 2)
#pragma unroll
            for (int r = 0; r < 4; ++r)  // A's registers: rows g, g + 8 of key tile j, then of j + 1
              split_pair<E>(s[j + r / 2][2 * (r % 2)] * inv[r % 2], s[j + r / 2][2 * (r % 2) + 1] * inv[r % 2],
                            ph[j / 2][r], pl[j / 2][r]);
          const E* vrow = vbuf + (lane % 16) * vs + soff + 8 * (lane / 16);
          for (int c = 0; c < D / 32; ++c) {
#pragma unroll
            for (int i = 0; i < 4; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
#pragma unroll
            for (int j = 0; j < KT; j += 2) {
              if (j < nkt) {
                std::uint32_t b[2][4];  // n-tiles 2m, 2m + 1 of the block: b[m][0..1], b[m][2..3]
                ldmatrix_x4_trans(b[0], vrow + 8 * j * vs + 32 * c);
                ldmatrix_x4_trans(b[1], vrow + 8 * j * vs + 32 * c + 16);
#pragma unroll
                for (int i = 0; i < 4; ++i) mma_k16<E>(o[i], ph[j / 2], b[i / 2][2 * (i % 2)], b[i / 2][2 * (i % 2) + 1]);
#pragma unroll
                for (int i = 0; i < 4; ++i) mma_k16<E>(o[i], pl[j / 2], b[i / 2][2 * (i % 2)], b[i / 2][2 * (i % 2) + 1]);
              }
            }
            // n-tile i, accumulator (row x, 2t + e) is o[i][2x + e], output column 32c + 8i + 2t + e.
            const int col = h * D + 32 * c + 2 * t;
#pragma unroll
            for (int x = 0; x < 2; ++x)
              if (row[x] < n) {
                E* dst = a.out + (std::size_t(n0) + row[x]) * HD + col;
#pragma unroll
                for (int i = 0; i < 4; ++i)
                  *reinterpret_cast<std::uint32_t*>(dst + 8 * i) = narrow_pair<E>(o[i][2 * x], o[i][2 * x + 1]);
              }
          }
        }
      }
    }
    if (shared_region) __syncthreads();  // the next head's K (GAT: V) overwrites this V
  }
  wait_for_previous();  // a bucket launched as a dependent ends after the previous one
}

/// Whether bucket b's graphs (up to max_nodes nodes) stage K and V in one region: only when that
/// fits more blocks on an SM (occupancy API) or two regions exceed `optin` bytes. Raises the
/// kernels' shared-memory limit (dense.cu). Remembers each shape's answer per device.
bool dense_shared_region(ScoreKind kind, DType t, int b, int max_nodes, int H, int D, std::size_t optin);

/// Whether a call needs the edge-wise kernel: it has edge values or dropout.
template <class E>
bool dense_edge_wise(const EdgeScaleOf<E>& w, const Train& tr) {
  return w.data != nullptr || tr.dropout.rate > 0.f;
}

/// Launches the plan's buckets, largest graphs first; the edge-wise kernels when there are edge
/// values or dropout (dense.cu).
template <class S>
void launch_dense(cudaStream_t st, const DenseData& d, const S& sc, const EdgeScaleOf<typename S::Elem>& w,
                  const Train& tr, const edge_t* row_ptr, int H, int D, typename S::Elem* out);

}  // namespace dfgnn::cuda::detail
