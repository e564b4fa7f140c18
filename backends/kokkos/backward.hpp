#pragma once
// Fused attention backward (docs/backward.md). With p_e = exp(s_e - lse_v) recomputed from the
// forward's statistics, dq_e = <dOut_v, value_u>, Delta_v = <dOut_v, out_v> and
// dr_e = w_e p_e (keep_e dq_e - Delta_v):
//   pass 1, one thread group per (destination v, head), lanes over features: recomputes every
//     in-edge's score, forms dr_e, leaves dr_e and q_e = p_e keep_e in the workspace and
//     gathers the gradients that live at destinations;
//   pass 2, one thread group per (source u, head) over the transposed graph: gathers the
//     gradients that live at sources (the value gradient sum q_e dOut_v among them);
//   parameter gradients (AGNN's beta, GATv2's a): fixed slices of edges summed in order.
// Every gradient entry is owned by one thread group or lane, so there are no atomics and the
// results are bitwise reproducible.
//
// A model's gradient functor provides, for thread group `t` and head h,
//   begin_row(t, v, h)                         before v's in-edges (zeroes its row of outputs)
//   destination(t, v, u, i, h, dr, raw) -> x   per in-edge, i = its slot e*H + h in the
//                                              workspace (raw: the score's feature sum)
//   end_row(t, v, h, sum of x)
// and the same for sources: begin_col(t, u, h), source(t, u, v, i, h, dr, q) -> x, end_col.

#include "rowwise.hpp"

namespace dfgnn::kokkos_impl {

/// d LeakyReLU(x) / dx, taking the slope at 0 as the forward's `x > 0` branch does.
KOKKOS_INLINE_FUNCTION float leaky_relu_grad(float x, float slope) { return x > 0.0f ? 1.0f : slope; }

/// `f(d)` for every feature d, over the calling thread group's vector lanes. A lane always gets
/// the same features, so each lane updates only what it wrote itself.
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void each_feature(const Member& team, int dim, const F& f) {
  Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, dim), f);
}

template <class Member, class Out>
KOKKOS_INLINE_FUNCTION void zero_row(const Member& team, const Out& g, node_t n, int h) {
  each_feature(team, int(g.extent(2)), [&](int d) { g(n, h, d) = 0.0f; });
}

/// Writes a thread-group-uniform scalar once.
template <class Member, class Out>
KOKKOS_INLINE_FUNCTION void store(const Member& team, const Out& g, node_t n, int h, float x) {
  Kokkos::single(Kokkos::PerThread(team), [&] { g(n, h) = x; });
}

/// What pass 1 leaves for pass 2 and the parameter sums, [E*H] edge-major like the forward's
/// scores (slot e*H + h).
template <class Mem>
struct EdgeWork {
  Kokkos::View<float*, Mem> dr, q;
};

/// The forward's output side: out and the row statistics, and dLoss/dout.
template <class Mem>
struct Upstream {
  Features<Mem> out;
  Matrix<Mem> lse;
  Features<Mem> dout;
};

template <class Mem>
struct DotGrad {
  Features<Mem> q, k, dout;
  Output<Mem> dq, dk, dv;
  float scale;
  template <class M>
  KOKKOS_INLINE_FUNCTION void begin_row(const M& t, node_t v, int h) const { zero_row(t, dq, v, h); }
  template <class M>
  KOKKOS_INLINE_FUNCTION float destination(const M& t, node_t v, node_t u, edge_t, int h, float dr, float) const {
    const float g = scale * dr;
    each_feature(t, int(dq.extent(2)), [&](int d) { dq(v, h, d) += g * k(u, h, d); });
    return 0.0f;
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION void end_row(const M&, node_t, int, float) const {}
  template <class M>
  KOKKOS_INLINE_FUNCTION void begin_col(const M& t, node_t u, int h) const {
    zero_row(t, dk, u, h);
    zero_row(t, dv, u, h);
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION float source(const M& t, node_t u, node_t v, edge_t, int h, float dr, float p) const {
    const float g = scale * dr;
    each_feature(t, int(dk.extent(2)), [&](int d) {
      dk(u, h, d) += g * q(v, h, d);
      dv(u, h, d) += p * dout(v, h, d);
    });
    return 0.0f;
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION void end_col(const M&, node_t, int, float) const {}
};

// cos_e = <x_v, x_u> n_v n_u with n = 1/|x|; d cos / d x_v = n_v n_u x_u - cos n_v^2 x_v. X is
// also the values, so pass 2 adds q_e dOut_v to what pass 1 wrote.
template <class Mem>
struct CosineGrad {
  Features<Mem> x, dout;
  Matrix<Mem> inv_norm;
  Vector<Mem> beta;
  Output<Mem> dx;
  Kokkos::View<float*, Mem> cos;  // [E*H], written by pass 1 for pass 2 and dbeta
  KOKKOS_INLINE_FUNCTION float beta_of(int h) const { return beta(beta.extent(0) == 1 ? 0 : h); }
  template <class M>
  KOKKOS_INLINE_FUNCTION void begin_row(const M& t, node_t v, int h) const { zero_row(t, dx, v, h); }
  template <class M>
  KOKKOS_INLINE_FUNCTION float destination(const M& t, node_t v, node_t u, edge_t i, int h, float dr,
                                           float raw) const {
    const float nv = inv_norm(v, h), nu = inv_norm(u, h), c = raw * nv * nu, g = beta_of(h) * dr;
    Kokkos::single(Kokkos::PerThread(t), [&] { cos(i) = c; });
    each_feature(t, int(dx.extent(2)), [&](int d) { dx(v, h, d) += g * (nv * nu * x(u, h, d) - c * nv * nv * x(v, h, d)); });
    return 0.0f;
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION void end_row(const M&, node_t, int, float) const {}
  template <class M>
  KOKKOS_INLINE_FUNCTION void begin_col(const M&, node_t, int) const {}
  template <class M>
  KOKKOS_INLINE_FUNCTION float source(const M& t, node_t u, node_t v, edge_t i, int h, float dr, float p) const {
    const float nv = inv_norm(v, h), nu = inv_norm(u, h), c = cos(i);
    const float g = beta_of(h) * dr;
    each_feature(t, int(dx.extent(2)), [&](int d) {
      dx(u, h, d) += g * (nv * nu * x(v, h, d) - c * nu * nu * x(u, h, d)) + p * dout(v, h, d);
    });
    return 0.0f;
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION void end_col(const M&, node_t, int, float) const {}
};

// d score / d el_u = d score / d er_v = LeakyReLU'(el_u + er_v): scalar sums per node.
template <class Mem>
struct AdditiveGrad {
  Matrix<Mem> el, er;
  Features<Mem> dout;
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> del, der;
  Output<Mem> dv;
  float slope;
  template <class M>
  KOKKOS_INLINE_FUNCTION void begin_row(const M&, node_t, int) const {}
  template <class M>
  KOKKOS_INLINE_FUNCTION float destination(const M&, node_t v, node_t u, edge_t, int h, float dr, float) const {
    return dr * leaky_relu_grad(el(u, h) + er(v, h), slope);
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION void end_row(const M& t, node_t v, int h, float sum) const { store(t, der, v, h, sum); }
  template <class M>
  KOKKOS_INLINE_FUNCTION void begin_col(const M& t, node_t u, int h) const { zero_row(t, dv, u, h); }
  template <class M>
  KOKKOS_INLINE_FUNCTION float source(const M& t, node_t u, node_t v, edge_t, int h, float dr, float p) const {
    each_feature(t, int(dv.extent(2)), [&](int d) { dv(u, h, d) += p * dout(v, h, d); });
    return dr * leaky_relu_grad(el(u, h) + er(v, h), slope);
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION void end_col(const M& t, node_t u, int h, float sum) const { store(t, del, u, h, sum); }
};

// d score / d XR_v,d = d score / d XL_u,d = a_d LeakyReLU'(XL_u,d + XR_v,d); XL is also the values.
template <class Mem>
struct AdditiveV2Grad {
  Features<Mem> xl, xr, dout;
  Matrix<Mem> a;
  Output<Mem> dxl, dxr;
  float slope;
  KOKKOS_INLINE_FUNCTION float slope_term(node_t v, node_t u, int h, int d) const {
    return a(h, d) * leaky_relu_grad(xl(u, h, d) + xr(v, h, d), slope);
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION void begin_row(const M& t, node_t v, int h) const { zero_row(t, dxr, v, h); }
  template <class M>
  KOKKOS_INLINE_FUNCTION float destination(const M& t, node_t v, node_t u, edge_t, int h, float dr, float) const {
    each_feature(t, int(dxr.extent(2)), [&](int d) { dxr(v, h, d) += dr * slope_term(v, u, h, d); });
    return 0.0f;
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION void end_row(const M&, node_t, int, float) const {}
  template <class M>
  KOKKOS_INLINE_FUNCTION void begin_col(const M& t, node_t u, int h) const { zero_row(t, dxl, u, h); }
  template <class M>
  KOKKOS_INLINE_FUNCTION float source(const M& t, node_t u, node_t v, edge_t, int h, float dr, float p) const {
    each_feature(t, int(dxl.extent(2)), [&](int d) { dxl(u, h, d) += dr * slope_term(v, u, h, d) + p * dout(v, h, d); });
    return 0.0f;
  }
  template <class M>
  KOKKOS_INLINE_FUNCTION void end_col(const M&, node_t, int, float) const {}
};

/// Pass 1: one thread group per (destination v, head h), in-edges in CSR order.
template <class Score, class Model, class Mem>
struct DestinationPass {
  Problem<Mem> p;
  Score score;
  Model model;
  Upstream<Mem> up;
  EdgeWork<Mem> work;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, node_t v, int h) const {
    const edge_t a = p.row_ptr(v), b = p.row_ptr(v + 1);
    // The softmax Jacobian's row term, once per row: sum_e p_e keep_e dq_e = <dOut_v, out_v>.
    float delta = 0.0f;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, p.dim),
        [&](int d, float& acc) { acc += up.dout(v, h, d) * up.out(v, h, d); }, delta);
    const float lse = up.lse(v, h);
    model.begin_row(team, v, h);
    float sum = 0.0f;
    for (edge_t e = a; e < b; ++e) {
      const node_t u = p.src(e);
      float raw = 0.0f, dq = 0.0f;
      if constexpr (Score::reduces)
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(team, p.dim),
            [&](int d, float& acc) { acc += score.term(v, u, h, d); }, raw);
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, p.dim),
          [&](int d, float& acc) { acc += up.dout(v, h, d) * score.value(u, h, d); }, dq);
      const float prob = exp(p.scaled(score.finish(raw, v, u, h), e, h) - lse), keep = p.keep(e, h);
      const float dr = p.scaled(prob * (keep * dq - delta), e, h);
      const edge_t i = e * p.heads + h;
      Kokkos::single(Kokkos::PerThread(team), [&] {
        work.dr(i) = dr;
        work.q(i) = prob * keep;
      });
      sum += model.destination(team, v, u, i, h, dr, raw);
    }
    model.end_row(team, v, h, sum);
  }
};

/// Pass 2: one thread group per (source u, head h), out-edges in CSC order.
template <class Model, class Mem>
struct SourcePass {
  typename Graph<Mem>::Transposed csc;
  Model model;
  EdgeWork<Mem> work;
  int heads;
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, node_t u, int h) const {
    model.begin_col(team, u, h);
    float sum = 0.0f;
    for (edge_t j = csc.col_ptr(u); j < csc.col_ptr(u + 1); ++j) {
      const edge_t i = csc.csr_edge(j) * heads + h;
      sum += model.source(team, u, csc.dst(j), i, h, work.dr(i), work.q(i));
    }
    model.end_col(team, u, h, sum);
  }
};

template <class Exec, class Score, class Model>
void backward(const Exec& exec, const Plan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
              const Score& score, const Model& model, const Upstream<typename Exec::memory_space>& up,
              const EdgeWork<typename Exec::memory_space>& work) {
  using Mem = typename Exec::memory_space;
  launch_rows(exec, "dfgnn::backward_destinations", plan, DestinationPass<Score, Model, Mem>{p, score, model, up, work});
  launch_rows(exec, "dfgnn::backward_sources", plan,
              SourcePass<Model, Mem>{plan.graph().transposed(), model, work, p.heads});
}

/// Parameter gradients sum over all edges: at most kMaxSlices slices of at least kSliceEdges
/// consecutive edges, each summed in order into a partial, then the partials in order. The
/// grouping depends on E only, so the result does not vary with the team size or the run.
inline constexpr edge_t kSliceEdges = 256;
inline constexpr int kMaxSlices = 1024;

inline int edge_slices(edge_t edges) {
  return int(std::min<edge_t>(kMaxSlices, (edges + kSliceEdges - 1) / kSliceEdges));
}

template <class Exec, class Term>
struct SliceSums {
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  Term term;  // term(e, k): edge e's share of output k
  edge_t edges;
  int slices, count;
  Kokkos::View<float*, typename Exec::memory_space> partials;  // [slices * count]
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const edge_t s = team.league_rank(), e0 = edges * s / slices, e1 = edges * (s + 1) / slices;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, count), [&](int k) {
      float acc = 0.0f;
      for (edge_t e = e0; e < e1; ++e) acc += term(e, k);
      partials(s * count + k) = acc;
    });
  }
};

/// result[k] = sum over edges of term(e, k), k < result.extent(0); `partials` holds at least
/// edge_slices(E) * result.extent(0) floats.
template <class Exec, class Term>
void sum_over_edges(const Exec& exec, const Plan<Exec>& plan, const Term& term,
                    const Kokkos::View<float*, typename Exec::memory_space>& partials,
                    const Kokkos::View<float*, Kokkos::LayoutRight, typename Exec::memory_space>& result) {
  const edge_t edges = plan.graph().num_edges();
  const int slices = edge_slices(edges), count = int(result.extent(0));
  const auto& L = plan.layout();
  launch(exec, "dfgnn::backward_parameter_slices", slices, L.team_size, L.vector_length,
         SliceSums<Exec, Term>{term, edges, slices, count, partials});
  Kokkos::parallel_for(
      "dfgnn::backward_parameter_sum", Kokkos::RangePolicy<Exec>(exec, 0, count), KOKKOS_LAMBDA(int k) {
        float acc = 0.0f;
        for (int s = 0; s < slices; ++s) acc += partials(s * count + k);
        result(k) = acc;
      });
}

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

/// da[h,d] (k = h*D + d): sum_e dr_e LeakyReLU(XL_u,d + XR_v,d).
template <class Mem>
struct WeightTerm {
  Kokkos::View<const float*, Mem> dr;
  Features<Mem> xl, xr;
  Kokkos::View<const node_t*, Mem> src, dst;
  float slope;
  KOKKOS_INLINE_FUNCTION float operator()(edge_t e, int k) const {
    const int heads = int(xl.extent(1)), dim = int(xl.extent(2)), h = k / dim, d = k % dim;
    return dr(e * heads + h) * leaky_relu(xl(src(e), h, d) + xr(dst(e), h, d), slope);
  }
};

}  // namespace dfgnn::kokkos_impl
