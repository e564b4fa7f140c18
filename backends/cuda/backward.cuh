#pragma once
// The fused backward (docs/backward.md, "CUDA-native"): two segment walks in the Online
// kernel's register-resident style. One walk recomputes each edge's score with the forward's
// functor, p_e = exp(s_e - lse_v), dq_e = <dOut_v, value_u> and dr_e = w_e p_e (keep_e dq_e -
// Delta_v), Delta_v = <dOut_v, out_v>, and leaves dr_e at the edge's position in the other
// walk's order; the other walk reads it back in order. The walks are generic: what each model
// adds per edge and writes per unit is its gradient functor's (GradOf<S>, gradients.cuh). Two
// orders (GradOf<S>::kRowsFirst, kColsFirst):
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

#include "gradients.cuh"
#include "merge.cuh"

#include <algorithm>
#include <type_traits>

namespace dfgnn::cuda::detail {

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

// ---------------------------------------------------------------------------------------------
// Rows first (GradOf<S>::kRowsFirst)

/// Step 1, the rows. kExact: D fills the tile, so full steps load without predicates. kEdge:
/// each edge's features join its key (and the value, S::kEdgeInValue) as they load, and the
/// walk writes each edge's gradient dE, the model's term (G::Rows::term).
template <class S, class T, bool kDrop, bool kExact, bool kEdge = false>
__global__ void __launch_bounds__(kOnlineThreads, GradOf<S>::template row_min_blocks<T, kDrop>())
    backward_rows(S sc, Segments rows, EdgeScaleOf<typename S::Elem> w, Train tr, Upstream<typename S::Elem> up,
                  Grads<typename S::Elem> gr, BackwardWork wk, const edge_t* __restrict__ csc_pos, int H, int D) {
  using G = GradOf<S>;
  static_assert(G::kRowsFirst && (!kEdge || kHasEdge<S>));
  using E = typename S::Elem;
  allow_dependents();  // the merge of split rows, else step 2, may get resident
  constexpr int U = kOnlineEdges<T>;
  constexpr int L = T::LANES;
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
    typename G::template Rows<T> model(sc, qv);  // the model's sums besides acc
    const HeadColumns<T, E> keys(sc.key, H, D, h, l), values(sc.value, H, D, h, l);
    Frag<T> acc;  // the destination-side sum
    zero(acc);
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
      // The scored key of each edge: K_u + E_e in place (and V_u + E_e) where the edge joins
      // the value too; else the key row stays the value and E_e is added where it scores (key_of).
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
        if constexpr (kEdge && !S::kEdgeInValue) add(k, ef[j]);
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
      // What multiplies the key row in the destination-side sum.
      const float coef = model.edge(parts, dr, SoftmaxTerm{p * (keep * dq[0] - delta), we * p});
      if (writer) {
        const std::size_t c = std::size_t(at_csc) * H + h;
        wk.dr_q[c] = make_float2(dr, p * keep);
        model.note(wk, c);
      }
      [[maybe_unused]] const float q = p * keep;
#pragma unroll
      for (int j = 0; j < U; ++j) {
        [[maybe_unused]] Frag<T> de;  // the edge's gradient
        model.template term<kEdge>(sc, qv, key_of(j), j, edge_value<L, U>(coef, j), q, dout, acc, de);
        if constexpr (kEdge)  // edge columns shared by H > 1 heads: shared_edge_grad sums the heads
          if (pos + j < gw.len && sc.edge_layout.heads == H)
            EdgeColumns<T, E>(sc.edge_layout, D, h, l).store(gr.edge, id[j], de);
      }
    };
    int t = 0;
    for (; t < gw.full; ++t) step(t, std::false_type{});
    for (; t < gw.steps; ++t) step(t, std::true_type{});
    model.across();

    if (!gw.active) continue;
    const std::int64_t unit = u.slot < 0 ? std::int64_t(v) : rows.count + u.slot;
    model.put(wk, v, u.slot, unit, h, H, D, l);
    if (!u.gathers) continue;
    model.finish(sc, qv, acc, h);
    store_sum(u.slot < 0, slot_row(gr.at_dst, v, h, H, D), slot_row(wk.row_part, u.slot, h, H, pad4(G::row_width(D))),
              acc, D, l);
  }
}

/// Step 2, the columns: reads dr_e and q_e back at the CSC positions. A programmatic dependent
/// of step 1 (launch_dependent_blocks), so that its blocks get resident as step 1 drains.
/// kEdge (G::kColsReadEdgeGrad): an edge's score term is its dE_e, which step 1 wrote: read,
/// not recomputed from the destination's rows and E_e.
template <class S, class T, bool kExact, bool kEdge = false>
__global__ void __launch_bounds__(kOnlineThreads, kOnlineMinBlocks<T>)
    backward_cols(S sc, Segments cols, Upstream<typename S::Elem> up, Grads<typename S::Elem> gr, BackwardWork wk,
                  int H, int D) {
  using G = GradOf<S>;
  using Model = typename G::template Cols<T>;
  static_assert(G::kRowsFirst && (!kEdge || G::kColsReadEdgeGrad));
  using E = typename S::Elem;
  allow_dependents();  // the merge of split columns, else the parameter sums, may get resident
  constexpr int U = kOnlineEdges<T>;
  constexpr int L = T::LANES;
  const WalkLane<T> wl(cols, H);
  if (wl.past) return;  // whole warps only
  const int l = wl.l, grp = wl.grp, hp = wl.hp, own = l / (L / U);
  const Unit u = wl.unit(cols);
  const node_t src = u.node;
  wait_for_previous();  // below, step 1's outputs: (dr, q), what the model keeps, dX
  const E* feature = Model::feature(sc);  // the destination rows a term reads besides dOut_v

  for (int pass = 0; pass * hp < H; ++pass) {
    const GroupWork<U> gw(u, pass, hp, grp, H);
    const int h = gw.h;
    Model model(sc, src, h, H, D, l);  // the column's own rows
    const HeadColumns<T, E> features(feature, H, D, h, l), douts(up.dout, H, D, h, l);
    Frag<T> acc, acc_value;  // the source-side sum; the value gradient where the values are their own tensor
    zero(acc), zero(acc_value);
    float acc_s = 0.f;  // this lane's edges' scalar sum, if the model keeps one (Cols::edge)
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
        if constexpr (kEdge)  // the edge's dE in place of the destination's row
          EdgeColumns<T, E>(sc.edge_layout, D, h, l).load(ff[j], gr.edge, edge_ids.at(pos + j), ok);
        else
          features.template load<kExact && !kChecked>(ff[j], dst, ok);
        douts.template load<kExact && !kChecked>(of[j], dst, ok);
      }
      const bool ok = kChecked ? pos + own < gw.len : gw.active;
      const std::size_t c = std::size_t(u.e0 + pos + own) * H + h;
      const float2 dq = ok ? __ldg(wk.dr_q + c) : make_float2(0.f, 0.f);
      const float dr = dq.x, q = dq.y;
      const float coef = model.edge(wk, ok, c, v_own, h, H, dr, acc_s);  // what multiplies the destination's row
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const float cj = edge_value<L, U>(coef, j), qj = edge_value<L, U>(q, j);
        model.template term<kEdge>(sc, cj, ff[j], acc);
        axpy(S::kValueIsKey ? acc : acc_value, qj, of[j]);
      }
    };
    int t = 0;
    for (; t < gw.full; ++t) step(t, std::false_type{});
    for (; t < gw.steps; ++t) step(t, std::true_type{});
    model.across(acc_s);

    if (!gw.active || !u.gathers) continue;
    model.put(sc, gr, u.slot < 0, slot_row(wk.col_part, u.slot, h, H, pad4(G::col_width(D))), acc, acc_value, acc_s,
              src, h, H, D, l);
  }
}

// ---------------------------------------------------------------------------------------------
// Columns first (GradOf<S>::kColsFirst)

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

/// Step 1, the columns: recomputes each in-edge's score from the column's own key (G::ScoredCols)
/// and what it gathers of the destination, dq_e from its own V_u and the gathered dOut_v, and
/// sums the column's gradients; stores dr_e (the model's dscore) at the edge's CSR position for
/// step 2. `w` and `tr` take CSC positions (their edge ids are in CSC order). A programmatic
/// dependent of step 0. kEdge (a model without rows first, which takes the edge features here:
/// detail::columns_first): the edge argument joins the score
/// (G::ScoredCols::argument), and its gradient, dr_e, is written per edge.
template <class S, class T, bool kDrop, bool kExact, bool kEdge = false>
__global__ void __launch_bounds__(kOnlineThreads, GradOf<S>::template scored_cols_min_blocks<T>())
    backward_scored_cols(S sc, Segments cols, EdgeScaleOf<typename S::Elem> w, Train tr,
                         Upstream<typename S::Elem> up, Grads<typename S::Elem> gr, BackwardWork wk,
                         const edge_t* __restrict__ csr_pos, int H, int D) {
  using G = GradOf<S>;
  using Model = typename G::template ScoredCols<T>;
  static_assert(G::kColsFirst && (!kEdge || !G::kRowsFirst));
  using E = typename S::Elem;
  allow_dependents();  // the merge of split columns, else step 2, may get resident
  constexpr int U = kOnlineEdges<T>;
  constexpr int L = T::LANES;
  const WalkLane<T> wl(cols, H);
  if (wl.past) return;  // whole warps only
  const int l = wl.l, grp = wl.grp, hp = wl.hp, own = l / (L / U);
  const Unit u = wl.unit(cols);
  const node_t src = u.node;

  for (int pass = 0; pass * hp < H; ++pass) {
    const GroupWork<U> gw(u, pass, hp, grp, H);
    const int h = gw.h;
    Model model(sc, src, h, H, D, l);  // the column's own key
    Frag<T> value;
    load_global<T>(value, sc.value + (std::size_t(src) * H + h) * D, D, l);
    if (pass == 0) wait_for_previous();  // below, step 0's Delta
    const auto queries = Model::queries(sc, H, D, h, l);
    const HeadColumns<T, E> douts(up.dout, H, D, h, l);
    Frag<T> acc_value;  // dV
    zero(acc_value);
    float acc_s = 0.f;  // this lane's edges' scalar sum, if the model keeps one (ScoredCols::dscore)
    IdStream<L> ids(cols.ids, u.e0, gw.len, l);
    KeepStream<L, kDrop> keeps(tr, u.e0, gw.len, l, h);

    auto step = [&](int t, auto checked) {
      constexpr bool kChecked = decltype(checked)::value;
      const int pos = t * U;
      ids.advance(pos);
      typename Model::QueryRow qf[U];
      Frag<T> of[U];
      node_t v_own = 0;
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const node_t dst = ids.at(pos + j);
        if (j == own) v_own = dst;
        const bool ok = !kChecked || pos + j < gw.len;
        queries.template load<kExact && !kChecked>(qf[j], dst, ok);
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
      const float arg = model.template argument<kEdge>(sc, vh, id, h, H, ok);
      keeps.advance(pos);
      // dq_e = <dOut_v, V_u> and the score, reduced together: lane l ends with edge `own`'s.
      float dq[U];
#pragma unroll
      for (int j = 0; j < U; ++j) dq[j] = dot(of[j], value);
      reduce_scatter<L, U>(dq, l);
      const float score = model.score(sc, qf, arg, l);
      const float we = ok ? w(c, h) : 0.f;
      const float p = ok ? fast_exp(score * we - lse) : 0.f;
      const float drawn = keeps.at(pos + own);  // a shuffle: every lane
      const float keep = ok ? drawn : 0.f;
      const float dr = model.dscore(sc, arg, we * p * (keep * dq[0] - delta), acc_s);
      if (writer) wk.dr[std::size_t(at_csr) * H + h] = dr;
      if constexpr (kEdge)
        if (writer) gr.edge[std::size_t(id) * H + h] = narrow<E>(dr);
      const float q = p * keep;
#pragma unroll
      for (int j = 0; j < U; ++j) {
        model.term(j, dr, qf[j]);
        axpy(acc_value, edge_value<L, U>(q, j), of[j]);
      }
    };
    int t = 0;
    for (; t < gw.full; ++t) step(t, std::false_type{});
    for (; t < gw.steps; ++t) step(t, std::true_type{});
    model.across(acc_s);

    if (!gw.active || !u.gathers) continue;
    model.put(sc, gr, u.slot < 0, slot_row(wk.col_part, u.slot, h, H, pad4(G::col_width(D))), acc_value, acc_s, src,
              h, H, D, l);
  }
}

/// Step 2, the rows: reads dr_e back in CSR order. A row key gathers K_u for dQ_v = sum dr_e K_u
/// (G::summed_row); a scalar key's gradient (GAT der_v = sum dr_e L'_e) adds up scalars, L
/// edges a step. A programmatic dependent of step 1 (or of its merge).
template <class S, class T, bool kExact>
__global__ void __launch_bounds__(kOnlineThreads, kOnlineMinBlocks<T>)
    backward_summed_rows(S sc, Segments rows, Grads<typename S::Elem> gr, BackwardWork wk, int H, int D) {
  using G = GradOf<S>;
  static_assert(G::kColsFirst);
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
    if constexpr (S::kRowKey) {
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
        for (int j = 0; j < U; ++j) axpy(acc, edge_value<L, U>(dr, j), kf[j]);
      };
      int t = 0;
      for (; t < gw.full; ++t) step(t, std::false_type{});
      for (; t < gw.steps; ++t) step(t, std::true_type{});
      if (!gw.active || !u.gathers) continue;
      G::summed_row(sc, acc);
      store_sum(whole, slot_row(gr.at_dst, v, h, H, D), slot_row(wk.row_part, u.slot, h, H, pad4(G::row_width(D))),
                acc, D, l);
    } else {
      float s = 0.f;
      for (int i = l; i < gw.len; i += L) s += __ldg(wk.dr + std::size_t(u.e0 + i) * H + h);
      s = group_sum<L>(s);
      if (!gw.active || !u.gathers || l != 0) continue;
      store_sum(whole, gr.at_dst + std::size_t(v) * H + h, slot_row(wk.row_part, u.slot, h, H, pad4(G::row_width(D))),
                s);
    }
  }
}

/// Adds the pieces of each split segment in slot order and stores the sums where the whole
/// segment's walk would have (kCols: the column side, G::merge_col; the row side's gradient,
/// then its row sums, G::merge_row_sums). A thread per 4 columns of a head, one 16-byte load a
/// slot (slot rows are padded to 4 floats): a quarter of the threads of one per column, and each
/// sum still runs over the slots in order.
template <class S, bool kCols>
__global__ void __launch_bounds__(256) merge_sums(const SplitRow* __restrict__ segs, int num, int H, int D,
                                                  const float* __restrict__ part, Grads<typename S::Elem> gr,
                                                  float* __restrict__ param) {
  using G = GradOf<S>;
  using E = typename S::Elem;
  allow_dependents();  // step 2 after the rows' merge
  const int W = kCols ? G::col_width(D) : G::row_width(D), stride = pad4(W), chunks = stride / 4;
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
  // Of the gradient rows: the row side's is a key's width (dQ, dX, dXR; GAT's der a scalar).
  const int entries = kCols ? W : key_width<S>(D);
  if constexpr (!kCols && G::kRowSums > 0) {
    if (f0 >= entries) {  // the chunk of the row sums
      G::merge_row_sums(sum, param, node_head);
      return;
    }
  }
  for (int c = 0; c < 4 && f0 + c < entries; ++c) {
    const int f = f0 + c;
    if constexpr (kCols)
      G::merge_col(gr, node_head, f, D, sum[c]);
    else
      gr.at_dst[node_head * entries + f] = narrow<E>(sum[c]);
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
