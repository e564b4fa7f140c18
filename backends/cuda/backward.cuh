#pragma once
// The fused backward (docs/backward.md, "CUDA-native"): two segment walks in the Online
// kernel's register-resident style. One walk recomputes each edge's score with the forward's
// functor, p_e = exp(s_e - lse_v), dq_e = <dOut_v, value_u> and dr_e = w_e p_e (keep_e dq_e -
// Delta_v), Delta_v = <dOut_v, out_v>, and leaves dr_e at the edge's position in the other
// walk's order; the other walk reads it back in order. Two orders (kRowsFirst, kColsFirst):
//   rows first (GT, AGNN, GATv2): a lane group per (CSR row or piece, head) gathers K_u and
//            V_u (AGNN x_u, GATv2 XL_u), sums dQ (dX, dXR) and leaves (dr_e, q_e = p_e keep_e)
//            at CSC positions; then the columns gather Q_v (x_v, XR_v) and dOut_v.
//   columns first (GT, GAT): row_deltas computes Delta; a lane group per (CSC column or piece,
//            head) holds K_u, V_u (GAT el_u, V_u), gathers Q_v and dOut_v (GAT: dOut_v), sums
//            dK, dV (del, dV) and leaves dr_e (GAT dr_e L'_e) at CSR positions; then the rows
//            gather only K_u for dQ (GAT: add up der, no rows at all).
// Segments above `split` edges are cut into pieces (listed first, so the long work starts
// first) whose partial sums merge_sums adds in slot order. The parameter gradients (AGNN's
// beta, GATv2's a) leave one partial per row unit, summed by a fixed two-level reduction. Every
// sum runs in an order fixed by the graph: no atomics, bitwise reproducible.

#include "merge.cuh"
#include "online.cuh"

#include <algorithm>
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

/// The gradients: at destinations (GT dQ, AGNN dX, GAT der, GATv2 dXR), at sources (GT dK,
/// AGNN dX again, GAT del, GATv2 dXL), the value gradient where the values are their own
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
  float* row_part;  ///< [row slots, H, row_stride(D)]
  float* col_part;  ///< [column slots, H, col_stride(D)]
  float* param;     ///< [N + row slots, H, param_width(D)]: one partial per row unit
  float* param_slices;  ///< [slices, H, param_width(D)]: param_slices' output
};

/// The orders a score kind has (docs/backward.md, "Two orders"). Columns first (GT, GAT):
/// the column walk gathers Q_v and dOut_v (GAT: dOut_v) and holds K_u and V_u as its own rows,
/// so the rows then gather one row per edge (GT's K_u) or none (GAT) instead of two, for a
/// separate pass over dOut and out for Delta. Rows first (GT, AGNN, GATv2): AGNN's and GATv2's
/// row walk gathers x_u (XL_u) for its own gradient either way, so columns first would save
/// them nothing.
template <class S>
inline constexpr bool kColsFirst = S::kKind == ScoreKind::GT || S::kKind == ScoreKind::GAT;
template <class S>
inline constexpr bool kRowsFirst = S::kKind != ScoreKind::GAT;

/// Elements a lane of the walks loads at once, whatever the type: 16 bytes of floats, 8 of a
/// two-byte type. On 16-byte lanes of 8 two-byte elements a lane held twice the query rows and
/// sums of a float lane, which left 2 edges in flight a group where floats have 4, spilled up to
/// 380 bytes at 64 registers (GATv2's row walk) and held GT's column walk to 2 blocks an SM: the
/// two-byte backward ran 0.58-0.84x float32's on R-MAT. On lanes of 4 the walks are float32's,
/// with its registers and edges in flight, on half the bytes: 1.15-1.87x faster there, on
/// tolokers and for GATv2 everywhere (docs/cuda.md, "Element types").
inline constexpr int kWalkVec = 4;

/// Mean in-degree below which GAT's two-byte walks keep 16-byte lanes of 8 (gat_wide_lanes): two
/// columns a warp, 2 edges in flight each, where the short columns of lanes of 4 leave lanes
/// idle. Lanes of 4 against 8, GAT backward at 1x128 and 4x32 (H200): web-NotreDame (mean 7)
/// 0.77-0.86x, PATTERN-like (49) 0.94-0.97x; tolokers (88) 1.0-1.16x, rmat-s17-d64 (54)
/// 1.15-1.42x.
inline constexpr double kGatNarrowLanesDegree = 52;


/// Whether GAT's two-byte walks take 16-byte lanes of 8 elements instead of kWalkVec: below
/// kGatNarrowLanesDegree, for D a multiple of 8.
inline bool gat_wide_lanes(const DeviceGraph& g, int D) {
  return D % 8 == 0 && double(g.num_edges) < kGatNarrowLanesDegree * double(g.num_nodes);
}

/// The segments of one walk: rows (CSR) or columns (CSC), and the pieces of those above split.
struct Segments {
  const edge_t* ptr;  ///< [count + 1]
  const node_t* ids;  ///< [E] the other end of each edge (CSR: sources, CSC: destinations)
  node_t count;
  edge_t split;
  const Piece* pieces;
  int num_pieces;
  const edge_t* edge_id;  ///< [E] each position's caller's edge id, where the edge features are
};

/// The pieces of one walk's segments above split, and the segments they belong to.
struct SplitSegments {
  const Piece* pieces = nullptr;
  int num_pieces = 0;
  const SplitRow* split = nullptr;
  int num_split = 0;
  int slots = 0;
  bool uneven = false;  ///< degrees uneven by Online's statistic: walked in blocks of 4 warps
};

/// A lane group's unit: a piece (slot >= 0) or a whole segment (slot < 0); a segment above
/// split has no edges here (its pieces take them) and does not gather.
struct Unit {
  node_t node = 0;
  edge_t e0 = 0, e1 = 0;
  int slot = -1;
  bool valid = false, gathers = false;

  Unit() = default;  // an idle group's: the groups past slots * hp when hp does not divide GROUPS
  __device__ Unit(const Segments& s, std::int64_t i) {
    if (i < s.num_pieces) {
      const Piece p = s.pieces[i];
      node = p.row, e0 = p.e0, e1 = p.e1, slot = p.slot, valid = gathers = true;
      return;
    }
    i -= s.num_pieces;
    if (i >= s.count) return;
    node = node_t(i), valid = true;
    e0 = __ldg(s.ptr + i), e1 = __ldg(s.ptr + i + 1);
    gathers = e1 - e0 <= s.split;
    if (!gathers) e1 = e0;
  }
};

/// Whether AGNN's dbeta takes out's rounding out of Delta_v: in two-byte calls, where the row
/// walk sums R_v = sum_e r_e, r_e = p_e (keep_e dq_e - Delta_v), and C_v = sum_e w_e p_e cos_e
/// besides S_v = sum_e dr_e cos_e, and the row's partial is S_v - R_v C_v (docs/backward.md,
/// "dbeta of a two-byte call").
template <class S>
inline constexpr bool kCentredBeta = S::kKind == ScoreKind::AGNN && !kFloat<S>;

/// Floats per (slot, head) of the partials: the widest gather of a side, padded to 16 bytes
/// where it is stored; AGNN's row slots then hold a piece's R and C (kCentredBeta), whatever
/// the type, so that one plan serves every type.
template <class S>
__host__ __device__ constexpr int row_width(int D) {
  return S::kKind == ScoreKind::GAT ? 1 : S::kKind == ScoreKind::AGNN ? (D + 3) / 4 * 4 + 2 : D;
}
template <class S>
__host__ __device__ constexpr int col_width(int D) {
  return S::kKind == ScoreKind::GT ? 2 * D : S::kKind == ScoreKind::GAT ? D + 1 : D;
}
__host__ __device__ constexpr int pad4(int w) { return (w + 3) / 4 * 4; }
/// Floats per (row unit, head) of the parameter partials.
template <class S>
__host__ __device__ constexpr int param_width(int D) {
  return S::kKind == ScoreKind::AGNN ? 1 : S::kKind == ScoreKind::GATv2 ? D : 0;
}

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

/// The lane group's (unit, head) for `pass` and the warp's step counts, as in the Online kernel.
template <int U>
struct GroupWork {
  bool active;
  int head, h, len, steps, full;
  __device__ GroupWork(const Unit& u, int pass, int hp, int grp, int H) {
    head = pass * hp + grp % hp;
    active = u.valid && head < H;
    h = head < H ? head : H - 1;  // idle groups shadow a valid head
    len = active ? int(u.e1 - u.e0) : 0;
    steps = int(__reduce_max_sync(kFull, unsigned((len + U - 1) / U)));
    full = min(steps, int(__reduce_min_sync(kFull, active ? unsigned(len / U) : ~0u >> 1)));
  }
};

/// A lane's place in a walk: lane l of group grp, hp heads at once and T::GROUPS / hp units a
/// warp. `past`: the whole warp is beyond the walk's units (it returns); else unit() is the
/// group's unit.
template <class T>
struct WalkLane {
  int l, grp, hp, slots;
  std::int64_t first;  ///< the warp's first unit
  bool past;
  __device__ WalkLane(const Segments& segs, int H) {
    const int lane = threadIdx.x % kWarp;
    l = lane % T::LANES, grp = lane / T::LANES, hp = H < T::GROUPS ? H : T::GROUPS, slots = T::GROUPS / hp;
    first = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp * slots;
    past = first >= segs.num_pieces + std::int64_t(segs.count);
  }
  __device__ Unit unit(const Segments& segs) const { return grp / hp < slots ? Unit(segs, first + grp / hp) : Unit(); }
};

/// Blocks per SM of the row walk: Online's, and 3 (80 registers) for AGNN wherever a group has
/// 4 edges in flight: at 64 registers its cosine terms spilled 64-130 bytes, and 3 blocks made
/// its backward up to 7% faster (GATv2's, which spills as much, got 2-5% slower; docs/backward.md).
template <class S, class T, bool kDrop>
inline constexpr int kRowWalkMinBlocks =
    S::kKind == ScoreKind::AGNN && kOnlineEdges<T> == 4 ? 3 : kOnlineRowMinBlocks<S, T, kDrop>;

// ---------------------------------------------------------------------------------------------
// Rows first (GT, AGNN, GATv2)

/// Step 1, the rows. kExact: D fills the tile, so full steps load without predicates. kEdge
/// (GT, GATv2): each edge's features join its key (GT's value too, score.cuh) as they load, and
/// the walk writes each edge's gradient dE: GT scale dr_e Q_v + q_e dOut_v, GATv2 the score's
/// per-feature term, which step 2 then reads for dXL instead of recomputing it.
template <class S, class T, bool kDrop, bool kExact, bool kEdge = false>
__global__ void __launch_bounds__(kOnlineThreads, kRowWalkMinBlocks<S, T, kDrop>)
    backward_rows(S sc, Segments rows, EdgeScaleOf<typename S::Elem> w, Train tr, Upstream<typename S::Elem> up,
                  Grads<typename S::Elem> gr, BackwardWork wk, const edge_t* __restrict__ csc_pos, int H, int D) {
  static_assert(kRowsFirst<S> && (!kEdge || S::kKind != ScoreKind::AGNN));
  using E = typename S::Elem;
  allow_dependents();  // the merge of split rows, else step 2, may get resident
  constexpr int U = kOnlineEdges<T>;
  constexpr int L = T::LANES;
  constexpr bool kAGNN = S::kKind == ScoreKind::AGNN, kGATv2 = S::kKind == ScoreKind::GATv2;
  const WalkLane<T> wl(rows, H);
  if (wl.past) return;  // whole warps only
  const int l = wl.l, grp = wl.grp, hp = wl.hp, own = l / (L / U);
  const Unit u = wl.unit(rows);
  const node_t v = u.node;

  for (int pass = 0; pass * hp < H; ++pass) {
    const GroupWork<U> gw(u, pass, hp, grp, H);
    const int h = gw.h;
    const auto qv = sc.template query<T>(v, h, H, D, l);
    Frag<T> dout, o;
    load_global<T>(dout, up.dout + (std::size_t(v) * H + h) * D, D, l);
    load_global<T>(o, up.out + (std::size_t(v) * H + h) * D, D, l);
    const float delta = group_sum<L>(dot(dout, o)), lse = __ldg(up.lse + std::size_t(v) * H + h);
    float inv_norm_v = 0.f;
    if constexpr (kAGNN) inv_norm_v = inverse_norm<L>(qv.x);
    const HeadColumns<T, E> keys(sc.key, H, D, h, l), values(sc.value, H, D, h, l);
    Frag<T> acc, acc_param;  // the destination-side sum; GATv2: the row's share of da
    zero(acc), zero(acc_param);
    float acc_s = 0.f;  // this lane's edges: AGNN sum dr c
    [[maybe_unused]] float acc_r = 0.f, acc_c = 0.f;  // and R and C (kCentredBeta)
    IdStream<L> ids(rows.ids, u.e0, gw.len, l);
    KeepStream<L, kDrop> keeps(tr, u.e0, gw.len, l, h);
    IdStream<L, edge_t> edge_ids(rows.edge_id, u.e0, kEdge ? gw.len : 0, l);  // loads nothing without edges

    auto step = [&](int t, auto checked) {
      constexpr bool kChecked = decltype(checked)::value;
      const int pos = t * U;
      ids.advance(pos);
      Frag<T> kf[U], vf[U];
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const node_t src = ids.at(pos + j);
        const bool ok = !kChecked || pos + j < gw.len;
        keys.template load<kExact && !kChecked>(kf[j], src, ok);
        if constexpr (!S::kValueIsKey) values.template load<kExact && !kChecked>(vf[j], src, ok);
      }
      // The scored key of each edge: GT's K_u + E_e in place (and V_u + E_e); GATv2 keeps XL_u,
      // its value, and adds E_e where it scores (key_of).
      [[maybe_unused]] Frag<T> ef[U];
      [[maybe_unused]] edge_t id[U];
      if constexpr (kEdge) {
        edge_ids.advance(pos);
        const EdgeColumns<T, E> edges(sc.edge_layout, D, h, l);
#pragma unroll
        for (int j = 0; j < U; ++j) {
          id[j] = edge_ids.at(pos + j);
          edges.load(ef[j], sc.edge, id[j], pos + j < gw.len);
          if constexpr (S::kEdgeInValue) add(kf[j], ef[j]), add(vf[j], ef[j]);
        }
      }
      const auto key_of = [&](int j) {
        Frag<T> k = kf[j];
        if constexpr (kEdge && kGATv2) add(k, ef[j]);
        return k;
      };
      const bool ok = kChecked ? pos + own < gw.len : gw.active;
      const edge_t e = u.e0 + pos + own;
      const bool writer = ok && l % (L / U) == 0;
      // Issued with the rows, so that its latency hides behind the reductions.
      const edge_t at_csc = writer ? __ldg(csc_pos + e) : 0;
      keeps.advance(pos);
      // dq_e = <dOut_v, value_u> and the score's partials, reduced together: lane l ends with
      // the totals of edge `own`.
      float dq[U], x[S::kParts][U];
#pragma unroll
      for (int j = 0; j < U; ++j) {
        dq[j] = dot(dout, S::kValueIsKey ? kf[j] : vf[j]);
        float y[S::kParts];
        sc.partial(qv, key_of(j), y);
#pragma unroll
        for (int p = 0; p < S::kParts; ++p) x[p][j] = y[p];
      }
      reduce_scatter<L, U>(dq, l);
      float parts[S::kParts];
#pragma unroll
      for (int p = 0; p < S::kParts; ++p) reduce_scatter<L, U>(x[p], l), parts[p] = x[p][0];
      const float score = sc.combine(qv, parts);
      const float we = ok ? w(e, h) : 0.f;
      const float p = ok ? fast_exp(score * we - lse) : 0.f;
      const float drawn = keeps.at(pos + own);  // a shuffle: every lane
      const float keep = ok ? drawn : 0.f;
      const float dr = we * p * (keep * dq[0] - delta);
      float coef = dr;  // what multiplies the key row in the destination-side sum
      [[maybe_unused]] float cosine = 0.f;
      if constexpr (kAGNN) {
        const float inv_norm_u = parts[1] > 0.f ? rsqrtf(parts[1]) : 0.f;
        cosine = parts[0] * inv_norm_v * inv_norm_u;
        coef = dr * inv_norm_u;
        acc_s += dr * cosine;
        if constexpr (kCentredBeta<S>) acc_r += p * (keep * dq[0] - delta), acc_c += we * p * cosine;
      }
      if (writer) {
        const std::size_t c = std::size_t(at_csc) * H + h;
        wk.dr_q[c] = make_float2(dr, p * keep);
        if constexpr (kAGNN) wk.cos[c] = cosine;
      }
      [[maybe_unused]] const float q = p * keep;
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const float cj = __shfl_sync(kFull, coef, j * (L / U), L);
        [[maybe_unused]] Frag<T> de;  // the edge's gradient
        if constexpr (kGATv2) {
          const Frag<T> k = key_of(j);
#pragma unroll
          for (int i = 0; i < T::PER_LANE; ++i) {
            const float z = k.x[i] + qv.xr.x[i];
            if constexpr (kEdge) {  // the term once, as dE and in dXR alike
              de.x[i] = cj * qv.a.x[i] * leaky_relu_grad(z, sc.slope);
              acc.x[i] += de.x[i];
            } else {
              acc.x[i] = fmaf(cj * qv.a.x[i], leaky_relu_grad(z, sc.slope), acc.x[i]);
            }
            acc_param.x[i] = fmaf(cj, leaky_relu(z, sc.slope), acc_param.x[i]);
          }
        } else {
          axpy(acc, cj, kf[j]);
          if constexpr (kEdge) {  // GT: dE = scale dr Q_v + q dOut_v (qv holds scale Q_v)
            const float qj = __shfl_sync(kFull, q, j * (L / U), L);
#pragma unroll
            for (int i = 0; i < T::PER_LANE; ++i) de.x[i] = fmaf(cj, qv.x.x[i], qj * dout.x[i]);
          }
        }
        if constexpr (kEdge)  // edge columns shared by H > 1 heads: shared_edge_grad sums the heads
          if (pos + j < gw.len && sc.edge_layout.heads == H)
            EdgeColumns<T, E>(sc.edge_layout, D, h, l).store(gr.edge, id[j], de);
      }
    };
    int t = 0;
    for (; t < gw.full; ++t) step(t, std::false_type{});
    for (; t < gw.steps; ++t) step(t, std::true_type{});
    const auto add = [](float x, float y) { return x + y; };
    acc_s = across_edges<L, U>(acc_s, add);
    if constexpr (kCentredBeta<S>) acc_r = across_edges<L, U>(acc_r, add), acc_c = across_edges<L, U>(acc_c, add);

    if (!gw.active) continue;
    const std::int64_t unit = u.slot < 0 ? std::int64_t(v) : rows.count + u.slot;
    if constexpr (kAGNN) {
      if (u.slot < 0 && l == 0) wk.inv_norm[std::size_t(v) * H + h] = inv_norm_v;
      float param = acc_s;
      if constexpr (kCentredBeta<S>) {  // a piece leaves R and C to merge_sums, which adds -R C
        if (u.slot < 0)
          param -= acc_r * acc_c;
        else if (l == 0)
          *reinterpret_cast<float2*>(slot_row(wk.row_part, u.slot, h, H, pad4(row_width<S>(D))) + pad4(D)) =
              make_float2(acc_r, acc_c);
      }
      if (l == 0) wk.param[std::size_t(unit) * H + h] = param;
    }
    if constexpr (kGATv2) store_row<T>(slot_row(wk.param, unit, h, H, D), acc_param, D, l);
    if (!u.gathers) continue;
    if constexpr (S::kKind == ScoreKind::GT) {
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] *= sc.scale;
    }
    if constexpr (kAGNN) {
      // dX_v = beta (n_v sum dr n_u x_u - n_v^2 (sum dr c) x_v)
      const float beta = load_one(sc.beta + (sc.beta_count == 1 ? 0 : h));
      const float scale = beta * inv_norm_v, self = beta * inv_norm_v * inv_norm_v * acc_s;
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = fmaf(-self, qv.x.x[i], acc.x[i] * scale);
    }
    store_sum(u.slot < 0, slot_row(gr.at_dst, v, h, H, D), slot_row(wk.row_part, u.slot, h, H, pad4(row_width<S>(D))),
              acc, D, l);
  }
}

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

/// Step 2, the columns: reads dr_e and q_e back at the CSC positions. A programmatic dependent
/// of step 1 (launch_dependent_blocks), so that its blocks get resident as step 1 drains.
/// kEdge (GATv2): an edge's score term of dXL_u is its dE_e, which step 1 wrote: read, not
/// recomputed from XR_v and E_e.
template <class S, class T, bool kExact, bool kEdge = false>
__global__ void __launch_bounds__(kOnlineThreads, kOnlineMinBlocks<T>)
    backward_cols(S sc, Segments cols, Upstream<typename S::Elem> up, Grads<typename S::Elem> gr, BackwardWork wk,
                  int H, int D) {
  static_assert(kRowsFirst<S> && (!kEdge || S::kKind == ScoreKind::GATv2));
  using E = typename S::Elem;
  allow_dependents();  // the merge of split columns, else the parameter sums, may get resident
  constexpr int U = kOnlineEdges<T>;
  constexpr int L = T::LANES;
  constexpr bool kGT = S::kKind == ScoreKind::GT, kAGNN = S::kKind == ScoreKind::AGNN;
  const WalkLane<T> wl(cols, H);
  if (wl.past) return;  // whole warps only
  const int l = wl.l, grp = wl.grp, hp = wl.hp, own = l / (L / U);
  const Unit u = wl.unit(cols);
  const node_t src = u.node;
  wait_for_previous();  // below, step 1's outputs: (dr, q), AGNN's cos, norms and dX
  // The destination rows an edge's term reads besides dOut_v: GT Q_v, AGNN x_v, GATv2 XR_v.
  const E* feature = sc.key;
  if constexpr (kGT) feature = sc.q;
  if constexpr (S::kKind == ScoreKind::GATv2) feature = sc.xr;

  for (int pass = 0; pass * hp < H; ++pass) {
    const GroupWork<U> gw(u, pass, hp, grp, H);
    const int h = gw.h;
    Frag<T> self, a;  // the column's own row (AGNN x_u, GATv2 XL_u) and GATv2's a[h]
    float inv_norm_u = 0.f, beta = 0.f;
    if constexpr (!kGT) load_global<T>(self, sc.key + (std::size_t(src) * H + h) * D, D, l);
    if constexpr (kAGNN) {
      inv_norm_u = inverse_norm<L>(self);
      beta = load_one(sc.beta + (sc.beta_count == 1 ? 0 : h));
    }
    if constexpr (S::kKind == ScoreKind::GATv2) load_global<T>(a, sc.a + std::size_t(h) * D, D, l);
    const HeadColumns<T, E> features(feature, H, D, h, l), douts(up.dout, H, D, h, l);
    Frag<T> acc, acc_value;  // GT dK and dV; AGNN and GATv2 the whole term in acc
    zero(acc), zero(acc_value);
    float acc_s = 0.f;  // this lane's edges: AGNN sum beta dr c
    IdStream<L> ids(cols.ids, u.e0, gw.len, l);
    IdStream<L, edge_t> edge_ids(cols.edge_id, u.e0, kEdge ? gw.len : 0, l);  // loads nothing without edges

    auto step = [&](int t, auto checked) {
      constexpr bool kChecked = decltype(checked)::value;
      const int pos = t * U;
      ids.advance(pos);
      Frag<T> ff[U], of[U];
      node_t v_own = 0;
      if constexpr (kEdge) edge_ids.advance(pos);
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const node_t dst = ids.at(pos + j);
        if (j == own) v_own = dst;
        const bool ok = !kChecked || pos + j < gw.len;
        if constexpr (kEdge)  // the edge's dE in place of XR_v
          EdgeColumns<T, E>(sc.edge_layout, D, h, l).load(ff[j], gr.edge, edge_ids.at(pos + j), ok);
        else
          features.template load<kExact && !kChecked>(ff[j], dst, ok);
        douts.template load<kExact && !kChecked>(of[j], dst, ok);
      }
      const bool ok = kChecked ? pos + own < gw.len : gw.active;
      const std::size_t c = std::size_t(u.e0 + pos + own) * H + h;
      const float2 dq = ok ? __ldg(wk.dr_q + c) : make_float2(0.f, 0.f);
      const float dr = dq.x, q = dq.y;
      float coef = dr;  // what multiplies the destination's feature row
      if constexpr (kAGNN) {
        const float inv_norm_v = ok ? __ldg(wk.inv_norm + std::size_t(v_own) * H + h) : 0.f;
        coef = beta * dr * inv_norm_u * inv_norm_v;
        acc_s += ok ? beta * dr * __ldg(wk.cos + c) : 0.f;
      }
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const float cj = __shfl_sync(kFull, coef, j * (L / U), L), qj = __shfl_sync(kFull, q, j * (L / U), L);
        if constexpr (kEdge) {
          add(acc, ff[j]);
        } else if constexpr (S::kKind == ScoreKind::GATv2) {
#pragma unroll
          for (int i = 0; i < T::PER_LANE; ++i)
            acc.x[i] = fmaf(cj * a.x[i], leaky_relu_grad(self.x[i] + ff[j].x[i], sc.slope), acc.x[i]);
        } else {
          axpy(acc, cj, ff[j]);
        }
        axpy(kGT ? acc_value : acc, qj, of[j]);
      }
    };
    int t = 0;
    for (; t < gw.full; ++t) step(t, std::false_type{});
    for (; t < gw.steps; ++t) step(t, std::true_type{});
    acc_s = across_edges<L, U>(acc_s, [](float x, float y) { return x + y; });

    if (!gw.active || !u.gathers) continue;
    const bool whole = u.slot < 0;
    if constexpr (kGT) {
      float* part = slot_row(wk.col_part, u.slot, h, H, pad4(col_width<S>(D)));
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] *= sc.scale;
      store_sum(whole, slot_row(gr.at_src, src, h, H, D), part, acc, D, l);
      store_sum(whole, slot_row(gr.value, src, h, H, D), part + D, acc_value, D, l);
      continue;
    }
    if constexpr (kAGNN) {  // dX_u += beta sum dr (n_u n_v x_v - c n_u^2 x_u) + q dOut_v
      const float s = inv_norm_u * inv_norm_u * acc_s;
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = fmaf(-s, self.x[i], acc.x[i]);
      if (whole) {  // the row walk wrote the destination side
        Frag<T> before;
        load_global<T>(before, slot_row(gr.at_src, src, h, H, D), D, l);
#pragma unroll
        for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] += before.x[i];
      }
    }
    store_sum(whole, slot_row(gr.at_src, src, h, H, D), slot_row(wk.col_part, u.slot, h, H, pad4(D)), acc, D, l);
  }
}

// ---------------------------------------------------------------------------------------------
// Columns first (GT, GAT)

/// Step 0: Delta_v = <dOut_v, out_v> for every (row, head), a lane group each.
template <class T, class E>
__global__ void __launch_bounds__(256) row_deltas(Upstream<E> up, float* __restrict__ delta, std::int64_t rows, int D) {
  allow_dependents();  // step 1 loads its columns' own rows meanwhile
  constexpr int L = T::LANES;
  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x, i = thread / L;
  if ((thread - threadIdx.x % kWarp) / L >= rows) return;  // whole warps only
  const int l = int(thread % L);
  const std::size_t r = std::size_t(i < rows ? i : rows - 1);
  Frag<T> dout, o;
  load_global<T>(dout, up.dout + r * D, D, l);
  load_global<T>(o, up.out + r * D, D, l);
  const float s = group_sum<L>(dot(dout, o));
  if (i < rows && l == 0) delta[r] = s;
}

/// Blocks per SM of the scoring column walk: 3 (80 registers) where GT's group holds K_u and V_u
/// besides 4 edges of Q and dOut fragments in flight. The GT backward against it (H100,
/// 7 graphs, 1x128 and 4x32; docs/backward.md, "Two orders"): 4 blocks spilled 96-144
/// bytes and was 10-45% slower; 4 blocks with 2 edges in flight 1-7% slower on the batches and
/// sparse graphs of high degree; 2 blocks 3-9% slower.
template <class S, class T>
inline constexpr int kScoredColsMinBlocks =
    S::kKind == ScoreKind::GT && T::PER_LANE == 4 && kOnlineEdges<T> == 4 ? 3 : kOnlineMinBlocks<T>;

/// Step 1, the columns: recomputes each in-edge's score from the column's own K_u (GAT el_u)
/// and the gathered Q_v (er_v), dq_e from its own V_u and the gathered dOut_v, and sums dK, dV
/// (del, dV); stores dr_e (GAT dr_e L'_e) at the edge's CSR position for step 2. `w` and `tr`
/// take CSC positions (their edge ids are in CSC order). A programmatic dependent of step 0.
/// kEdge (GAT): ee_e joins the LeakyReLU's argument, and dee_e = dr_e L'_e is written per edge.
template <class S, class T, bool kDrop, bool kExact, bool kEdge = false>
__global__ void __launch_bounds__(kOnlineThreads, kScoredColsMinBlocks<S, T>)
    backward_scored_cols(S sc, Segments cols, EdgeScaleOf<typename S::Elem> w, Train tr,
                         Upstream<typename S::Elem> up, Grads<typename S::Elem> gr, BackwardWork wk,
                         const edge_t* __restrict__ csr_pos, int H, int D) {
  static_assert(kColsFirst<S> && (!kEdge || S::kKind == ScoreKind::GAT));
  using E = typename S::Elem;
  allow_dependents();  // the merge of split columns, else step 2, may get resident
  constexpr int U = kOnlineEdges<T>;
  constexpr int L = T::LANES;
  constexpr bool kGT = S::kKind == ScoreKind::GT;
  const WalkLane<T> wl(cols, H);
  if (wl.past) return;  // whole warps only
  const int l = wl.l, grp = wl.grp, hp = wl.hp, own = l / (L / U);
  const Unit u = wl.unit(cols);
  const node_t src = u.node;

  for (int pass = 0; pass * hp < H; ++pass) {
    const GroupWork<U> gw(u, pass, hp, grp, H);
    const int h = gw.h;
    Frag<T> key, value;  // GT: scale K_u; V_u
    float el_u = 0.f;
    if constexpr (kGT) {
      load_global<T>(key, sc.key + (std::size_t(src) * H + h) * D, D, l);
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) key.x[i] *= sc.scale;
    } else {
      el_u = load_one(sc.key + std::size_t(src) * H + h);
    }
    load_global<T>(value, sc.value + (std::size_t(src) * H + h) * D, D, l);
    if (pass == 0) wait_for_previous();  // below, step 0's Delta
    const E* query_rows = up.dout;  // GAT gathers no query row
    if constexpr (kGT) query_rows = sc.q;
    const HeadColumns<T, E> queries(query_rows, H, D, h, l), douts(up.dout, H, D, h, l);
    Frag<T> acc_key, acc_value;  // GT dK / scale; dV
    zero(acc_key), zero(acc_value);
    float acc_s = 0.f;  // GAT: this lane's edges' sum dr L' (del)
    IdStream<L> ids(cols.ids, u.e0, gw.len, l);
    KeepStream<L, kDrop> keeps(tr, u.e0, gw.len, l, h);

    auto step = [&](int t, auto checked) {
      constexpr bool kChecked = decltype(checked)::value;
      const int pos = t * U;
      ids.advance(pos);
      [[maybe_unused]] Frag<T> qf[U];
      Frag<T> of[U];
      node_t v_own = 0;
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const node_t dst = ids.at(pos + j);
        if (j == own) v_own = dst;
        const bool ok = !kChecked || pos + j < gw.len;
        if constexpr (kGT) queries.template load<kExact && !kChecked>(qf[j], dst, ok);
        douts.template load<kExact && !kChecked>(of[j], dst, ok);
      }
      const bool ok = kChecked ? pos + own < gw.len : gw.active;
      const edge_t c = u.e0 + pos + own;
      const bool writer = ok && l % (L / U) == 0;
      // Issued with the rows, so that their latency hides behind the reductions.
      const edge_t at_csr = writer ? __ldg(csr_pos + c) : 0;
      [[maybe_unused]] const edge_t id = kEdge && ok ? caller_edge(cols.edge_id, c) : 0;
      const std::size_t vh = std::size_t(v_own) * H + h;
      const float lse = ok ? __ldg(up.lse + vh) : 0.f, delta = ok ? __ldg(wk.delta + vh) : 0.f;
      [[maybe_unused]] float er_v = 0.f;  // GAT: er_v (+ ee_e), the LeakyReLU's argument less el_u
      if constexpr (!kGT) er_v = ok ? load_one(sc.er + vh) : 0.f;
      if constexpr (kEdge) er_v += ok ? load_one(sc.edge + std::size_t(id) * H + h) : 0.f;
      keeps.advance(pos);
      // dq_e = <dOut_v, V_u> and GT's score, reduced together: lane l ends with edge `own`'s.
      float dq[U];
#pragma unroll
      for (int j = 0; j < U; ++j) dq[j] = dot(of[j], value);
      reduce_scatter<L, U>(dq, l);
      float score;
      if constexpr (kGT) {
        float x[U];
#pragma unroll
        for (int j = 0; j < U; ++j) x[j] = dot(qf[j], key);
        reduce_scatter<L, U>(x, l);
        score = x[0];
      } else {
        score = leaky_relu(el_u + er_v, sc.slope);
      }
      const float we = ok ? w(c, h) : 0.f;
      const float p = ok ? fast_exp(score * we - lse) : 0.f;
      const float drawn = keeps.at(pos + own);  // a shuffle: every lane
      const float keep = ok ? drawn : 0.f;
      float dr = we * p * (keep * dq[0] - delta);
      if constexpr (!kGT) {
        dr *= leaky_relu_grad(el_u + er_v, sc.slope);
        acc_s += dr;
      }
      if (writer) wk.dr[std::size_t(at_csr) * H + h] = dr;
      if constexpr (kEdge)
        if (writer) gr.edge[std::size_t(id) * H + h] = narrow<E>(dr);
      const float q = p * keep;
#pragma unroll
      for (int j = 0; j < U; ++j) {
        if constexpr (kGT) axpy(acc_key, __shfl_sync(kFull, dr, j * (L / U), L), qf[j]);
        axpy(acc_value, __shfl_sync(kFull, q, j * (L / U), L), of[j]);
      }
    };
    int t = 0;
    for (; t < gw.full; ++t) step(t, std::false_type{});
    for (; t < gw.steps; ++t) step(t, std::true_type{});
    acc_s = across_edges<L, U>(acc_s, [](float x, float y) { return x + y; });

    if (!gw.active || !u.gathers) continue;
    const bool whole = u.slot < 0;
    float* part = slot_row(wk.col_part, u.slot, h, H, pad4(col_width<S>(D)));
    if constexpr (kGT) {
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) acc_key.x[i] *= sc.scale;
      store_sum(whole, slot_row(gr.at_src, src, h, H, D), part, acc_key, D, l);
      store_sum(whole, slot_row(gr.value, src, h, H, D), part + D, acc_value, D, l);
    } else {
      store_sum(whole, slot_row(gr.value, src, h, H, D), part, acc_value, D, l);
      if (l == 0) store_sum(whole, gr.at_src + std::size_t(src) * H + h, part + D, acc_s);
    }
  }
}

/// Step 2, the rows: reads dr_e back in CSR order; GT sums dQ_v = scale sum dr_e K_u, GAT der_v
/// = sum dr_e L'_e. A programmatic dependent of step 1 (or of its merge).
template <class S, class T, bool kExact>
__global__ void __launch_bounds__(kOnlineThreads, kOnlineMinBlocks<T>)
    backward_summed_rows(S sc, Segments rows, Grads<typename S::Elem> gr, BackwardWork wk, int H, int D) {
  static_assert(kColsFirst<S>);
  using E = typename S::Elem;
  allow_dependents();  // the merge of split rows may get resident
  constexpr int U = kOnlineEdges<T>;
  constexpr int L = T::LANES;
  const WalkLane<T> wl(rows, H);
  if (wl.past) return;  // whole warps only
  const int l = wl.l, grp = wl.grp, hp = wl.hp;
  const Unit u = wl.unit(rows);
  const node_t v = u.node;
  wait_for_previous();  // below, step 1's dr

  for (int pass = 0; pass * hp < H; ++pass) {
    const GroupWork<U> gw(u, pass, hp, grp, H);
    const int h = gw.h;
    const bool whole = u.slot < 0;
    if constexpr (S::kKind == ScoreKind::GT) {
      const int own = l / (L / U);
      const HeadColumns<T, E> keys(sc.key, H, D, h, l);
      Frag<T> acc;
      zero(acc);
      IdStream<L> ids(rows.ids, u.e0, gw.len, l);
      auto step = [&](int t, auto checked) {
        constexpr bool kChecked = decltype(checked)::value;
        const int pos = t * U;
        ids.advance(pos);
        Frag<T> kf[U];
#pragma unroll
        for (int j = 0; j < U; ++j)
          keys.template load<kExact && !kChecked>(kf[j], ids.at(pos + j), !kChecked || pos + j < gw.len);
        const bool ok = kChecked ? pos + own < gw.len : gw.active;
        const float dr = ok ? __ldg(wk.dr + std::size_t(u.e0 + pos + own) * H + h) : 0.f;
#pragma unroll
        for (int j = 0; j < U; ++j) axpy(acc, __shfl_sync(kFull, dr, j * (L / U), L), kf[j]);
      };
      int t = 0;
      for (; t < gw.full; ++t) step(t, std::false_type{});
      for (; t < gw.steps; ++t) step(t, std::true_type{});
      if (!gw.active || !u.gathers) continue;
#pragma unroll
      for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] *= sc.scale;
      store_sum(whole, slot_row(gr.at_dst, v, h, H, D), slot_row(wk.row_part, u.slot, h, H, pad4(D)), acc, D, l);
    } else {  // GAT: scalars only, L edges a step
      float s = 0.f;
      for (int i = l; i < gw.len; i += L) s += __ldg(wk.dr + std::size_t(u.e0 + i) * H + h);
      s = group_sum<L>(s);
      if (!gw.active || !u.gathers || l != 0) continue;
      store_sum(whole, gr.at_dst + std::size_t(v) * H + h, slot_row(wk.row_part, u.slot, h, H, pad4(1)), s);
    }
  }
}

/// Adds the pieces of each split segment in slot order and stores the sums where the whole
/// segment's walk would have (kCols: the column side; AGNN's dX adds to the row side's; the
/// row side's R and C give dbeta's partial -R C in `param`, kCentredBeta). A thread per 4
/// columns of a head, one 16-byte load a slot (slot rows are padded to 4 floats): a quarter of
/// the threads of one per column, and each sum still runs over the slots in order.
template <class S, bool kCols>
__global__ void __launch_bounds__(256) merge_sums(const SplitRow* __restrict__ segs, int num, int H, int D,
                                                  const float* __restrict__ part, Grads<typename S::Elem> gr,
                                                  float* __restrict__ param) {
  using E = typename S::Elem;
  allow_dependents();  // step 2 after the rows' merge
  const int W = kCols ? col_width<S>(D) : row_width<S>(D), stride = pad4(W), chunks = stride / 4;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  SplitRow r;
  if (!split_row_then_wait(segs, i, std::size_t(num) * H * chunks, std::size_t(H) * chunks, r)) return;
  const int k = int(i % (std::size_t(H) * chunks)), h = k / chunks, f0 = k % chunks * 4;
  float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
  for_slots(
      r.count,
      [&](int j) { return *reinterpret_cast<const float4*>(part + (std::size_t(r.first + j) * H + h) * stride + f0); },
      [&](int, float4 x) { s.x += x.x, s.y += x.y, s.z += x.z, s.w += x.w; });
  const float sum[4] = {s.x, s.y, s.z, s.w};
  const std::size_t node_head = std::size_t(r.row) * H + h;
  if constexpr (!kCols && S::kKind == ScoreKind::AGNN) {
    if (f0 >= D) {  // the chunk of R and C: the whole row's unit's partial (its walk left 0)
      if constexpr (kCentredBeta<S>) param[node_head] = -sum[0] * sum[1];
      return;
    }
  }
  const int entries = kCols || S::kKind != ScoreKind::AGNN ? W : D;  // of the gradient rows
  for (int c = 0; c < 4 && f0 + c < entries; ++c) {
    const int f = f0 + c;
    const E x = narrow<E>(sum[c]);
    if constexpr (!kCols) {
      gr.at_dst[node_head * entries + f] = x;
    } else if constexpr (S::kKind == ScoreKind::GT) {
      (f < D ? gr.at_src : gr.value)[node_head * D + f % D] = x;
    } else if constexpr (S::kKind == ScoreKind::GAT) {
      if (f < D)
        gr.value[node_head * D + f] = x;
      else
        gr.at_src[node_head] = x;
    } else if constexpr (S::kKind == ScoreKind::AGNN) {  // the row side's share, rounded once before
      E& g = gr.at_src[node_head * D + f];
      g = narrow<E>(widen(g) + sum[c]);
    } else {
      gr.at_src[node_head * D + f] = x;
    }
  }
}

/// How the parameter sums slice the row units: at least 256 units a slice, at most 65535 slices.
struct ParamSlicing {
  std::int64_t per;
  unsigned count;
  explicit ParamSlicing(std::int64_t units) {
    per = std::max<std::int64_t>(256, (units + 65534) / 65535);
    count = unsigned(std::max<std::int64_t>(1, (units + per - 1) / per));
  }
};

/// Sums the parameter partials `param` [units, entries] over the units, in a fixed order and in
/// float32, into `out` (rounded once to E): output i gets entries [i * fold, (i + 1) * fold)
/// (fold = entries / outputs; AGNN's shared beta sums its heads). `slices` holds
/// ParamSlicing(units).count * entries floats. Instantiated for float, bf16 and f16.
template <class E>
void launch_param_sums(cudaStream_t stream, const float* param, std::int64_t units, int entries, float* slices,
                       E* out, int outputs);

}  // namespace dfgnn::cuda::detail
