#pragma once
// CUDA-native g-SpMM / g-SDDMM kernels (docs/message_passing.md). Three kernel shapes:
//   gspmm_kernel    the forward g-SpMM in the style of online.cuh: a lane group per (row or
//                   piece, head), accumulator in registers, U edges in flight, ids prefetched a
//                   chunk ahead; each entry summed in CSR order whatever the tile.
//   segment_kernel  a lane group per segment of edges (a CSR row or a CSC column) reduces one
//                   summed term per edge: node gradients and the GCN aggregation. Segments
//                   longer than the plan's split are done as pieces whose partials
//                   merge_segments combines in order (the forward's too).
//   edge_kernel     a warp per run of edges computes each edge's H*D values and writes them, or
//                   their sums over broadcast axes: the forward g-SDDMM and edge gradients.
// Every output entry is written by one lane, summing in a fixed order: no atomics.

#include "merge.cuh"

#include <dfgnn/message.hpp>

#include <algorithm>
#include <type_traits>

namespace dfgnn::cuda::detail {

inline constexpr int kMpThreads = 256;
/// Edges a warp of edge_kernel takes in turn.
inline constexpr int kEdgesPerWarp = 8;

/// An operand [rows, heads, dim] read as entry k = h * D + d of an [H, D] row (broadcasting).
struct Access {
  const float* data = nullptr;
  int heads = 0, dim = 0;
  __host__ __device__ std::size_t stride() const { return std::size_t(heads) * unsigned(dim); }
  __device__ __forceinline__ int offset(int k, int D) const {
    const int h = k / D, d = k - h * D;
    return (heads == 1 ? 0 : h) * dim + (dim == 1 ? 0 : d);
  }
  __device__ __forceinline__ float at(std::size_t row, int k, int D) const {
    return __ldg(data + row * stride() + offset(k, D));
  }
};

/// The row of an operand on target t for the edge u -> v with caller's index id.
__device__ __forceinline__ std::size_t row_of(Target t, node_t u, node_t v, edge_t id) {
  return t == Target::U ? std::size_t(u) : t == Target::E ? std::size_t(id) : std::size_t(v);
}

/// A lane's slices of an operand: per chunk, the offset of its first entry in a row, and
/// whether the VEC entries are consecutive (the operand has all D features: one 16-byte load)
/// or one value broadcast (dim 1). With VEC = 4, D % 4 == 0, so a slice never crosses a head.
template <class T>
struct Lanes {
  const float* data;
  std::size_t stride;
  int off[T::CHUNKS];
  bool in[T::CHUNKS];
  bool wide;

  __device__ Lanes(const Access& a, int k0, int W, int D, int l) : data(a.data), stride(a.stride()), wide(a.dim != 1) {
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c) {
      const int k = k0 + frag_col<T>(c, l);
      in[c] = k < W;
      off[c] = in[c] ? a.offset(k, D) : 0;
    }
  }
  __device__ __forceinline__ void load(Frag<T>& f, std::size_t row, bool ok) const {
    const float* p = data + row * stride;
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c) {
      if constexpr (T::VEC == 4) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (ok && in[c]) {
          if (wide) {
            v = __ldg(reinterpret_cast<const float4*>(p + off[c]));
          } else {
            const float s = __ldg(p + off[c]);
            v = make_float4(s, s, s, s);
          }
        }
        f.x[4 * c] = v.x, f.x[4 * c + 1] = v.y, f.x[4 * c + 2] = v.z, f.x[4 * c + 3] = v.w;
      } else {
        f.x[c] = ok && in[c] ? __ldg(p + off[c]) : 0.f;
      }
    }
  }
};

/// Stores a lane's slices of a row of W entries (values or arguments; 16-byte stores when VEC = 4).
template <class T, class V>
__device__ __forceinline__ void store_slices(V* row, const V (&x)[T::PER_LANE], int k0, int W, int l) {
#pragma unroll
  for (int c = 0; c < T::CHUNKS; ++c) {
    const int k = k0 + frag_col<T>(c, l);
    if (k >= W) continue;
    const V* y = x + T::VEC * c;
    if constexpr (T::VEC == 4 && sizeof(V) == 4) {
      *reinterpret_cast<float4*>(row + k) = make_float4(y[0], y[1], y[2], y[3]);
    } else if constexpr (T::VEC == 4 && sizeof(V) == 8) {
      *reinterpret_cast<longlong2*>(row + k) = make_longlong2(y[0], y[1]);
      *reinterpret_cast<longlong2*>(row + k + 2) = make_longlong2(y[2], y[3]);
    } else {
#pragma unroll
      for (int i = 0; i < T::VEC; ++i) row[k + i] = y[i];
    }
  }
}

/// Segments of edges: CSR rows (segment n is the destination) or CSC columns (the source).
struct Segments {
  const edge_t* ptr = nullptr;    ///< [count+1]
  const node_t* other = nullptr;  ///< [E] the edge's other endpoint
  const edge_t* id = nullptr;     ///< [E] the edge's index as the caller gave it; null: its position
  /// The caller's index of the edge at position e.
  __device__ __forceinline__ edge_t edge(edge_t e) const { return id ? __ldg(id + e) : e; }
  node_t count = 0;
  bool by_source = false;
  edge_t split = 0;               ///< longer segments are done as pieces
  const Piece* pieces = nullptr;
  int num_pieces = 0;
};

/// Where segment results go: whole segments to rows of out (and arg), pieces to partial slots.
struct SegmentOut {
  float* out = nullptr;          ///< [count, W]
  edge_t* arg = nullptr;         ///< [count, W] or null
  float* part = nullptr;         ///< [slots, W]
  edge_t* part_arg = nullptr;    ///< [slots, W] (max/min)
};

enum class Fold { Sum, Max, Min };

/// g-SpMM's message: lhs OP rhs (or lhs alone), reduced by sum (mean: scaled by 1/degree), max or min.
struct MessageParams {
  Access lhs, rhs;
  Target lhs_on = Target::U, rhs_on = Target::None;
  BinaryOp op = BinaryOp::Add;
  const float* inv_degree = nullptr;  ///< [N] 1/degree for mean (a product: no division's slow path)
  bool ids = false;  ///< the edge ids are read (an operand on E)
};

/// How an operand covers one head: all D columns, one value broadcast over them (dim 1), or
/// either, decided at run time (the rare shapes share one kernel); None: no operand.
enum class Shape { None, Full, Scalar, Any };

/// A lane's columns of one head of an operand [rows, 1|H, 1|D] (online.cuh's HeadColumns with
/// broadcasting and a column slice k0): row r's fragment is at base + r * stride bytes, one
/// wide multiply-add per row address.
template <class T, Shape S>
struct OperandColumns {
  const char* base = nullptr;
  unsigned stride = 0;
  bool wide = S == Shape::Full;
  bool inside[T::CHUNKS];

  __device__ OperandColumns(const Access& a, int h, int k0, int D, int l) {
    if constexpr (S == Shape::Any) wide = a.dim != 1 || D == 1;
    const int hh = a.heads == 1 ? 0 : h;
    const float* p = a.data + std::size_t(hh) * unsigned(a.dim) + (wide ? k0 + frag_col<T>(0, l) : 0);
    base = reinterpret_cast<const char*>(p);
    stride = unsigned(a.heads) * unsigned(a.dim) * 4u;
    keep_in_register(base);
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c) inside[c] = k0 + frag_col<T>(c, l) < D;
  }
  __device__ __forceinline__ const float* at(std::size_t r) const { return row_at(base, unsigned(r), stride); }
  /// Row r's value of a Scalar operand.
  __device__ __forceinline__ float scalar(std::size_t r) const { return __ldg(at(r)); }
  /// Row r's fragment; kAll: the edge is valid (zeros where !ok otherwise); kInside: every
  /// column is inside the row (else columns past D are 0). Both: no predicate and no zero fill.
  template <bool kAll, bool kInside>
  __device__ __forceinline__ void load(Frag<T>& f, std::size_t r, bool ok) const {
    if constexpr (S != Shape::None) {
      const float* p = at(r);
      if (S == Shape::Scalar || (S == Shape::Any && !wide)) {
        const float x = kAll || ok ? __ldg(p) : 0.f;
#pragma unroll
        for (int i = 0; i < T::PER_LANE; ++i) f.x[i] = x;
      } else {
        load_chunks<T>(f, p, [&](int c) { return (kAll || ok) && (kInside || inside[c]); });
      }
    }
  }
};

/// Entry i of one edge's rhs: a fragment's, or the one value of an edge weight.
template <class T>
__device__ __forceinline__ float entry(const Frag<T>& y, int i) { return y.x[i]; }
__device__ __forceinline__ float entry(float y, int) { return y; }

/// x[j] = x[j] OP y(j) for the U edges of a step, rounded the same way in every tile: the _rn
/// intrinsics keep the compiler from contracting a product and the sum into an fma in some
/// code shapes only. One (warp-uniform) branch per step: a switch per entry let the compiler
/// if-convert it and run every op, the division's slow path included, on every entry (3x).
/// Division has kernels of its own (kDiv): its IEEE slow path is a subroutine call, and calls
/// inside the loop made the other ops' kernels spill around them (u_mul_e 1.6x copy_u's time).
template <class T, int U, bool kDiv, class Y>
__device__ __forceinline__ void apply_message(BinaryOp op, Frag<T> (&x)[U], const Y& y) {
  const auto each = [&](auto f) {
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const auto yj = y(j);
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) x[j].x[i] = f(x[j].x[i], entry(yj, i));
    }
  };
  if constexpr (kDiv) return each([](float a, float b) { return __fdiv_rn(a, b); });
  switch (op) {
    case BinaryOp::Add: return each([](float a, float b) { return __fadd_rn(a, b); });
    case BinaryOp::Sub: return each([](float a, float b) { return __fsub_rn(a, b); });
    default: return each([](float a, float b) { return __fmul_rn(a, b); });
  }
}

/// A sum of products (u_mul_e, u_mul_v, their means) takes one fma per entry, not a product then
/// a sum: half the arithmetic in a kernel that issues on about half of the cycles (ncu), and no
/// message held, so an edge weight keeps the copy's edges in flight (kSpmmEdges). The kernel
/// for such a sum also runs add and sub (the op is a run-time argument).
template <Fold F, Shape R, bool kDiv>
inline constexpr bool kFmaSum = F == Fold::Sum && R != Shape::None && !kDiv;

/// Edges a lane group has in flight per step: about 32 (copy) or 16 (two full operands) floats
/// of loads per lane, 1 to 8 edges. An edge weight in an fma sum fits the copy's count in 64
/// registers; with max, min or a division it spills there on the warp tile of D <= 128, which
/// keeps 4 (measured on the H100: u_mul_e sum at D = 128 5-8% faster with 8 than with 4 once
/// the fma came, 10% slower before it; docs/message_passing.md, "CUDA-native kernels").
template <class T, Fold F, Shape R, bool kDiv>
inline constexpr int kSpmmEdges = R == Shape::Scalar && !kFmaSum<F, R, kDiv> && T::LANES == 32 && T::PER_LANE == 4
                                      ? 4
                                      : std::clamp((R == Shape::Full || R == Shape::Any ? 16 : 32) / T::PER_LANE, 1, 8);

inline constexpr int kSpmmThreads = 256;

/// g-SpMM walks rows with half warps at 64 < D <= 128 (two rows' loads in flight per warp, each
/// row taking twice the steps) when the rows walked whole average at most kShortRow edges (two
/// steps of a half warp) and fill kShortRowWaves waves of two-row warps (32 resident per SM).
/// Measured on the H100 (docs/message_passing.md): MNIST-like (8 edges, 7 waves) 12-20% and
/// web-NotreDame (6.7, 38 waves) 7% faster; Cora and pubmed (2 waves and less) 5-10% slower,
/// rows of 37 edges and more as fast or slower.
using HalfWarpTile = Tile<4, 16, 2>;
inline constexpr double kShortRow = 8;
inline constexpr int kShortRowWaves = 4;
/// Blocks per SM the kernel is compiled for: 4 (64 registers) with one operand or an edge
/// weight, 3 with two full operands or a division, whose loads or slow path need more.
/// Measured on the H100 (docs/message_passing.md): copy_u sum 1.1-1.45x faster at 4 than at 2
/// blocks (128 registers).
template <Shape R, bool kDiv>
inline constexpr int kSpmmMinBlocks = R == Shape::None || (R == Shape::Scalar && !kDiv) ? 4 : 3;

/// The forward g-SpMM, in the style of online_kernel: a warp's lane groups take (unit, head)
/// pairs, hp = min(H, GROUPS) heads at once (passes when H > GROUPS) of GROUPS / hp
/// consecutive units; units are the pieces of split rows (first: the longest work starts
/// first), then every row not split. A group keeps its accumulator (and, for max/min, the
/// winning edge's position) in registers and walks its unit's edges in CSR order, U edges in
/// flight per step, the source (and edge) ids of C = max(L, U) edges coming from one coalesced
/// load a chunk ahead, handed out by shuffles; chunks where every group has all its edges run
/// without bounds checks. Every entry is summed edge by edge in CSR order whatever the tile,
/// so results do not depend on the tile (alignment) and are bitwise reproducible; pieces go
/// to partial slots, which merge_segments combines in slot order. blockIdx.y: a slice of
/// MAX_D columns of each head. kExact: D is a multiple of MAX_D, so the chunks without bounds
/// checks load with neither a predicate nor a zero fill (4 instructions per 8 floats fewer;
/// run_gspmm says where it is used).
template <class T, Fold F, Shape kL, Shape kR, bool kDiv, bool kExact>
__global__ void __launch_bounds__(kSpmmThreads, kSpmmMinBlocks<kR, kDiv>)
    gspmm_kernel(MessageParams p, Segments s, int H, int D, SegmentOut o) {
  allow_dependents();  // the merge of split rows (launch_dependent) may get resident
  constexpr int L = T::LANES, U = kSpmmEdges<T, F, kR, kDiv>, K = U > L ? U / L : 1, C = L * K;
  constexpr bool kArgs = F != Fold::Sum, kRhs = kR != Shape::None;
  const int lane = threadIdx.x % kWarp, grp = lane / L, l = lane % L;
  const int hp = H < T::GROUPS ? H : T::GROUPS, units = T::GROUPS / hp;
  const std::int64_t first = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp * units;
  if (first >= std::int64_t(s.num_pieces) + s.count) return;  // whole warps only
  const std::int64_t unit = first + grp / hp;
  const int k0 = int(blockIdx.y) * T::MAX_D;

  node_t n = 0;
  edge_t e0 = 0;
  int len = 0, slot = -1;
  bool mine = false;
  if (unit < s.num_pieces) {
    const Piece pc = s.pieces[unit];
    n = pc.row, e0 = pc.e0, len = int(pc.e1 - pc.e0), slot = pc.slot, mine = true;
  } else if (unit - s.num_pieces < s.count) {
    n = node_t(unit - s.num_pieces);
    const edge_t a = __ldg(s.ptr + n), b = __ldg(s.ptr + n + 1);
    mine = b - a <= s.split;  // else its pieces do it
    if (mine) e0 = a, len = int(b - a);
  }

  for (int pass = 0; pass * hp < H; ++pass) {
    const int head = pass * hp + grp % hp;
    const bool active = mine && head < H;
    const int h = head < H ? head : H - 1;  // idle groups shadow a valid head
    const int n_edges = active ? len : 0;
    const int most = int(__reduce_max_sync(kFull, unsigned(n_edges)));
    // Chunks of C edges that every active group has whole: no bounds checks there.
    const int whole_chunks = int(__reduce_min_sync(kFull, active ? unsigned(n_edges / C) : ~0u >> 1));
    const int whole = min(whole_chunks, most / C) * C;
    const OperandColumns<T, kL> a(p.lhs, h, k0, D, l);
    const OperandColumns<T, kR> b(p.rhs, h, k0, D, l);
    float acc[T::PER_LANE];
    int arg[kArgs ? T::PER_LANE : 1];
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) {
      acc[i] = F == Fold::Sum ? 0.f : F == Fold::Max ? -INFINITY : INFINITY;
      if constexpr (kArgs) arg[i] = -1;
    }
    // Edges pos .. pos + C, fetched a chunk ahead: lane l holds edges pos + k * L + l, their lhs
    // rows and their rhs rows (a Scalar rhs, an edge weight: its value), handed out by
    // shuffles, so a step keeps no 64-bit ids and loads only features (0: valid, past the end).
    using Held = std::conditional_t<kR == Shape::Scalar, float, unsigned>;
    unsigned lcur[K], lnext[K];
    Held rcur[K], rnext[K];
    const auto fetch = [&](int pos) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int i = pos + k * L + l;
        const node_t m = i < n_edges ? __ldg(s.other + e0 + i) : 0;
        const edge_t id = p.ids && i < n_edges ? s.edge(e0 + i) : 0;
        lnext[k] = unsigned(row_of(p.lhs_on, m, n, id));
        const unsigned r = unsigned(row_of(p.rhs_on, m, n, id));
        if constexpr (kR == Shape::Scalar)
          rnext[k] = i < n_edges ? b.scalar(r) : 0.f;
        else
          rnext[k] = r;
      }
    };
    fetch(0);
    const auto chunk = [&](int pos, auto checked) {
      constexpr bool kChecked = decltype(checked)::value;
#pragma unroll
      for (int k = 0; k < K; ++k) lcur[k] = lnext[k], rcur[k] = rnext[k];
      fetch(pos + C);
#pragma unroll
      for (int t0 = 0; t0 < C; t0 += U) {
        if (kChecked && pos + t0 >= most) break;  // warp-uniform
        Frag<T> x[U];
        [[maybe_unused]] Frag<T> y[kR == Shape::Full || kR == Shape::Any ? U : 1];  // a full rhs
#pragma unroll
        for (int j = 0; j < U; ++j) {  // every load first: U rows in flight
          const int t = t0 + j;
          const bool ok = !kChecked || pos + t < n_edges;
          a.template load<!kChecked, kExact>(x[j], __shfl_sync(kFull, lcur[t / L], t % L, L), ok);
          if constexpr (kR != Shape::Scalar && kRhs)
            b.template load<!kChecked, kExact>(y[j], __shfl_sync(kFull, rcur[t / L], t % L, L), ok);
        }
        // Edge j's rhs: its fragment, or an edge weight handed out only now, so that it is not
        // held in a register while the loads are in flight.
        const auto rhs = [&](int j) -> decltype(auto) {
          if constexpr (kR == Shape::Scalar)
            return __shfl_sync(kFull, rcur[(t0 + j) / L], (t0 + j) % L, L);
          else
            return (y[j]);
        };
        if (kFmaSum<F, kR, kDiv> && p.op == BinaryOp::Mul) {  // warp-uniform
#pragma unroll
          for (int j = 0; j < U; ++j) {
            const bool ok = !kChecked || pos + t0 + j < n_edges;
            const auto yj = rhs(j);
#pragma unroll
            for (int i = 0; i < T::PER_LANE; ++i)
              if (ok) acc[i] = __fmaf_rn(x[j].x[i], entry(yj, i), acc[i]);
          }
          continue;
        }
        if constexpr (kRhs) apply_message<T, U, kDiv>(p.op, x, rhs);
#pragma unroll
        for (int j = 0; j < U; ++j) {
          const bool ok = !kChecked || pos + t0 + j < n_edges;
#pragma unroll
          for (int i = 0; i < T::PER_LANE; ++i) {
            const float v = x[j].x[i];  // the message (apply_message wrote it over lhs)
            if constexpr (F == Fold::Sum) {
              if (ok) acc[i] = __fadd_rn(acc[i], v);
            } else if (ok && (F == Fold::Max ? v > acc[i] : v < acc[i])) {  // strict: the first wins ties
              acc[i] = v;
              if constexpr (kArgs) arg[i] = pos + t0 + j;
            }
          }
        }
      }
    };
    int pos = 0;
    for (; pos < whole; pos += C) chunk(pos, std::false_type{});
    for (; pos < most; pos += C) chunk(pos, std::true_type{});
    if (!active) continue;

    // A whole row to out (mean scales by 1/degree; an empty max/min gives 0 and -1), a piece
    // to its slot (max/min with the winners' caller ids, -1 for none).
    const std::size_t at = (std::size_t(slot < 0 ? n : slot) * unsigned(H) + unsigned(head)) * unsigned(D) + k0;
    edge_t* dst_arg = slot < 0 ? o.arg : o.part_arg;  // null: the caller wants no arguments
    edge_t win[kArgs ? T::PER_LANE : 1];
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) {
      if constexpr (kArgs) {
        win[i] = arg[i] < 0 || dst_arg == nullptr ? edge_t(-1) : s.edge(e0 + arg[i]);
        if (slot < 0 && arg[i] < 0) acc[i] = 0.f;
      } else if (slot < 0 && p.inv_degree) {
        acc[i] = __fmul_rn(acc[i], __ldg(p.inv_degree + n));
      }
    }
    float* dst = (slot < 0 ? o.out : o.part) + at;
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c) {
      const int d = frag_col<T>(c, l);
      if (k0 + d >= D) continue;
      if constexpr (T::VEC == 4)
        *reinterpret_cast<float4*>(dst + d) = make_float4(acc[4 * c], acc[4 * c + 1], acc[4 * c + 2], acc[4 * c + 3]);
      else
        dst[d] = acc[c];
      if constexpr (kArgs)
        if (dst_arg != nullptr)
#pragma unroll
          for (int i = 0; i < T::VEC; ++i) dst_arg[at + d + i] = win[T::VEC * c + i];
    }
  }
}

/// A summed term g * s_v * s_u * keep * deriv: the gradients (of g-SpMM: g = dout at V, keep
/// the max/min winners only, s_v = 1/degree for mean, deriv = d message / d operand; of
/// g-SDDMM: g = dout at E, deriv = d op / d x or y) and the GCN aggregation (g = x or dout,
/// s_v s_u = 1/sqrt(d_in(v) d_out(u))).
struct SumParams {
  Access g;
  Target g_on = Target::V;
  const edge_t* arg = nullptr;      ///< [N, W]: keep entry k of edge id iff arg[v][k] == id
  const float* scale_v = nullptr;   ///< [N] per destination, or null
  const float* scale_u = nullptr;   ///< [N] per source, or null
  int deriv = 0;                    ///< 0: none; 1: d op(a, b) / da; 2: / db
  BinaryOp op = BinaryOp::Add;
  Access a, b;
  Target a_on = Target::U, b_on = Target::V;
  bool ids = false;
};

__device__ __forceinline__ float sum_term(const SumParams& p, float g, float s, float a, float b) {
  const float t = g * s;
  return p.deriv == 0 ? t : t * (p.deriv == 1 ? binary_dlhs(p.op, a, b) : binary_drhs(p.op, a, b));
}

__device__ __forceinline__ float node_scales(const SumParams& p, node_t u, node_t v) {
  return (p.scale_v ? __ldg(p.scale_v + v) : 1.f) * (p.scale_u ? __ldg(p.scale_u + u) : 1.f);
}

template <class T>
struct SumTerm {
  using Tile = T;
  using Params = SumParams;
  static constexpr int U = T::PER_LANE <= 4 ? 4 : 2;
  struct Acc {
    float x[T::PER_LANE];
  };

  Params p;
  Lanes<T> g, a, b;
  int kc[T::CHUNKS];  // first entry of each chunk, for the arguments' rows
  int W;
  __device__ SumTerm(const Params& q, int k0, int W_, int D, int l)
      : p(q), g(q.g, k0, W_, D, l), a(q.a, k0, W_, D, l), b(q.b, k0, W_, D, l), W(W_) {
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c) kc[c] = k0 + frag_col<T>(c, l);
  }
  __device__ bool ids() const { return p.ids; }
  __device__ void init(Acc& acc) const {
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = 0.f;
  }

  __device__ void step(Acc& acc, const node_t (&u)[U], const node_t (&v)[U], const edge_t (&id)[U],
                       const bool (&ok)[U]) const {
    Frag<T> gx[U], ax[U], bx[U];
    bool keep[U][T::PER_LANE];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      g.load(gx[j], row_of(p.g_on, u[j], v[j], id[j]), ok[j]);
      if (p.deriv) {
        a.load(ax[j], row_of(p.a_on, u[j], v[j], id[j]), ok[j]);
        b.load(bx[j], row_of(p.b_on, u[j], v[j], id[j]), ok[j]);
      }
#pragma unroll
      for (int c = 0; c < T::CHUNKS; ++c)
#pragma unroll
        for (int i = 0; i < T::VEC; ++i) {
          const int k = kc[c] + i;
          keep[j][T::VEC * c + i] = !p.arg || (ok[j] && k < W && __ldg(p.arg + std::size_t(v[j]) * W + k) == id[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (!ok[j]) continue;
      const float s = node_scales(p, u[j], v[j]);
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i)
        if (keep[j][i])
          acc.x[i] += sum_term(p, gx[j].x[i], s, p.deriv ? ax[j].x[i] : 0.f, p.deriv ? bx[j].x[i] : 0.f);
    }
  }

  __device__ void finish(Acc& acc, node_t n, int, int slot, const SegmentOut& o, int k0, int, int l) const {
    const std::size_t r = std::size_t(slot < 0 ? n : slot) * unsigned(W);
    store_slices<T>((slot < 0 ? o.out : o.part) + r, acc.x, k0, W, l);
  }
};

/// Reduces P's term over each segment (see the file comment). Units: the pieces of split
/// segments first (the longest work starts first), then every segment not split; a warp's
/// GROUPS lane groups take consecutive units and loop as long as the longest, so the warp
/// stays converged for the shuffles. blockIdx.y selects a slice of MAX_D of the W entries.
template <class P>
__global__ void __launch_bounds__(kMpThreads) segment_kernel(typename P::Params params, Segments s, int W, int D,
                                                             SegmentOut o) {
  allow_dependents();  // the merge of split rows (launch_dependent) may get resident
  using T = typename P::Tile;
  constexpr int L = T::LANES, U = P::U;
  static_assert(U <= L, "a lane group holds the ids of L edges at a time");
  const int lane = threadIdx.x % kWarp, l = lane % L;
  const std::int64_t unit = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp * T::GROUPS + lane / L;
  const int k0 = int(blockIdx.y) * T::MAX_D;
  node_t n = -1;
  edge_t e0 = 0;
  int len = 0, slot = -1;
  if (unit < s.num_pieces) {
    const Piece pc = s.pieces[unit];
    n = pc.row, e0 = pc.e0, len = int(pc.e1 - pc.e0), slot = pc.slot;
  } else if (unit - s.num_pieces < s.count) {
    const node_t v = node_t(unit - s.num_pieces);
    const edge_t a = __ldg(s.ptr + v), b = __ldg(s.ptr + v + 1);
    if (b - a <= s.split) n = v, e0 = a, len = int(b - a);
  }
  int steps = len;
#pragma unroll
  for (int off = 16; off > 0; off /= 2) steps = max(steps, __shfl_xor_sync(kFull, steps, off));
  const P term(params, k0, W, D, l);
  typename P::Acc acc;
  term.init(acc);
  for (int base = 0; base < steps; base += L) {
    // One coalesced load of L edges' endpoints (and ids) per group, handed out by shuffles.
    const int pos = base + l;
    const bool mine = pos < len;
    const node_t other = mine ? __ldg(s.other + e0 + pos) : 0;
    const long long id = mine && term.ids() ? s.edge(e0 + pos) : 0;
#pragma unroll
    for (int j0 = 0; j0 < L; j0 += U) {
      if (base + j0 >= steps) break;  // warp-uniform
      node_t u[U], v[U];
      edge_t ids[U];
      bool ok[U];
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const node_t m = __shfl_sync(kFull, other, j0 + j, L);
        ids[j] = __shfl_sync(kFull, id, j0 + j, L);
        ok[j] = base + j0 + j < len;
        u[j] = s.by_source ? n : m;
        v[j] = s.by_source ? m : n;
      }
      term.step(acc, u, v, ids, ok);
    }
  }
  if (n >= 0) term.finish(acc, n, len, slot, o, k0, W, l);
}

/// Combines the partial slots of each split segment in order, VEC consecutive entries of a row
/// per thread (16-byte accesses when VEC = 4: W % 4 == 0 and out aligned): sums (scaled by
/// row_scale, 1/degree for mean, when given) or the first strict max/min with its argument.
template <int VEC>
__global__ void __launch_bounds__(256) merge_segments(const SplitRow* __restrict__ rows, int num_rows, int W, Fold fold,
                                                      const float* __restrict__ row_scale, SegmentOut o) {
  using T = Tile<VEC, 1, 1>;  // a thread's VEC entries
  const std::size_t i = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
  SplitRow r;
  if (!split_row_then_wait(rows, i, std::size_t(num_rows) * unsigned(W), unsigned(W), r)) return;
  const std::size_t k = i % unsigned(W);
  const auto part = [&](int j) { return std::size_t(r.first + j) * unsigned(W) + k; };
  Frag<T> best;
  edge_t win[VEC];
#pragma unroll
  for (int v = 0; v < VEC; ++v) best.x[v] = 0.f, win[v] = -1;
  for_slots(
      r.count,
      [&](int j) {
        Frag<T> x;
        load_global<T>(x, o.part + part(j), VEC, 0);
        return x;
      },
      [&](int j, const Frag<T>& x) {
#pragma unroll
        for (int v = 0; v < VEC; ++v) {
          const float y = x.x[v];
          if (fold == Fold::Sum) {
            best.x[v] += y;
            continue;
          }
          const edge_t a = o.part_arg[part(j) + v];
          if (a >= 0 && (win[v] < 0 || (fold == Fold::Max ? y > best.x[v] : y < best.x[v]))) best.x[v] = y, win[v] = a;
        }
      });
  const std::size_t out = std::size_t(r.row) * unsigned(W) + k;
#pragma unroll
  for (int v = 0; v < VEC; ++v) {
    if (fold == Fold::Sum && row_scale) best.x[v] *= row_scale[r.row];
    if (fold != Fold::Sum && o.arg) o.arg[out + v] = win[v];
  }
  store_row<T>(o.out + out, best, VEC, 0);
}

/// Sums a full [rows, H, D] gradient over the axes an operand [rows, heads, dim] broadcasts.
__global__ void __launch_bounds__(256) reduce_broadcast(const float* __restrict__ full, std::size_t rows, int H, int D,
                                                        int heads, int dim, float* __restrict__ out) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t per_row = std::size_t(heads) * unsigned(dim);
  if (i >= rows * per_row) return;
  const std::size_t n = i / per_row;
  const int hh = int(i % per_row) / dim, dd = int(i % per_row) % dim;
  float s = 0.f;
  for (int h = heads == 1 ? 0 : hh; h < (heads == 1 ? H : hh + 1); ++h)
    for (int d = dim == 1 ? 0 : dd; d < (dim == 1 ? D : dd + 1); ++d) s += full[(n * unsigned(H) + h) * unsigned(D) + d];
  out[i] = s;
}

/// g-SDDMM's value of entry k: op(x_u[k], y_v[k]) (dot: the product, summed per head).
struct SddmmValue {
  BinaryOp op;
  Access x, y;
  __device__ __forceinline__ float operator()(node_t u, node_t v, edge_t, int k, int D) const {
    return binary(op, x.at(std::size_t(u), k, D), y.at(std::size_t(v), k, D));
  }
};

/// A SumParams term of one edge at entry k: an edge gradient.
struct EdgeTerm {
  SumParams p;
  int W;
  __device__ __forceinline__ float operator()(node_t u, node_t v, edge_t id, int k, int D) const {
    if (p.arg && __ldg(p.arg + std::size_t(v) * unsigned(W) + k) != id) return 0.f;
    const float g = p.g.at(row_of(p.g_on, u, v, id), k, D);
    const float a = p.deriv ? p.a.at(row_of(p.a_on, u, v, id), k, D) : 0.f;
    const float b = p.deriv ? p.b.at(row_of(p.b_on, u, v, id), k, D) : 0.f;
    return sum_term(p, g, node_scales(p, u, v), a, b);
  }
};

/// The CSR edges and an edge output [E, heads, dim] in the caller's order.
struct EdgeOut {
  const node_t* src = nullptr;
  const node_t* dst = nullptr;
  const edge_t* edge_id = nullptr;
  edge_t count = 0;
  float* out = nullptr;
  int heads = 0, dim = 0;
};

/// Each edge's H*D values f(u, v, id, k), stored as they are when the output has all of them,
/// else summed over its broadcast axes: output entry (h', d') of an [E, 1|H, 1|D] output takes
/// the k = h * D + d with h in {h'} or all heads and d in {d'} or all features, a warp sum each.
template <class F>
__global__ void __launch_bounds__(kMpThreads) edge_kernel(F f, EdgeOut o, int H, int D) {
  const int lane = threadIdx.x % kWarp;
  const edge_t first = (edge_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp * kEdgesPerWarp;
  const int W = H * D, outs = o.heads * o.dim;
  const bool full = o.heads == H && o.dim == D;
  for (edge_t e = first; e < first + kEdgesPerWarp && e < o.count; ++e) {
    const node_t u = __ldg(o.src + e), v = __ldg(o.dst + e);
    const edge_t id = __ldg(o.edge_id + e);
    float* row = o.out + std::size_t(id) * unsigned(outs);
    if (full) {
      for (int k = lane; k < W; k += kWarp) row[k] = f(u, v, id, k, D);
      continue;
    }
    // Output entry q sums `count` entries k = base + j * step.
    for (int q = 0; q < outs; ++q) {
      const int h = o.heads == 1 ? 0 : q / o.dim, d = o.dim == 1 ? 0 : q % o.dim;
      const int base = h * D + d;
      const int step = o.dim == 1 ? 1 : D;  // along d (within a head, then on) or along heads
      const int count = (o.heads == 1 ? H : 1) * (o.dim == 1 ? D : 1);
      float s = 0.f;
      for (int j = lane; j < count; j += kWarp) s += f(u, v, id, base + j * step, D);
      s = warp_sum(s);
      if (lane == 0) row[q] = s;
    }
  }
}

}  // namespace dfgnn::cuda::detail
