#pragma once
// Each model's backward as a gradient functor G = GradOf<S> (S the score functor, score.cuh),
// whose hooks the generic walks of backward.cuh call: the counterpart of the portable backend's
// GTGrad ... GATv2Grad (backends/kokkos/backward.hpp). All a model knows of its backward is
// here; the walks hold the mapping (units, heads, edges in flight, the score and dr_e of
// docs/backward.md) and no model's name. G declares
//   kRowsFirst, kColsFirst     the orders it has (docs/backward.md, "Two orders")
//   kColsReadEdgeGrad          rows first: the column walk's score term of an edge is the
//                              edge gradient the row walk wrote (read, not recomputed)
//   kSharedEdgeColumns         edge columns may serve every head with one row (EdgeLayout heads
//                              1), their dE summed over the heads after the walks
//   kRowSums                   floats a row slot holds after its padded gradient
//   row_width, col_width, param_width   floats per (slot, head) of the partials
//   row_min_blocks, scored_cols_min_blocks   the launch bounds of its scoring walks
//   merge_col (and merge_row_sums)      the merge's stores of a split column's (row's) sums
// and, per walk it has, a type holding what one lane group keeps of a (unit, head) besides the
// walk's own sums, with the hooks that walk calls at fixed points:
//   Rows<T>        rows first, the scoring row walk (backward_rows): edge() per edge after
//                  dr_e, note() where the edge's (dr, q) is stored, term() per edge of the
//                  destination-side sum, across() after the edges, put() per row unit (the
//                  parameter partials), finish() before the destination-side sum is stored
//   Cols<T>        rows first, the column walk (backward_cols): feature() the destination
//                  rows it gathers, edge(), term(), across(), put() the column's sums; the
//                  column walks keep a scalar sum acc_s for the model (AGNN's, GAT's del)
//   ScoredCols<T>  columns first, the scoring column walk (backward_scored_cols): the
//                  column's own key, queries() the destination rows the score gathers
//                  (QueryRow each), argument() the edge's own scalars, score(), dscore()
//                  (dr_e as stored), term(), across(), put()
//   summed_row     columns first, the row walk of a row key (backward_summed_rows)
// Every sum, the hooks' too, runs in an order fixed by the graph: no atomics, bitwise
// reproducible.

#include "online.cuh"

#include <type_traits>

namespace dfgnn::cuda::detail {

/// dLeakyReLU(x)/dx with the forward's `x > 0` branch.
__device__ __forceinline__ float leaky_relu_grad(float x, float slope) { return x > 0.f ? 1.f : slope; }

/// What the forward left: its output, row statistics (float32 always) and dLoss/dout, of the
/// call's element type E.
template <class E = float>
struct Upstream {
  const E* out;
  const float* lse;
  const E* dout;
};

/// The gradients: at destinations (GT dQ, AGNN dX_dst, GAT der, GATv2 dXR), at sources (GT dK,
/// AGNN dX, GAT del, GATv2 dXL), the value gradient where the values are their own
/// tensor (GT and GAT dV; else null), and the edge argument's (GT and GATv2 dE, GAT dee, by the
/// caller's edge id; null without edge features). Of the call's element type E; every sum
/// behind them runs in float32 and is rounded once where it is stored (the workspaces below are
/// float32 whatever E is).
template <class E = float>
struct Grads {
  E* at_dst;
  E* at_src;
  E* value;
  E* edge = nullptr;
};

/// The workspace of one backward: per (edge, head) at position c of the walk that reads it back,
/// slot c*H + h.
struct BackwardWork {
  float2* dr_q;     ///< rows first: [E*H] (dr_e, q_e = p_e keep_e) at CSC positions
  float* cos;       ///< [E*H] AGNN's cosine
  float* inv_norm;  ///< [N*H] AGNN's 1/|x|
  float* dr;        ///< columns first: [E*H] dr_e (GAT: dr_e L'_e, der's term) at CSR positions
  float* delta;     ///< columns first: [N*H] Delta_v
  float* row_part;  ///< [row slots, H, pad4(row_width(D))]
  float* col_part;  ///< [column slots, H, pad4(col_width(D))]
  float* param;     ///< [N + row slots, H, param_width(D)]: one partial per row unit
  float* param_slices;  ///< [slices, H, param_width(D)]: param_slices' output
};

/// What the row walk knows of an edge's softmax term besides dr_e = w_e r_e: r_e = p_e (keep_e
/// dq_e - Delta_v) and w_e p_e.
struct SoftmaxTerm {
  float residual, weighted_p;
};

__host__ __device__ constexpr int pad4(int w) { return (w + 3) / 4 * 4; }

template <class T>
__device__ __forceinline__ void zero(Frag<T>& f) {
#pragma unroll
  for (int i = 0; i < T::PER_LANE; ++i) f.x[i] = 0.f;
}

template <class T>
__device__ __forceinline__ float dot(const Frag<T>& a, const Frag<T>& b) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < T::PER_LANE; ++i) s = fmaf(a.x[i], b.x[i], s);
  return s;
}

/// acc += c * x
template <class T>
__device__ __forceinline__ void axpy(Frag<T>& acc, float c, const Frag<T>& x) {
#pragma unroll
  for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = fmaf(c, x.x[i], acc.x[i]);
}

/// 1/|x| of a head row held by a lane group of L lanes (0 for a zero vector: AGNN's cosine with
/// it is 0).
template <int L, class T>
__device__ __forceinline__ float inverse_norm(const Frag<T>& x) {
  const float n2 = group_sum<L>(dot(x, x));
  return n2 > 0.f ? rsqrtf(n2) : 0.f;
}

/// Edge j's x in a step of U edges on a group of L lanes: lane j * (L / U) holds it, as
/// reduce_scatter leaves the edges' totals.
template <int L, int U>
__device__ __forceinline__ float edge_value(float x, int j) {
  return __shfl_sync(kFull, x, j * (L / U), L);
}

/// A row or partial slot of a [*, H, width] tensor.
template <class P>
__device__ __forceinline__ P* slot_row(P* base, std::int64_t index, int h, int H, int width) {
  return base + (std::size_t(index) * H + h) * width;
}

/// Stores a unit's sum: a whole segment's in its gradient row (rounded to E once), a piece's in
/// its float32 partial slot for merge_sums.
template <class T, class E>
__device__ __forceinline__ void store_sum(bool whole, E* grad, float* part, const Frag<T>& f, int D, int l) {
  if (whole)
    store_row<T>(grad, f, D, l);
  else
    store_row<T>(part, f, D, l);
}
/// The same for one scalar.
template <class E>
__device__ __forceinline__ void store_sum(bool whole, E* grad, float* part, float x) {
  if (whole)
    *grad = narrow<E>(x);
  else
    *part = x;
}

// ---------------------------------------------------------------------------------------------
// GT: dQ_v = scale sum dr_e K_u (K_u + E_e with edge features); dK_u = scale sum dr_e Q_v and
// dV_u = sum q_e dOut_v, a column slot [dK | dV]; dE_e = scale dr_e Q_v + q_e dOut_v. Both
// orders: rows first gathers two rows an edge in each walk (K_u, V_u, then Q_v, dOut_v);
// columns first holds K_u and V_u, whose gathered Q_v and dOut_v are every operand of the
// score and of dq_e, so that the rows then gather K_u alone, for a pass over dOut and out for
// Delta (Auto: detail::columns_first). With edge features rows first: the row walk holds Q_v
// and dOut_v for dE.

template <class E>
struct GTGrad {
  using Score = GTScore<E>;
  static constexpr bool kRowsFirst = true, kColsFirst = true;
  static constexpr bool kColsReadEdgeGrad = false;
  static constexpr bool kSharedEdgeColumns = true;
  static constexpr int kRowSums = 0;
  __host__ __device__ static constexpr int row_width(int D) { return D; }
  __host__ __device__ static constexpr int col_width(int D) { return 2 * D; }
  __host__ __device__ static constexpr int param_width(int) { return 0; }
  template <class T, bool kDrop>
  __host__ __device__ static constexpr int row_min_blocks() {
    return kOnlineRowMinBlocks<Score, T, kDrop>;
  }
  /// 3 blocks (80 registers) where a group holds K_u and V_u besides 4 edges of Q and dOut
  /// fragments in flight. The GT backward against it (H100, 7 graphs, 1x128 and 4x32;
  /// docs/backward.md, "Two orders"): 4 blocks spilled 96-144 bytes and was 10-45% slower; 4
  /// blocks with 2 edges in flight 1-7% slower on the batches and sparse graphs of high degree;
  /// 2 blocks 3-9% slower.
  template <class T>
  __host__ __device__ static constexpr int scored_cols_min_blocks() {
    return T::PER_LANE == 4 && kOnlineEdges<T> == 4 ? 3 : kOnlineMinBlocks<T>;
  }

  /// f *= scale: the gradients of Q and K carry the score's scale, and so does the held K_u.
  template <class T>
  __device__ static void scale(const Score& sc, Frag<T>& f) {
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) f.x[i] *= sc.scale;
  }

  template <class T>
  struct Rows {
    using Query = typename Score::template Query<T>;
    __device__ Rows(const Score&, const Query&) {}
    __device__ float edge(const float (&)[Score::kParts], float dr, SoftmaxTerm) { return dr; }
    __device__ void note(const BackwardWork&, std::size_t) const {}
    /// acc += dr K_u; kEdge: dE = scale dr Q_v + q dOut_v (qv holds scale Q_v).
    template <bool kEdge>
    __device__ void term(const Score&, const Query& qv, const Frag<T>& k, int j, float cj, float q,
                         const Frag<T>& dout, Frag<T>& acc, Frag<T>& de) {
      axpy(acc, cj, k);
      if constexpr (kEdge) {
        const float qj = edge_value<T::LANES, kOnlineEdges<T>>(q, j);
#pragma unroll
        for (int i = 0; i < T::PER_LANE; ++i) de.x[i] = fmaf(cj, qv.x.x[i], qj * dout.x[i]);
      }
    }
    __device__ void across() {}
    __device__ void put(const BackwardWork&, node_t, int, std::int64_t, int, int, int, int) const {}
    __device__ void finish(const Score& sc, const Query&, Frag<T>& acc, int) const { scale(sc, acc); }
  };

  template <class T>
  struct Cols {
    __device__ static const E* feature(const Score& sc) { return sc.q; }
    __device__ Cols(const Score&, node_t, int, int, int, int) {}
    __device__ float edge(const BackwardWork&, bool, std::size_t, node_t, int, int, float dr, float&) const {
      return dr;
    }
    template <bool kEdge>
    __device__ void term(const Score&, float cj, const Frag<T>& q, Frag<T>& acc) const {
      axpy(acc, cj, q);
    }
    __device__ void across(float&) const {}
    __device__ void put(const Score& sc, const Grads<E>& gr, bool whole, float* part, Frag<T>& acc,
                        const Frag<T>& acc_value, float, node_t u, int h, int H, int D, int l) const {
      scale(sc, acc);
      store_sum(whole, slot_row(gr.at_src, u, h, H, D), part, acc, D, l);
      store_sum(whole, slot_row(gr.value, u, h, H, D), part + D, acc_value, D, l);
    }
  };

  /// Columns first: the column holds scale K_u and gathers Q_v for the score; dK sums dr_e Q_v.
  template <class T>
  struct ScoredCols {
    using QueryRow = Frag<T>;  ///< Q_v
    __device__ static HeadColumns<T, E> queries(const Score& sc, int H, int D, int h, int l) {
      return {sc.q, H, D, h, l};
    }
    Frag<T> key;
    Frag<T> acc_key;  ///< dK / scale
    __device__ ScoredCols(const Score& sc, node_t u, int h, int H, int D, int l) {
      load_global<T>(key, sc.key + (std::size_t(u) * H + h) * D, D, l);
      scale(sc, key);
      zero(acc_key);
    }
    template <bool kEdge>
    __device__ float argument(const Score&, std::size_t, edge_t, int, int, bool) const {
      return 0.f;
    }
    __device__ float score(const Score&, const QueryRow (&q)[kOnlineEdges<T>], float, int l) const {
      constexpr int U = kOnlineEdges<T>;
      float x[U];
#pragma unroll
      for (int j = 0; j < U; ++j) x[j] = dot(q[j], key);
      reduce_scatter<T::LANES, U>(x, l);
      return x[0];
    }
    __device__ float dscore(const Score&, float, float dr, float&) const { return dr; }
    __device__ void term(int j, float dr, const QueryRow& q) {
      axpy(acc_key, edge_value<T::LANES, kOnlineEdges<T>>(dr, j), q);
    }
    __device__ void across(float&) const {}
    __device__ void put(const Score& sc, const Grads<E>& gr, bool whole, float* part, const Frag<T>& acc_value,
                        float, node_t u, int h, int H, int D, int l) {
      scale(sc, acc_key);
      store_sum(whole, slot_row(gr.at_src, u, h, H, D), part, acc_key, D, l);
      store_sum(whole, slot_row(gr.value, u, h, H, D), part + D, acc_value, D, l);
    }
  };

  /// Columns first, the rows: dQ_v = scale sum dr_e K_u.
  template <class T>
  __device__ static void summed_row(const Score& sc, Frag<T>& acc) {
    scale(sc, acc);
  }

  __device__ static void merge_col(const Grads<E>& gr, std::size_t node_head, int f, int D, float s) {
    (f < D ? gr.at_src : gr.value)[node_head * D + f % D] = narrow<E>(s);
  }
};

/// dE of GT's edge columns that one row serves for H > 1 heads (EdgeLayout heads 1), after step
/// 1: entry f of CSR edge e sums the heads' terms scale dr_e Q_v + q_e dOut_v over the last F
/// columns in head order, from the (dr, q) step 1 left at e's CSC position. A thread an entry.
template <class E>
__global__ void shared_edge_grad(const E* __restrict__ q, const E* __restrict__ dout, float scale, DeviceGraph g,
                                 const edge_t* __restrict__ csc_pos, const float2* __restrict__ dr_q, int H, int D,
                                 int F, E* __restrict__ de) {
  const std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= std::int64_t(g.num_edges) * F) return;
  const edge_t e = k / F;
  const int f = int(k % F);
  const node_t v = __ldg(g.dst + e);
  const std::size_t c = std::size_t(__ldg(csc_pos + e)) * H, at = std::size_t(v) * H * D + (D - F) + f;
  float x = 0.f;
  for (int h = 0; h < H; ++h) {
    const float2 t = __ldg(dr_q + c + h);
    x = fmaf(scale * t.x, load_one(q + at + std::size_t(h) * D), fmaf(t.y, load_one(dout + at + std::size_t(h) * D), x));
  }
  de[std::size_t(caller_edge(g.edge_id, e)) * F + f] = narrow<E>(x);
}

// ---------------------------------------------------------------------------------------------
// AGNN: cos_e = <y_v, x_u> n_v n_u (y = X_dst, x = X, n = 1/|.|). dX_dst,v = beta (n_v sum dr_e
// n_u x_u - n_v^2 (sum dr_e cos_e) y_v) at the destination, dX_u the same with the roles swapped
// at the source plus sum q_e dOut_v (X is also the values); where X stands in for X_dst the two
// are one buffer, the column walk adding to what the row walk wrote. dbeta = sum dr_e cos_e, one
// partial per row unit. Rows first only: its row walk gathers x_u for its own gradient in
// either order, so columns first would save it nothing. The row walk keeps cos_e and n_v for
// the column walk.

template <class E>
struct AGNNGrad {
  using Score = AGNNScore<E>;
  static constexpr bool kRowsFirst = true, kColsFirst = false;
  static constexpr bool kColsReadEdgeGrad = false;
  static constexpr bool kSharedEdgeColumns = false;
  /// Whether dbeta takes out's rounding out of Delta_v: in two-byte calls, where the row walk
  /// sums R_v = sum_e r_e (SoftmaxTerm::residual) and C_v = sum_e w_e p_e cos_e besides S_v =
  /// sum_e dr_e cos_e, and the row's partial is S_v - R_v C_v (docs/backward.md, "dbeta of a
  /// two-byte call").
  static constexpr bool kCentred = !std::is_same_v<E, float>;
  /// A piece's R and C after its padded dX, whatever the type, so that one plan serves every type.
  static constexpr int kRowSums = 2;
  __host__ __device__ static constexpr int row_width(int D) { return pad4(D) + kRowSums; }
  __host__ __device__ static constexpr int col_width(int D) { return D; }
  __host__ __device__ static constexpr int param_width(int) { return 1; }
  /// 3 blocks (80 registers) wherever a group has 4 edges in flight: at 64 registers its cosine
  /// terms spilled 64-130 bytes, and 3 blocks made its backward up to 7% faster (GATv2's, which
  /// spills as much, got 2-5% slower; docs/backward.md).
  template <class T, bool kDrop>
  __host__ __device__ static constexpr int row_min_blocks() {
    return kOnlineEdges<T> == 4 ? 3 : kOnlineRowMinBlocks<Score, T, kDrop>;
  }

  __device__ static float beta_of(const Score& sc, int h) { return load_one(sc.beta + (sc.beta_count == 1 ? 0 : h)); }

  template <class T>
  struct Rows {
    using Query = typename Score::template Query<T>;
    float inv_norm_v;
    float acc_s = 0.f;  ///< this lane's edges: sum dr c
    float acc_r = 0.f, acc_c = 0.f;  ///< and R and C (kCentred)
    float cosine = 0.f;  ///< the step's edge's, for note()
    __device__ Rows(const Score&, const Query& qv) : inv_norm_v(inverse_norm<T::LANES>(qv.x)) {}
    __device__ float edge(const float (&parts)[Score::kParts], float dr, SoftmaxTerm t) {
      const float inv_norm_u = parts[1] > 0.f ? rsqrtf(parts[1]) : 0.f;
      cosine = parts[0] * inv_norm_v * inv_norm_u;
      const float coef = dr * inv_norm_u;
      acc_s += dr * cosine;
      if constexpr (kCentred) acc_r += t.residual, acc_c += t.weighted_p * cosine;
      return coef;
    }
    __device__ void note(const BackwardWork& wk, std::size_t c) const { wk.cos[c] = cosine; }
    template <bool kEdge>
    __device__ void term(const Score&, const Query&, const Frag<T>& k, int, float cj, float, const Frag<T>&,
                         Frag<T>& acc, Frag<T>&) const {
      axpy(acc, cj, k);
    }
    __device__ void across() {
      constexpr int L = T::LANES, U = kOnlineEdges<T>;
      const auto add = [](float x, float y) { return x + y; };
      acc_s = across_edges<L, U>(acc_s, add);
      if constexpr (kCentred) acc_r = across_edges<L, U>(acc_r, add), acc_c = across_edges<L, U>(acc_c, add);
    }
    /// The row's 1/|x| and dbeta partial; a piece of a two-byte call leaves R and C to
    /// merge_sums, which adds -R C.
    __device__ void put(const BackwardWork& wk, node_t v, int slot, std::int64_t unit, int h, int H, int D,
                        int l) const {
      if (slot < 0 && l == 0) wk.inv_norm[std::size_t(v) * H + h] = inv_norm_v;
      float param = acc_s;
      if constexpr (kCentred) {
        if (slot < 0)
          param -= acc_r * acc_c;
        else if (l == 0)
          *reinterpret_cast<float2*>(slot_row(wk.row_part, slot, h, H, pad4(row_width(D))) + pad4(D)) =
              make_float2(acc_r, acc_c);
      }
      if (l == 0) wk.param[std::size_t(unit) * H + h] = param;
    }
    /// dX_dst,v = beta (n_v sum dr n_u x_u - n_v^2 (sum dr c) y_v)
    __device__ void finish(const Score& sc, const Query& qv, Frag<T>& acc, int h) const {
      const float beta = beta_of(sc, h);
      const float scale = beta * inv_norm_v, self = beta * inv_norm_v * inv_norm_v * acc_s;
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = fmaf(-self, qv.x.x[i], acc.x[i] * scale);
    }
  };

  template <class T>
  struct Cols {
    Frag<T> self;  ///< x_u
    float inv_norm_u, beta;
    __device__ static const E* feature(const Score& sc) { return sc.q; }
    __device__ Cols(const Score& sc, node_t u, int h, int H, int D, int l) {
      load_global<T>(self, sc.key + (std::size_t(u) * H + h) * D, D, l);
      inv_norm_u = inverse_norm<T::LANES>(self);
      beta = beta_of(sc, h);
    }
    /// acc_s: this lane's edges' sum beta dr c.
    __device__ float edge(const BackwardWork& wk, bool ok, std::size_t c, node_t v, int h, int H, float dr,
                          float& acc_s) const {
      const float inv_norm_v = ok ? __ldg(wk.inv_norm + std::size_t(v) * H + h) : 0.f;
      const float coef = beta * dr * inv_norm_u * inv_norm_v;
      acc_s += ok ? beta * dr * __ldg(wk.cos + c) : 0.f;
      return coef;
    }
    template <bool kEdge>
    __device__ void term(const Score&, float cj, const Frag<T>& x, Frag<T>& acc) const {
      axpy(acc, cj, x);
    }
    __device__ void across(float& acc_s) const {
      acc_s = across_edges<T::LANES, kOnlineEdges<T>>(acc_s, [](float x, float y) { return x + y; });
    }
    /// dX_u = beta sum dr (n_u n_v y_v - c n_u^2 x_u) + q dOut_v (on the row walk's where
    /// X stands in for X_dst).
    __device__ void put(const Score&, const Grads<E>& gr, bool whole, float* part, Frag<T>& acc, const Frag<T>&,
                        float acc_s, node_t u, int h, int H, int D, int l) const {
      const float s = inv_norm_u * inv_norm_u * acc_s;
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = fmaf(-s, self.x[i], acc.x[i]);
      if (whole && gr.at_src == gr.at_dst) {  // the row walk wrote the destination side
        Frag<T> before;
        load_global<T>(before, slot_row(gr.at_src, u, h, H, D), D, l);
#pragma unroll
        for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] += before.x[i];
      }
      store_sum(whole, slot_row(gr.at_src, u, h, H, D), part, acc, D, l);
    }
  };

  /// The row sums' chunk of a split row: the whole row's unit's dbeta partial -R C (its walk
  /// left 0).
  __device__ static void merge_row_sums(const float (&sum)[4], float* param, std::size_t node_head) {
    if constexpr (kCentred) param[node_head] = -sum[0] * sum[1];
  }
  /// The column side's share (on the row side's, rounded once before, where both are dX).
  __device__ static void merge_col(const Grads<E>& gr, std::size_t node_head, int f, int D, float s) {
    E& g = gr.at_src[node_head * D + f];
    g = narrow<E>(gr.at_src == gr.at_dst ? widen(g) + s : s);
  }
};

// ---------------------------------------------------------------------------------------------
// GAT: d score / d el_u = d score / d er_v = d score / d ee_e = LeakyReLU'(el_u + er_v + ee_e)
// = L'_e. Columns first only: the column holds el_u and V_u, gathers dOut_v and er_v, sums
// del_u = sum dr_e L'_e and dV_u = sum q_e dOut_v (a column slot [dV | del]) and leaves dr_e
// L'_e (with edge features also dee_e) for der_v, a sum of scalars.

template <class E>
struct GATGrad {
  using Score = GATScore<E>;
  static constexpr bool kRowsFirst = false, kColsFirst = true;
  static constexpr bool kColsReadEdgeGrad = false;
  static constexpr bool kSharedEdgeColumns = false;
  static constexpr int kRowSums = 0;
  __host__ __device__ static constexpr int row_width(int) { return 1; }
  __host__ __device__ static constexpr int col_width(int D) { return D + 1; }
  __host__ __device__ static constexpr int param_width(int) { return 0; }
  template <class T>
  __host__ __device__ static constexpr int scored_cols_min_blocks() {
    return kOnlineMinBlocks<T>;
  }

  template <class T>
  struct ScoredCols {
    /// No row: the score's er_v is a scalar of the lane's own edge (argument).
    struct QueryRow {};
    struct Queries {
      template <bool kAll>
      __device__ void load(QueryRow&, node_t, bool) const {}
    };
    __device__ static Queries queries(const Score&, int, int, int, int) { return {}; }
    float el_u;
    __device__ ScoredCols(const Score& sc, node_t u, int h, int H, int, int)
        : el_u(load_one(sc.key + std::size_t(u) * H + h)) {}
    /// er_v (+ ee_e): the LeakyReLU's argument less el_u.
    template <bool kEdge>
    __device__ float argument(const Score& sc, std::size_t vh, edge_t id, int h, int H, bool ok) const {
      float er_v = ok ? load_one(sc.er + vh) : 0.f;
      if constexpr (kEdge) er_v += ok ? load_one(sc.edge + std::size_t(id) * H + h) : 0.f;
      return er_v;
    }
    __device__ float score(const Score& sc, const QueryRow (&)[kOnlineEdges<T>], float er_v, int) const {
      return leaky_relu(el_u + er_v, sc.slope);
    }
    /// dr_e L'_e: der's, del's and dee's term; acc_s: this lane's edges' sum of it (del).
    __device__ float dscore(const Score& sc, float er_v, float dr, float& acc_s) const {
      dr *= leaky_relu_grad(el_u + er_v, sc.slope);
      acc_s += dr;
      return dr;
    }
    __device__ void term(int, float, const QueryRow&) const {}
    __device__ void across(float& acc_s) const {
      acc_s = across_edges<T::LANES, kOnlineEdges<T>>(acc_s, [](float x, float y) { return x + y; });
    }
    __device__ void put(const Score&, const Grads<E>& gr, bool whole, float* part, const Frag<T>& acc_value,
                        float acc_s, node_t u, int h, int H, int D, int l) const {
      store_sum(whole, slot_row(gr.value, u, h, H, D), part, acc_value, D, l);
      if (l == 0) store_sum(whole, gr.at_src + std::size_t(u) * H + h, part + D, acc_s);
    }
  };

  __device__ static void merge_col(const Grads<E>& gr, std::size_t node_head, int f, int D, float s) {
    if (f < D)
      gr.value[node_head * D + f] = narrow<E>(s);
    else
      gr.at_src[node_head] = narrow<E>(s);
  }
};

// ---------------------------------------------------------------------------------------------
// GATv2: d score / d XR_v,f = d score / d XL_u,f = d score / d E_e,f = a_f LeakyReLU'(XL_u,f +
// XR_v,f + E_e,f); XL is also the values; da sums dr_e LeakyReLU(z_e), one partial per row unit.
// Rows first only: its row walk gathers XL_u for its own gradient in either order. With edge
// features the row walk writes each edge's term as dE_e, which the column walk then reads for
// dXL instead of recomputing it.

template <class E>
struct GATv2Grad {
  using Score = GATv2Score<E>;
  static constexpr bool kRowsFirst = true, kColsFirst = false;
  static constexpr bool kColsReadEdgeGrad = true;
  static constexpr bool kSharedEdgeColumns = false;
  static constexpr int kRowSums = 0;
  __host__ __device__ static constexpr int row_width(int D) { return D; }
  __host__ __device__ static constexpr int col_width(int D) { return D; }
  __host__ __device__ static constexpr int param_width(int D) { return D; }
  template <class T, bool kDrop>
  __host__ __device__ static constexpr int row_min_blocks() {
    return kOnlineRowMinBlocks<Score, T, kDrop>;
  }

  template <class T>
  struct Rows {
    using Query = typename Score::template Query<T>;
    Frag<T> acc_param;  ///< the row's share of da
    __device__ Rows(const Score&, const Query&) { zero(acc_param); }
    __device__ float edge(const float (&)[Score::kParts], float dr, SoftmaxTerm) { return dr; }
    __device__ void note(const BackwardWork&, std::size_t) const {}
    /// kEdge: the term once, as dE and in dXR alike.
    template <bool kEdge>
    __device__ void term(const Score& sc, const Query& qv, const Frag<T>& k, int, float cj, float, const Frag<T>&,
                         Frag<T>& acc, Frag<T>& de) {
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) {
        const float z = k.x[i] + qv.xr.x[i];
        if constexpr (kEdge) {
          de.x[i] = cj * qv.a.x[i] * leaky_relu_grad(z, sc.slope);
          acc.x[i] += de.x[i];
        } else {
          acc.x[i] = fmaf(cj * qv.a.x[i], leaky_relu_grad(z, sc.slope), acc.x[i]);
        }
        acc_param.x[i] = fmaf(cj, leaky_relu(z, sc.slope), acc_param.x[i]);
      }
    }
    __device__ void across() {}
    __device__ void put(const BackwardWork& wk, node_t, int, std::int64_t unit, int h, int H, int D, int l) const {
      store_row<T>(slot_row(wk.param, unit, h, H, D), acc_param, D, l);
    }
    __device__ void finish(const Score&, const Query&, Frag<T>&, int) const {}
  };

  template <class T>
  struct Cols {
    Frag<T> self, a;  ///< XL_u and a[h]
    __device__ static const E* feature(const Score& sc) { return sc.xr; }
    __device__ Cols(const Score& sc, node_t u, int h, int H, int D, int l) {
      load_global<T>(self, sc.key + (std::size_t(u) * H + h) * D, D, l);
      load_global<T>(a, sc.a + std::size_t(h) * D, D, l);
    }
    __device__ float edge(const BackwardWork&, bool, std::size_t, node_t, int, int, float dr, float&) const {
      return dr;
    }
    /// kEdge: the edge's dE, gathered in place of XR_v.
    template <bool kEdge>
    __device__ void term(const Score& sc, float cj, const Frag<T>& xr, Frag<T>& acc) const {
      if constexpr (kEdge) {
        add(acc, xr);
      } else {
#pragma unroll
        for (int i = 0; i < T::PER_LANE; ++i)
          acc.x[i] = fmaf(cj * a.x[i], leaky_relu_grad(self.x[i] + xr.x[i], sc.slope), acc.x[i]);
      }
    }
    __device__ void across(float&) const {}
    __device__ void put(const Score&, const Grads<E>& gr, bool whole, float* part, Frag<T>& acc, const Frag<T>&,
                        float, node_t u, int h, int H, int D, int l) const {
      store_sum(whole, slot_row(gr.at_src, u, h, H, D), part, acc, D, l);
    }
  };

  __device__ static void merge_col(const Grads<E>& gr, std::size_t node_head, int f, int D, float s) {
    gr.at_src[node_head * D + f] = narrow<E>(s);
  }
};

/// Each score's gradient functor (a new model adds its functor above and its line here);
/// declared only, for GradOf.
template <class E>
GTGrad<E> grad_type(GTScore<E>);
template <class E>
AGNNGrad<E> grad_type(AGNNScore<E>);
template <class E>
GATGrad<E> grad_type(GATScore<E>);
template <class E>
GATv2Grad<E> grad_type(GATv2Score<E>);
template <class S>
using GradOf = decltype(grad_type(std::declval<S>()));

}  // namespace dfgnn::cuda::detail
