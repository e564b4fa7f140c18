#pragma once
// Portable g-SpMM / g-SDDMM kernels (docs/message_passing.md). Every kernel walks segments of
// edges, one thread group per (segment, head) with vector lanes over features, and writes each
// output entry from one lane: no atomics.
//   - the forward g-SpMM walks the CSR rows (in-edges of each destination) and reduces;
//   - the forward g-SDDMM walks single edges;
//   - every gradient, and the GCN aggregation, is a Gather: a sum over a segment's edges of a
//     per-edge term, the segment being a CSR row (for tensors on destinations), a CSC column
//     (on sources) or one edge (on edges). A broadcast output entry also sums the (h, d) it
//     was broadcast to.

#include "layout.hpp"
#include "scores.hpp"

#include <dfgnn/message_passing.hpp>

namespace dfgnn::kokkos_impl {

/// An input read with broadcasting: its axes of extent 1 repeat.
template <class Mem>
struct Spread {
  Kokkos::View<const float***, Kokkos::LayoutRight, Mem> t;
  KOKKOS_INLINE_FUNCTION float operator()(std::size_t row, int h, int d) const {
    return t(row, t.extent(1) == 1 ? 0 : h, t.extent(2) == 1 ? 0 : d);
  }
};

/// The endpoints and the caller's index of one edge u -> v.
struct Ends {
  node_t u, v;
  edge_t id;
};

/// The in-edges of node v (its CSR row); outputs on destinations.
template <class Mem>
struct InEdges {
  Kokkos::View<const edge_t*, Mem> row_ptr, edge_id;
  Kokkos::View<const node_t*, Mem> src;
  KOKKOS_INLINE_FUNCTION edge_t begin(edge_t v) const { return row_ptr(v); }
  KOKKOS_INLINE_FUNCTION edge_t end(edge_t v) const { return row_ptr(v + 1); }
  KOKKOS_INLINE_FUNCTION Ends ends(edge_t v, edge_t k) const { return {src(k), node_t(v), edge_id(k)}; }
  KOKKOS_INLINE_FUNCTION std::size_t row(edge_t v) const { return std::size_t(v); }
};

/// The out-edges of node u (its CSC column); outputs on sources.
template <class Mem>
struct OutEdges {
  Kokkos::View<const edge_t*, Mem> col_ptr, csr_edge, edge_id;
  Kokkos::View<const node_t*, Mem> dst;
  KOKKOS_INLINE_FUNCTION edge_t begin(edge_t u) const { return col_ptr(u); }
  KOKKOS_INLINE_FUNCTION edge_t end(edge_t u) const { return col_ptr(u + 1); }
  KOKKOS_INLINE_FUNCTION Ends ends(edge_t u, edge_t k) const { return {node_t(u), dst(k), edge_id(csr_edge(k))}; }
  KOKKOS_INLINE_FUNCTION std::size_t row(edge_t u) const { return std::size_t(u); }
};

/// CSR edge e alone; its output row is the caller's edge index.
template <class Mem>
struct OneEdge {
  Kokkos::View<const edge_t*, Mem> edge_id;
  Kokkos::View<const node_t*, Mem> src, dst;
  KOKKOS_INLINE_FUNCTION edge_t begin(edge_t e) const { return e; }
  KOKKOS_INLINE_FUNCTION edge_t end(edge_t e) const { return e + 1; }
  KOKKOS_INLINE_FUNCTION Ends ends(edge_t, edge_t k) const { return {src(k), dst(k), edge_id(k)}; }
  KOKKOS_INLINE_FUNCTION std::size_t row(edge_t e) const { return std::size_t(edge_id(e)); }
};

/// message(u, e, v) at (h, d): lhs on U or E, rhs on E or V or none (a copy).
template <class Mem>
struct MessageOf {
  Target lhs_on, rhs_on;
  BinaryOp op;
  Spread<Mem> lhs, rhs;
  KOKKOS_INLINE_FUNCTION static std::size_t row(Target t, const Ends& x) {
    return t == Target::U ? std::size_t(x.u) : t == Target::E ? std::size_t(x.id) : std::size_t(x.v);
  }
  KOKKOS_INLINE_FUNCTION float a(const Ends& x, int h, int d) const { return lhs(row(lhs_on, x), h, d); }
  KOKKOS_INLINE_FUNCTION float b(const Ends& x, int h, int d) const { return rhs(row(rhs_on, x), h, d); }
  KOKKOS_INLINE_FUNCTION float operator()(const Ends& x, int h, int d) const {
    return rhs_on == Target::None ? a(x, h, d) : binary(op, a(x, h, d), b(x, h, d));
  }
};

/// Forward g-SpMM over the CSR rows: each lane reduces one feature over the row's edges in
/// order; max/min keep the first winner.
template <class Mem>
struct SpmmRows {
  InEdges<Mem> rows;
  MessageOf<Mem> message;
  Reduce reduce;
  Kokkos::View<float***, Kokkos::LayoutRight, Mem> out;
  Kokkos::View<edge_t***, Kokkos::LayoutRight, Mem> arg;  // empty: not wanted

  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, edge_t v, int h) const {
    const edge_t a = rows.begin(v), b = rows.end(v);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, int(out.extent(2))), [&](int d) {
      if (reduce == Reduce::Sum || reduce == Reduce::Mean) {
        float acc = 0.0f;
        for (edge_t k = a; k < b; ++k) acc += message(rows.ends(v, k), h, d);
        out(v, h, d) = reduce == Reduce::Mean && b > a ? acc / float(b - a) : acc;
        return;
      }
      float best = 0.0f;
      edge_t win = -1;
      for (edge_t k = a; k < b; ++k) {
        const Ends x = rows.ends(v, k);
        const float m = message(x, h, d);
        if (win < 0 || (reduce == Reduce::Max ? m > best : m < best)) best = m, win = x.id;
      }
      out(v, h, d) = best;
      if (arg.data()) arg(v, h, d) = win;
    });
  }
};

/// Forward g-SDDMM, one edge per thread group and head.
template <class Mem>
struct SddmmEdges {
  OneEdge<Mem> edges;
  BinaryOp op;
  Spread<Mem> x, y;
  Kokkos::View<float***, Kokkos::LayoutRight, Mem> out;
  int dim;  // the width of op (of the product for dot)

  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, edge_t e, int h) const {
    const Ends t = edges.ends(e, e);
    if (op == BinaryOp::Dot) {
      float s = 0.0f;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, dim), [&](int d, float& acc) { acc += x(t.u, h, d) * y(t.v, h, d); }, s);
      Kokkos::single(Kokkos::PerThread(team), [&] { out(t.id, h, 0) = s; });
    } else {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, dim),
                           [&](int d) { out(t.id, h, d) = binary(op, x(t.u, h, d), y(t.v, h, d)); });
    }
  }
};

/// The per-edge gradient of g-SpMM with respect to lhs or rhs: dout of the destination (over
/// the degree for mean; only for the winning edge for max/min) times d message / d operand.
template <class Mem>
struct SpmmTerm {
  MessageOf<Mem> message;
  Reduce reduce;
  Spread<Mem> dout;
  Kokkos::View<const edge_t***, Kokkos::LayoutRight, Mem> arg;
  Kokkos::View<const edge_t*, Mem> row_ptr;
  bool wrt_rhs;
  KOKKOS_INLINE_FUNCTION float operator()(const Ends& x, int h, int d) const {
    if ((reduce == Reduce::Max || reduce == Reduce::Min) && arg(x.v, h, d) != x.id) return 0.0f;
    float g = dout(x.v, h, d);
    if (reduce == Reduce::Mean) g /= float(row_ptr(x.v + 1) - row_ptr(x.v));
    if (message.rhs_on == Target::None) return g;
    const float a = message.a(x, h, d), b = message.b(x, h, d);
    return g * (wrt_rhs ? binary_drhs(message.op, a, b) : binary_dlhs(message.op, a, b));
  }
};

/// The per-edge gradient of g-SDDMM with respect to x (on sources) or y (on destinations).
template <class Mem>
struct SddmmTerm {
  BinaryOp op;
  Spread<Mem> x, y;
  Kokkos::View<const float***, Kokkos::LayoutRight, Mem> dout;  // [E,H,D] or [E,H,1]
  bool wrt_y;
  KOKKOS_INLINE_FUNCTION float operator()(const Ends& t, int h, int d) const {
    const float a = x(t.u, h, d), b = y(t.v, h, d);
    const float de = dout(t.id, h, op == BinaryOp::Dot ? 0 : d);
    return de * (wrt_y ? binary_drhs(op, a, b) : binary_dlhs(op, a, b));
  }
};

/// 1/sqrt(max(1, degree)) of segment n of offsets `ptr`.
template <class Offsets>
KOKKOS_INLINE_FUNCTION float inv_sqrt_degree(const Offsets& ptr, node_t n) {
  const edge_t deg = ptr(n + 1) - ptr(n);
  return 1.0f / sqrt(float(deg > 1 ? deg : 1));
}

/// GCN's term t[n] / sqrt(d_out(u) d_in(v)), n the source (forward) or the destination
/// (backward); the degrees are read from the CSR and CSC offsets, nothing is precomputed.
template <class Mem>
struct GcnTerm {
  Kokkos::View<const edge_t*, Mem> row_ptr, col_ptr;
  Kokkos::View<const float***, Kokkos::LayoutRight, Mem> t;
  bool from_destination;
  KOKKOS_INLINE_FUNCTION float operator()(const Ends& x, int h, int d) const {
    return t(from_destination ? x.v : x.u, h, d) * inv_sqrt_degree(row_ptr, x.v) * inv_sqrt_degree(col_ptr, x.u);
  }
};

/// out(row(s), hg, dg) = sum over segment s's edges, and over the (h, d) of the full H x D that
/// broadcast onto (hg, dg), of term(edge, h, d).
template <class Segments, class Term, class Mem>
struct Gather {
  Segments segments;
  Term term;
  Kokkos::View<float***, Kokkos::LayoutRight, Mem> out;
  int heads, dim;  // H and D of the terms

  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, edge_t s, int hg) const {
    const edge_t a = segments.begin(s), b = segments.end(s);
    const std::size_t r = segments.row(s);
    const int h0 = out.extent(1) == 1 ? 0 : hg, h1 = out.extent(1) == 1 ? heads : hg + 1;
    auto sum = [&](int d, float& acc) {
      for (edge_t k = a; k < b; ++k) {
        const Ends x = segments.ends(s, k);
        for (int h = h0; h < h1; ++h) acc += term(x, h, d);
      }
    };
    if (out.extent(2) == 1 && dim > 1) {  // a feature-broadcast entry: the lanes share its sum
      float total = 0.0f;
      Kokkos::parallel_reduce(Kokkos::ThreadVectorRange(team, dim), sum, total);
      Kokkos::single(Kokkos::PerThread(team), [&] { out(r, hg, 0) = total; });
    } else {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, dim), [&](int d) {
        float acc = 0.0f;
        sum(d, acc);
        out(r, hg, d) = acc;
      });
    }
  }
};

/// One thread group per (segment, head) of `count` segments: a team takes `per_team`
/// consecutive segments, all their heads.
template <class Exec, class Body>
struct SegmentHeads {
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  edge_t count;
  int heads, per_team;
  Body body;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const edge_t s0 = edge_t(team.league_rank()) * per_team;
    const int n = count - s0 < per_team ? int(count - s0) : per_team;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * heads),
                         [&](int k) { body(team, s0 + k / heads, k % heads); });
  }
};

/// Launches body(team, segment, head) over count x heads, lanes over `dim` features and teams as
/// the space's Geometry has them.
template <class Exec, class Body>
void for_segments(const Exec& exec, const char* name, edge_t count, int heads, int dim, const Body& body) {
  const int lanes = Geometry<Exec>::lanes(dim);
  const int groups = Geometry<Exec>::groups(lanes), per_team = std::max(1, groups / heads);
  launch(exec, name, (count + per_team - 1) / per_team, groups, lanes,
         SegmentHeads<Exec, Body>{count, heads, per_team, body});
}

}  // namespace dfgnn::kokkos_impl
