#pragma once
// Fused attention backward (docs/backward.md). With p_e = exp(s_e - lse_v) recomputed from the
// forward's statistics, dq_e = <dOut_v, value_u>, Delta_v = <dOut_v, out_v> and
// dr_e = w_e p_e (keep_e dq_e - Delta_v), every gradient is a sum over edges of terms made of
// dr_e, q_e = p_e keep_e and node features, gathered at destinations or at sources:
//   1. destinations (the CSR's rows): each in-edge's dr_e and q_e (AGNN: also its cosine) are
//      formed and left in the workspace, then the destination-side sums gathered;
//   2. sources (the CSC's columns): the source-side sums, the value gradient among them;
//   3. parameter gradients (AGNN's beta, GATv2's a): fixed slices of edges summed in order.
// Steps 1 and 2 walk segments (rows or columns), one thread group per (segment, head) with
// lanes over the entries it gathers, W consecutive entries a lane (4 with 16-byte aligned rows:
// one access, and an edge's ids and workspace values read once per 4 entries). A heavy
// segment, longer than a chunk, is cut at the multiples of the chunk length in edge position:
// each chunk after its first cut gets a team of its own (HeavyChunks), which spreads the
// chunk's edges over its thread groups and leaves one partial sum per entry in the workspace;
// the segment's thread group then walks its edges before the first cut and adds the partials
// in chunk order. So no thread group walks more than a chunk of edges, whatever the degrees.
// Every gradient entry is written by one lane, summing in an order fixed by the graph and the
// chunk length alone: no atomics, and results bitwise reproducible whatever the team size.
//
// A model's gradient functor provides, for each side (AtDestination, AtSource),
//   width(side)                          entries gathered per (node, head)
//   term<W>(side, n, m, e, i, h, c) -> x  entries [W c, W c + W) of the term of CSR edge e
//                                        between n (the segment's node) and m, at workspace slot
//                                        i = e*H + h (zeros past the width)
//   put<W>(side, n, h, c, sums)          stores node n's entries [W c, W c + W) within the width
// and note(i, v, u, h, raw, term): what it keeps of an edge's score (raw) and SoftmaxTerm,
// rows_aligned(W): whether its tensors allow W = 4, and for the edge argument's gradient
// (models with edge features, types.hpp) edge_width() (its entries per (edge, head); 0: none)
// and edge_grad<W>(v, u, e, h, c), which step 1 calls once per edge after forming dr_e and q_e,
// so that every edge's gradient is written once, by one lane, with no gather.

#include "layout.hpp"
#include "rowwise.hpp"

namespace dfgnn::kokkos_impl {

struct AtDestination {};
struct AtSource {};

/// What step 1 leaves for step 2 and the parameter sums, [E*H] edge-major like the forward's
/// scores (slot e*H + h); cos is AGNN's only, residual and weighted_cos a two-byte AGNN call's
/// (AGNNGrad, "dbeta").
template <class Mem>
struct EdgeWork {
  Kokkos::View<float*, Mem> dr, q, cos, residual, weighted_cos;
};

/// What step 1 knows of an edge's softmax term besides dr_e and q_e: r_e = p_e (keep_e dq_e -
/// Delta_v), dr_e before the edge's weight (sum_e r_e = sum_e q_e dq_e - Delta_v: what Delta_v
/// misses of its exact value), and w_e p_e.
struct SoftmaxTerm {
  float residual, weighted_p;
};

/// The plan's backward workspace: the edge arrays above, then the chunk partials of the gathers,
/// reused by the parameter sums, then what a model needs per node (AGNN's two-byte dX).
template <class Mem>
struct Workspace {
  EdgeWork<Mem> work;
  Kokkos::View<float*, Mem> partials;
  Kokkos::View<float*, Mem> rows;  // per-(node, head, feature) floats a model asked for, or empty
};

/// The forward's output side: out and the row statistics, and dLoss/dout.
template <class Mem, class T>
struct Upstream {
  Features<Mem, T> out;
  Matrix<Mem> lse;  // float32 whatever T is
  Features<Mem, T> dout;
};

/// A model's edge argument and its gradient, indexed by the caller's edge id (edge_id of a CSR
/// position); empty Views: none.
template <class Mem, class In, class Out>
struct EdgeArgument {
  In in;
  Out grad;
  Kokkos::View<const edge_t*, Mem> edge_id;
  KOKKOS_INLINE_FUNCTION bool given() const { return in.data() != nullptr; }
};
template <class Mem, class T>
using EdgeRows = EdgeArgument<Mem, Features<Mem, T>, Output<Mem, T>>;
template <class Mem, class T>
using EdgeScalarsOf = EdgeArgument<Mem, Matrix<Mem, T>, ScalarsOut<Mem, T>>;

// dQ_v = scale sum dr_e (K_u + E_e); dK_u = scale sum dr_e Q_v and dV_u = sum q_e dOut_v, as
// entries [0, D) and [D, 2D) of one source-side gather; dE_e = scale dr_e Q_v + q_e dOut_v,
// over the edge argument's columns (edge columns: the last F). Edge columns shared by H > 1
// heads sum the heads' terms: step 1 leaves them to SharedEdgeGrad (edge_width 0).
template <class Mem, class T>
struct GTGrad {
  Features<Mem, T> q, k, dout;
  Output<Mem, T> dq, dk, dv;
  float scale;
  EdgeWork<Mem> work;
  EdgeRows<Mem, T> edge;
  KOKKOS_INLINE_FUNCTION int dim() const { return int(dq.extent(2)); }
  bool rows_aligned(int W) const {
    return kokkos_impl::rows_aligned(W, dim(), q, k, dout, dq, dk, dv) && edge_aligned(W, edge.in) &&
           edge_aligned(W, Features<Mem, T>(edge.grad));
  }
  /// Edge columns with one row for H > 1 heads.
  KOKKOS_INLINE_FUNCTION bool shared_edges() const { return edge.given() && edge.in.extent(1) < dq.extent(1); }
  KOKKOS_INLINE_FUNCTION void note(edge_t, node_t, node_t, int, float, SoftmaxTerm) const {}
  KOKKOS_INLINE_FUNCTION int width(AtDestination) const { return dim(); }
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> term(AtDestination, node_t, node_t u, edge_t e, edge_t i, int h, int c) const {
    return work.dr(i) * with_edge<W>(k, u, edge.in, edge.given() ? edge.edge_id(e) : 0, h, c);
  }
  template <int W>
  KOKKOS_INLINE_FUNCTION void put(AtDestination, node_t v, int h, int c, const Vec<W>& s) const {
    store<W>(dq, v, h, c, scale * s);
  }
  KOKKOS_INLINE_FUNCTION int width(AtSource) const { return 2 * dim(); }
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> term(AtSource, node_t, node_t v, edge_t, edge_t i, int h, int c) const {
    const int half = dim() / W;
    return c < half ? work.dr(i) * chunk<W>(q, v, h, c) : work.q(i) * chunk<W>(dout, v, h, c - half);
  }
  template <int W>
  KOKKOS_INLINE_FUNCTION void put(AtSource, node_t u, int h, int c, const Vec<W>& s) const {
    const int half = dim() / W;
    if (c < half)
      store<W>(dk, u, h, c, scale * s);
    else
      store<W>(dv, u, h, c - half, s);
  }
  KOKKOS_INLINE_FUNCTION int edge_width() const { return edge.given() && !shared_edges() ? int(edge.in.extent(2)) : 0; }
  /// Chunk c of edge e's gradient row (its columns' chunk first + c of the head's row).
  template <int W>
  KOKKOS_INLINE_FUNCTION void edge_grad(node_t v, node_t, edge_t e, int h, int c) const {
    const edge_t i = e * edge_t(dq.extent(1)) + h;
    const int d = edge_first_chunk<W>(q, edge.in) + c;
    Vec<W> g = (scale * work.dr(i)) * chunk<W>(q, v, h, d);
    g += work.q(i) * chunk<W>(dout, v, h, d);
    store<W>(edge.grad, edge.edge_id(e), edge.in.extent(1) == 1 ? 0 : h, c, g);
  }
};

/// dE of edge columns that one row serves for H > 1 heads (GTGrad::shared_edges): entry f of
/// CSR edge e sums the heads' terms in order, from the dr_e and q_e that step 1 left.
template <class Mem, class T>
struct SharedEdgeGrad {
  GTGrad<Mem, T> grad;
  Kokkos::View<const node_t*, Mem> dst;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t k) const {
    const int F = int(grad.edge.in.extent(2)), H = int(grad.dq.extent(1)), first = grad.dim() - F;
    const edge_t e = k / F;
    const int f = int(k % F);
    const node_t v = dst(e);
    float g = 0.0f;
    for (int h = 0; h < H; ++h) {
      const edge_t i = e * H + h;
      g += grad.scale * grad.work.dr(i) * to_float(grad.q(v, h, first + f)) +
           grad.work.q(i) * to_float(grad.dout(v, h, first + f));
    }
    grad.edge.grad(grad.edge.edge_id(e), 0, f) = from_float<T>(g);
  }
};

// cos_e = <y_v, x_u> n_v n_u with n = 1/|.|, kept per edge by step 1 (y: X_dst, or X standing
// in for it). X is also the values, so the source side adds q_e dOut_v. Where X stands in for
// X_dst, dx takes both sides: the source side adds its sums to what the destination side left in
// `part`, dx itself for float, a float workspace for a two-byte dx, which is then rounded once;
// else the destination side writes dx_dst. dbeta = sum_e dr_e cos_e. Delta_v of a two-byte out
// misses its exact value sum_e q_e dq_e by up to u |dOut_v| |out_v|, and dbeta's terms cancel,
// which those errors do not: summed over the rows they missed the fp16 contract 1.5x on a batch
// of 64 graphs. So a two-byte call's destination gather also sums, as entries D, D + 1 and D + 2
// of its width, S_v = sum dr_e cos_e, R_v = sum r_e (SoftmaxTerm) and C_v = sum w_e p_e cos_e into
// row_sums, and dbeta = sum_v S_v - R_v C_v takes Delta_v's error out (docs/backward.md, "dbeta
// of a two-byte call").
template <class Mem, class T>
struct AGNNGrad {
  static constexpr bool kCentred = !std::is_same_v<T, float>;
  static constexpr int kRowSums = kCentred ? 3 : 0;
  Features<Mem, T> x, x_dst, dout;
  Matrix<Mem> inv_norm, inv_norm_dst;
  Vector<Mem, T> beta;
  Output<Mem, T> dx, dx_dst;
  EdgeWork<Mem> work;
  Output<Mem> part;      // X standing in for X_dst: the destination side's sums
  Output<Mem> row_sums;  // [N, H, kRowSums]: S_v, R_v, C_v
  KOKKOS_INLINE_FUNCTION int dim() const { return int(dx.extent(2)); }
  /// Whether dx takes the destination side's terms too (X standing in for X_dst).
  KOKKOS_INLINE_FUNCTION bool one_gradient() const { return dx_dst.data() == dx.data(); }
  bool rows_aligned(int W) const { return kokkos_impl::rows_aligned(W, dim(), x, x_dst, dout, dx, dx_dst, part); }
  KOKKOS_INLINE_FUNCTION float beta_of(int h) const { return to_float(beta(beta.extent(0) == 1 ? 0 : h)); }
  KOKKOS_INLINE_FUNCTION void note(edge_t i, node_t v, node_t u, int h, float raw, SoftmaxTerm t) const {
    const float c = raw * inv_norm_dst(v, h) * inv_norm(u, h);
    work.cos(i) = c;
    if constexpr (kCentred) work.residual(i) = t.residual, work.weighted_cos(i) = t.weighted_p * c;
  }
  /// d cos_e / d a_n[f] = n_n n_m b_m[f] - cos_e n_n^2 a_n[f]: node n's row a (its norm
  /// `an`), m the edge's other node, of row b (norm `bn`).
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> dcos(edge_t i, const Features<Mem, T>& a, const Matrix<Mem>& an, node_t n,
                                     const Features<Mem, T>& b, const Matrix<Mem>& bn, node_t m, int h, int c) const {
    const float nn = an(n, h), s = nn * bn(m, h), t = work.cos(i) * nn * nn;
    const Vec<W> xm = chunk<W>(b, m, h, c), xn = chunk<W>(a, n, h, c);
    Vec<W> d;
    for (int f = 0; f < W; ++f) d.x[f] = s * xm.x[f] - t * xn.x[f];
    return d;
  }
  KOKKOS_INLINE_FUNCTION int width(AtDestination) const { return dim() + kRowSums; }
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> term(AtDestination, node_t v, node_t u, edge_t, edge_t i, int h, int c) const {
    if (W * c < dim()) return work.dr(i) * dcos<W>(i, x_dst, inv_norm_dst, v, x, inv_norm, u, h, c);
    Vec<W> t{};  // the row sums' terms
    if constexpr (kCentred) {
      const float terms[kRowSums] = {work.dr(i) * work.cos(i), work.residual(i), work.weighted_cos(i)};
      for (int f = 0, k = W * c - dim(); f < W && k + f < kRowSums; ++f) t.x[f] = terms[k + f];
    }
    return t;
  }
  template <int W>
  KOKKOS_INLINE_FUNCTION void put(AtDestination, node_t v, int h, int c, const Vec<W>& s) const {
    if (W * c < dim()) {
      if (one_gradient()) return store<W>(part, v, h, c, beta_of(h) * s);
      return store<W>(dx_dst, v, h, c, beta_of(h) * s);
    }
    for (int f = 0, k = W * c - dim(); f < W && k + f < kRowSums; ++f) row_sums(v, h, k + f) = s.x[f];
  }
  KOKKOS_INLINE_FUNCTION int width(AtSource) const { return int(dx.extent(2)); }
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> term(AtSource, node_t u, node_t v, edge_t, edge_t i, int h, int c) const {
    Vec<W> t = (beta_of(h) * work.dr(i)) * dcos<W>(i, x, inv_norm, u, x_dst, inv_norm_dst, v, h, c);
    t += work.q(i) * chunk<W>(dout, v, h, c);
    return t;
  }
  template <int W>
  KOKKOS_INLINE_FUNCTION void put(AtSource, node_t u, int h, int c, const Vec<W>& s) const {
    if (!one_gradient()) return store<W>(dx, u, h, c, s);
    Vec<W> t = widened<W>(&part(u, h, 0), c);
    t += s;
    store<W>(dx, u, h, c, t);
  }
  KOKKOS_INLINE_FUNCTION int edge_width() const { return 0; }
  template <int W>
  KOKKOS_INLINE_FUNCTION void edge_grad(node_t, node_t, edge_t, int, int) const {}
};

// d score / d el_u = d score / d er_v = d score / d ee_e = LeakyReLU'(el_u + er_v + ee_e): der is a
// one-entry gather, del entry D of the source side's, after dV; dee is that per edge.
template <class Mem, class T>
struct GATGrad {
  Matrix<Mem, T> el, er;
  Features<Mem, T> dout;
  ScalarsOut<Mem, T> del, der;
  Output<Mem, T> dv;
  float slope;
  EdgeWork<Mem> work;
  EdgeScalarsOf<Mem, T> edge;
  KOKKOS_INLINE_FUNCTION int dim() const { return int(dv.extent(2)); }
  bool rows_aligned(int W) const { return kokkos_impl::rows_aligned(W, dim(), dout, dv); }
  /// The score's derivative as the first entry of a chunk.
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> dscore(node_t v, node_t u, edge_t e, edge_t i, int h) const {
    const float x = to_float(el(u, h)) + to_float(er(v, h)) + (edge.given() ? to_float(edge.in(edge.edge_id(e), h)) : 0.0f);
    Vec<W> d{};
    d.x[0] = work.dr(i) * leaky_relu_grad(x, slope);
    return d;
  }
  KOKKOS_INLINE_FUNCTION void note(edge_t, node_t, node_t, int, float, SoftmaxTerm) const {}
  KOKKOS_INLINE_FUNCTION int width(AtDestination) const { return 1; }
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> term(AtDestination, node_t v, node_t u, edge_t e, edge_t i, int h, int) const {
    return dscore<W>(v, u, e, i, h);
  }
  template <int W>
  KOKKOS_INLINE_FUNCTION void put(AtDestination, node_t v, int h, int, const Vec<W>& s) const {
    der(v, h) = from_float<T>(s.x[0]);
  }
  KOKKOS_INLINE_FUNCTION int width(AtSource) const { return dim() + 1; }
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> term(AtSource, node_t u, node_t v, edge_t e, edge_t i, int h, int c) const {
    return c < dim() / W ? work.q(i) * chunk<W>(dout, v, h, c) : dscore<W>(v, u, e, i, h);
  }
  template <int W>
  KOKKOS_INLINE_FUNCTION void put(AtSource, node_t u, int h, int c, const Vec<W>& s) const {
    if (c < dim() / W)
      store<W>(dv, u, h, c, s);
    else
      del(u, h) = from_float<T>(s.x[0]);
  }
  KOKKOS_INLINE_FUNCTION int edge_width() const { return edge.given() ? 1 : 0; }
  template <int W>
  KOKKOS_INLINE_FUNCTION void edge_grad(node_t v, node_t u, edge_t e, int h, int) const {
    edge.grad(edge.edge_id(e), h) = from_float<T>(dscore<W>(v, u, e, e * edge_t(der.extent(1)) + h, h).x[0]);
  }
};

// d score / d XR_v,f = d score / d XL_u,f = d score / d E_e,f = a_f LeakyReLU'(XL_u,f + XR_v,f +
// E_e,f); XL is also the values. dE_e is that term per edge.
template <class Mem, class T>
struct GATv2Grad {
  Features<Mem, T> xl, xr, dout;
  Matrix<Mem, T> a;
  Output<Mem, T> dxl, dxr;
  float slope;
  EdgeWork<Mem> work;
  EdgeRows<Mem, T> edge;
  bool rows_aligned(int W) const {
    return kokkos_impl::rows_aligned(W, int(dxl.extent(2)), xl, xr, a, dout, dxl, dxr, edge.in, edge.grad);
  }
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> dscore(node_t v, node_t u, edge_t e, edge_t i, int h, int c) const {
    const float dr = work.dr(i);
    const Vec<W> w = chunk<W>(a, h, c), r = chunk<W>(xr, v, h, c);
    Vec<W> z = with_edge<W>(xl, u, edge.in, edge.given() ? edge.edge_id(e) : 0, h, c);
    z += r;
    Vec<W> d;
    for (int f = 0; f < W; ++f) d.x[f] = dr * w.x[f] * leaky_relu_grad(z.x[f], slope);
    return d;
  }
  KOKKOS_INLINE_FUNCTION void note(edge_t, node_t, node_t, int, float, SoftmaxTerm) const {}
  KOKKOS_INLINE_FUNCTION int width(AtDestination) const { return int(dxr.extent(2)); }
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> term(AtDestination, node_t v, node_t u, edge_t e, edge_t i, int h, int c) const {
    return dscore<W>(v, u, e, i, h, c);
  }
  template <int W>
  KOKKOS_INLINE_FUNCTION void put(AtDestination, node_t v, int h, int c, const Vec<W>& s) const {
    store<W>(dxr, v, h, c, s);
  }
  KOKKOS_INLINE_FUNCTION int width(AtSource) const { return int(dxl.extent(2)); }
  template <int W>
  KOKKOS_INLINE_FUNCTION Vec<W> term(AtSource, node_t u, node_t v, edge_t e, edge_t i, int h, int c) const {
    Vec<W> t = dscore<W>(v, u, e, i, h, c);
    t += work.q(i) * chunk<W>(dout, v, h, c);
    return t;
  }
  template <int W>
  KOKKOS_INLINE_FUNCTION void put(AtSource, node_t u, int h, int c, const Vec<W>& s) const {
    store<W>(dxl, u, h, c, s);
  }
  KOKKOS_INLINE_FUNCTION int edge_width() const { return edge.given() ? int(dxl.extent(2)) : 0; }
  template <int W>
  KOKKOS_INLINE_FUNCTION void edge_grad(node_t v, node_t u, edge_t e, int h, int c) const {
    store<W>(edge.grad, edge.edge_id(e), h, c, dscore<W>(v, u, e, e * edge_t(dxr.extent(1)) + h, h, c));
  }
};

/// Step 1's side: the CSR's rows. Before gathering, a thread group forms dr_e and q_e of the
/// in-edges it gathers, recomputing their scores with the forward's functors, kStepEdges edges
/// at a time and W features per lane access (4 where the rows are 16-byte aligned, as Online).
/// kEdges: the call has an edge argument, whose rows the scores read by edge id (as Online's).
template <class Score, class Model, class Mem, int W, bool kEdges>
struct Destinations {
  using at = AtDestination;
  Problem<Mem, typename Score::element> p;
  Score score;
  Model model;
  Upstream<Mem, typename Score::element> up;
  KOKKOS_INLINE_FUNCTION edge_t begin(node_t v) const { return p.row_ptr(v); }
  KOKKOS_INLINE_FUNCTION node_t owner(edge_t e) const { return p.dst(e); }
  KOKKOS_INLINE_FUNCTION node_t other(edge_t e) const { return p.src(e); }
  KOKKOS_INLINE_FUNCTION edge_t edge(edge_t e) const { return e; }
  /// Entries of the vector ranges of prepare.
  KOKKOS_INLINE_FUNCTION int span() const { return p.dim / W; }

  /// dr_e and q_e of v's in-edges [a, b), head h, over the calling thread group's lanes.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void prepare(const Member& team, node_t v, int h, edge_t a, edge_t b) const {
    if (a == b) return;
    // The softmax Jacobian's row term, once per call: sum_e p_e keep_e dq_e = <dOut_v, out_v>.
    float delta = 0.0f;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, p.dim),
        [&](int d, float& acc) { acc += to_float(up.dout(v, h, d)) * to_float(up.out(v, h, d)); }, delta);
    const float lse = up.lse(v, h);
    edge_t e = a;
    for (; b - e >= kStepEdges; e += kStepEdges) step<kStepEdges>(team, v, h, e, delta, lse);
    for (; e < b; ++e) step<1>(team, v, h, e, delta, lse);
  }

  // Edges [e, e + U): their raw scores and dq_e = <dOut_v, value_u> in one vector reduction.
  template <int U, class Member>
  KOKKOS_INLINE_FUNCTION void step(const Member& team, node_t v, int h, edge_t e, float delta, float lse) const {
    node_t u[U];
    edge_t id[U] = {};
    for (int j = 0; j < U; ++j) {
      u[j] = p.src(e + j);
      if constexpr (kEdges) id[j] = p.edge_id(e + j);
    }
    EdgeSums<2 * U> t;  // raw scores, then dq
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, p.dim / W),
        [&](int i, EdgeSums<2 * U>& part) {
          const Vec<W> g = chunk<W>(up.dout, v, h, i);
          for (int j = 0; j < U; ++j) {
            if constexpr (Score::reduces) part.x[j] += score.template terms<W, kEdges>(v, u[j], id[j], h, i);
            part.x[U + j] += dot(g, score.template values<W, kEdges>(u[j], id[j], h, i));
          }
        },
        Kokkos::Sum<EdgeSums<2 * U>>(t));
    // One lane forms the edges' dr_e and q_e; the gather's lanes read them after the barrier.
    Kokkos::single(Kokkos::PerThread(team), [&] {
      for (int j = 0; j < U; ++j) {
        const edge_t ej = e + j, i = ej * p.heads + h;
        const float prob = exp(p.scaled(score.template finish<kEdges>(t.x[j], v, u[j], id[j], h), ej, h) - lse);
        const float keep = p.keep(ej, h), r = prob * (keep * t.x[U + j] - delta);
        model.work.dr(i) = p.scaled(r, ej, h);
        model.work.q(i) = prob * keep;
        model.note(i, v, u[j], h, t.x[j], SoftmaxTerm{r, p.scaled(prob, ej, h)});
      }
    });
    lane_barrier();
    // The edge argument's gradient of these edges, from the dr_e and q_e just formed.
    const int n = (model.edge_width() + W - 1) / W;
    if (n > 0)
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, U * n),
                           [&](int k) { model.template edge_grad<W>(v, u[k / n], e + k / n, h, k % n); });
  }
};

/// Step 2's side: the CSC's columns, position j being CSR edge csr_edge(j), whose dr_e and q_e
/// step 1 left.
template <class Model, class Mem>
struct Sources {
  using at = AtSource;
  typename Graph<Mem>::Transposed csc;
  Kokkos::View<const node_t*, Mem> src;  // the CSR's: a CSC position's column
  Model model;
  KOKKOS_INLINE_FUNCTION edge_t begin(node_t u) const { return csc.col_ptr(u); }
  KOKKOS_INLINE_FUNCTION node_t owner(edge_t j) const { return src(csc.csr_edge(j)); }
  KOKKOS_INLINE_FUNCTION node_t other(edge_t j) const { return csc.dst(j); }
  KOKKOS_INLINE_FUNCTION edge_t edge(edge_t j) const { return csc.csr_edge(j); }
  KOKKOS_INLINE_FUNCTION int span() const { return 0; }
  template <class Member>
  KOKKOS_INLINE_FUNCTION void prepare(const Member&, node_t, int, edge_t, edge_t) const {}
};

/// Segments longer than a chunk are heavy. A chunk has at least as many edges as the model's
/// widest gather has entries, so the partials (per chunk, head and entry) take at most
/// E*H + H*width floats.
inline constexpr edge_t kChunkEdges = 256;

template <class Model>
int gather_width(const Model& m) {
  return std::max(m.width(AtDestination()), m.width(AtSource()));
}

template <class Model>
edge_t chunk_length(const Model& m) {
  return std::max<edge_t>(kChunkEdges, gather_width(m));
}

/// Floats of chunk partials the gathers of `m` need on a graph of `edges` edges.
template <class Model>
std::size_t partial_floats(edge_t edges, int heads, const Model& m) {
  const edge_t chunk = chunk_length(m);
  return std::size_t((edges + chunk - 1) / chunk) * std::size_t(heads) * std::size_t(gather_width(m));
}

/// One side's gather: entry f of segment n, head h, sums model.term over the segment's edges.
/// A lane takes W consecutive entries (one chunk c: entries [W c, W c + W) of the width, 16-byte
/// accesses at W = 4), so an edge's ids and workspace values are loaded once per W entries.
template <int W, class Side, class Mem>
struct Gather {
  static constexpr int kEntries = W;  // per lane access
  Side side;
  Kokkos::View<float*, Mem> partials;  // [chunks * heads * width]
  edge_t chunk;
  int heads, width;

  KOKKOS_INLINE_FUNCTION int vectors() const { return (width + W - 1) / W; }
  KOKKOS_INLINE_FUNCTION Vec<W> term(node_t n, edge_t j, int h, int c) const {
    const edge_t e = side.edge(j);
    return side.model.template term<W>(typename Side::at(), n, side.other(j), e, e * heads + h, h, c);
  }
  /// Entries [W c, W c + W)'s terms over positions [a, b) of segment n, each summed in order;
  /// a step's edges' ids first, so that their rows load together.
  KOKKOS_INLINE_FUNCTION Vec<W> sum(node_t n, int h, int c, edge_t a, edge_t b) const {
    Vec<W> s{};
    edge_t j = a;
    for (; b - j >= kStepEdges; j += kStepEdges) {
      Vec<W> t[kStepEdges];
      for (int k = 0; k < kStepEdges; ++k) t[k] = term(n, j + k, h, c);
      for (int k = 0; k < kStepEdges; ++k) s += t[k];
    }
    for (; j < b; ++j) s += term(n, j, h, c);
    return s;
  }
  KOKKOS_INLINE_FUNCTION float& partial(edge_t k, int h, int f) const {
    return partials((k * heads + h) * width + f);
  }

  /// One thread group per (segment n, head h), lanes over chunks of entries: a light segment
  /// whole; a heavy one up to its first cut, then the partials of its chunks in order.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, node_t n, int h) const {
    const edge_t a = side.begin(n), b = side.begin(n + 1);
    const edge_t cut = b - a > chunk ? (a + chunk - 1) / chunk * chunk : b;
    side.prepare(team, n, h, a, cut);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, vectors()), [&](int c) {
      Vec<W> s = sum(n, h, c, a, cut);
      for (edge_t k = cut; k < b; k += chunk)
        for (int f = 0; f < W && W * c + f < width; ++f) s.x[f] += partial(k / chunk, h, W * c + f);
      side.model.template put<W>(typename Side::at(), n, h, c, s);
    });
  }
};

/// A team per chunk of edge positions [c*chunk, (c+1)*chunk) (cut where its segment ends): in a
/// heavy segment, its thread groups prepare the chunk's edges, then the whole team sums every
/// (head, entry) over the chunk into the chunk's partials. A light segment's chunk returns at once.
template <class Exec, class G>
struct HeavyChunks {
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  G g;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const edge_t c = team.league_rank(), a = c * g.chunk;
    const node_t n = g.side.owner(a);
    const edge_t end = g.side.begin(n + 1);
    if (end - g.side.begin(n) <= g.chunk) return;
    const edge_t b = end - a < g.chunk ? end : a + g.chunk;
    // A contiguous share per (thread group, head): how the chunk is shared changes no result.
    const int groups = team.team_size();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, groups * g.heads), [&](int k) {
      const edge_t share = k / g.heads;
      g.side.prepare(team, n, k % g.heads, a + (b - a) * share / groups, a + (b - a) * (share + 1) / groups);
    });
    team.team_barrier();
    // Threads and lanes over (head, chunk of entries): coalesced reads of feature rows.
    const int vectors = g.vectors();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, g.heads * vectors), [&](int k) {
      constexpr int W = G::kEntries;
      const int h = k / vectors, i = k % vectors;
      const Vec<W> s = g.sum(n, h, i, a, b);
      for (int f = 0; f < W && W * i + f < g.width; ++f) g.partial(c, h, W * i + f) = s.x[f];
    });
  }
};

/// The heavy segments' chunks if `heavy` (some segment may be longer than a chunk), then each
/// of the `segments` (the side's nodes: every one is written, 0 when it has no edge); thread
/// groups as wide as the side's vector ranges, at most `max_lanes`.
template <class Exec, class G>
void gather(const Exec& exec, const PortablePlan<Exec>& plan, const char* chunks_name, const char* name, const G& g,
            node_t segments, bool heavy, int max_lanes) {
  using Bounds = typename Geometry<Exec>::GatherBounds;
  const int lanes = std::min(max_lanes, Geometry<Exec>::lanes(std::max(g.vectors(), g.side.span())));
  if (heavy)
    launch<Bounds>(exec, chunks_name, (plan.graph().num_edges() + g.chunk - 1) / g.chunk,
                   Geometry<Exec>::groups(lanes), lanes, HeavyChunks<Exec, G>{g});
  launch_rows<Bounds>(exec, name, segments, plan.heads(), lanes, g);
}

/// Both gathers, W entries per lane access; kEdges: the call has an edge argument.
template <int W, bool kEdges, class Exec, class Score, class Model, class T = typename Score::element>
void gathers(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space, T>& p,
             const Score& score, const Model& model, const Upstream<typename Exec::memory_space, T>& up,
             const Kokkos::View<float*, typename Exec::memory_space>& partials) {
  using Mem = typename Exec::memory_space;
  using Rows = Destinations<Score, Model, Mem, W, kEdges>;
  using Cols = Sources<Model, Mem>;
  const auto& g = plan.graph();
  const edge_t chunk = chunk_length(model);
  gather(exec, plan, "dfgnn::backward_destination_chunks", "dfgnn::backward_destinations",
         Gather<W, Rows, Mem>{Rows{p, score, model, up}, partials, chunk, p.heads, model.width(AtDestination())},
         g.num_nodes(), g.stats().max > chunk, plan.layout().row_walk_lanes);
  // The host knows no column degree: when some column might be heavy, every chunk's team looks.
  gather(exec, plan, "dfgnn::backward_source_chunks", "dfgnn::backward_sources",
         Gather<W, Cols, Mem>{Cols{g.transposed(), g.src(), model}, partials, chunk, p.heads, model.width(AtSource())},
         g.num_src_nodes(), g.num_edges() > chunk, Geometry<Exec>::max_lanes());
}

template <class Exec, class Score, class Model, class T = typename Score::element>
void backward(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space, T>& p,
              const Score& score, Model model, const Upstream<typename Exec::memory_space, T>& up,
              const Workspace<typename Exec::memory_space>& s) {
  model.work = s.work;
  const bool aligned = score.rows_aligned(4) && model.rows_aligned(4);
  if (score.has_edges())
    aligned ? gathers<4, true>(exec, plan, p, score, model, up, s.partials)
            : gathers<1, true>(exec, plan, p, score, model, up, s.partials);
  else
    aligned ? gathers<4, false>(exec, plan, p, score, model, up, s.partials)
            : gathers<1, false>(exec, plan, p, score, model, up, s.partials);
}

/// Parameter gradients sum over all edges (a two-byte AGNN call's dbeta: over its rows' sums):
/// at most kMaxSlices slices of at least kSliceItems consecutive items, each summed in order
/// into a partial, then the partials in order. The grouping depends on the item count only, so
/// the result does not vary with the team size or the run.
inline constexpr edge_t kSliceItems = 256;
inline constexpr int kMaxSlices = 1024;

inline int slices_of(edge_t items) {
  return int(std::min<edge_t>(kMaxSlices, (items + kSliceItems - 1) / kSliceItems));
}

template <class Exec, class Term>
struct SliceSums {
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  Term term;  // term(i, k): item i's share of output k
  edge_t items;
  int slices, count;
  Kokkos::View<float*, typename Exec::memory_space> partials;  // [slices * count]
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const edge_t s = team.league_rank(), i0 = items * s / slices, i1 = items * (s + 1) / slices;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, count), [&](int k) {
      float acc = 0.0f;
      for (edge_t i = i0; i < i1; ++i) acc += term(i, k);
      partials(std::size_t(s) * count + k) = acc;
    });
  }
};

/// result[k] = sum over items i < `items` of term(i, k), k < result.extent(0), rounded once to
/// T; `partials` holds at least slices_of(items) * result.extent(0) floats.
template <class Exec, class Term, class T>
void sum_in_slices(const Exec& exec, const PortablePlan<Exec>& plan, edge_t items, const Term& term,
                   const Kokkos::View<float*, typename Exec::memory_space>& partials,
                   const Kokkos::View<T*, Kokkos::LayoutRight, typename Exec::memory_space>& result) {
  const int slices = slices_of(items), count = int(result.extent(0));
  const auto& L = plan.layout();
  launch(exec, "dfgnn::backward_parameter_slices", slices, L.team_size, L.vector_length,
         SliceSums<Exec, Term>{term, items, slices, count, partials});
  Kokkos::parallel_for(
      "dfgnn::backward_parameter_sum", Range<Exec>(exec, 0, count), KOKKOS_LAMBDA(int k) {
        float acc = 0.0f;
        for (int s = 0; s < slices; ++s) acc += partials(std::size_t(s) * count + k);
        result(k) = from_float<T>(acc);
      });
}

/// A two-byte call's dbeta from AGNNGrad's row sums: sum_v S_v - R_v C_v for each head, or over
/// the heads too for a shared beta (count 1).
template <class Mem>
struct RowBetaTerm {
  Output<Mem> sums;
  int count;
  KOKKOS_INLINE_FUNCTION float operator()(edge_t v, int k) const {
    const int heads = int(sums.extent(1)), h0 = count == 1 ? 0 : k, h1 = count == 1 ? heads : k + 1;
    float x = 0.0f;
    for (int h = h0; h < h1; ++h) x += sums(v, h, 0) - sums(v, h, 1) * sums(v, h, 2);
    return x;
  }
};

/// dbeta: sum_e dr_e cos_e for each head, or over the heads too for a shared beta (count 1).
template <class Mem>
struct BetaTerm {
  Kokkos::View<const float*, Mem> dr, cos;
  int heads, count;
  KOKKOS_INLINE_FUNCTION float operator()(edge_t e, int k) const {
    const int h0 = count == 1 ? 0 : k, h1 = count == 1 ? heads : k + 1;
    float x = 0.0f;
    for (int h = h0; h < h1; ++h) x += dr(e * heads + h) * cos(e * heads + h);
    return x;
  }
};

/// da[h,d] (k = h*D + d): sum_e dr_e LeakyReLU(XL_u,d + XR_v,d (+ E_e,d)).
template <class Mem, class T>
struct WeightTerm {
  Kokkos::View<const float*, Mem> dr;
  GATv2Score<Mem, T> score;
  Kokkos::View<const node_t*, Mem> src, dst;
  Kokkos::View<const edge_t*, Mem> edge_id;
  KOKKOS_INLINE_FUNCTION float operator()(edge_t e, int k) const {
    const int heads = int(score.xl.extent(1)), dim = int(score.xl.extent(2)), h = k / dim, d = k % dim;
    return dr(e * heads + h) * leaky_relu(score.template logit<1>(dst(e), src(e), edge_id(e), h, d).x[0], score.slope);
  }
};

}  // namespace dfgnn::kokkos_impl
