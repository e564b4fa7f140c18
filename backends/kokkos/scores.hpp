#pragma once
// Score functors shared by every Kokkos kernel family, and the launch helper.
//
// A score exposes
//   reduces            whether it sums a per-feature term over d (GT, AGNN, GATv2) or not (GAT)
//   term(v, u, h, d)   the per-feature term, summed by the vector lanes
//   finish(acc, v, u, h)  the score of edge u -> v, head h, from that sum
//   value(u, h, d)     the feature aggregated by the SpMM (V, X or XL)
// so SDDMM, softmax and SpMM are written once for all four models.

#include "math.hpp"

#include <dfgnn/dropout.hpp>
#include <dfgnn/plan.hpp>

#include <algorithm>

namespace dfgnn::kokkos_impl {

template <class Mem>
using Features = Kokkos::View<const float***, Kokkos::LayoutRight, Mem>;
template <class Mem>
using Matrix = Kokkos::View<const float**, Kokkos::LayoutRight, Mem>;
template <class Mem>
using Vector = Kokkos::View<const float*, Kokkos::LayoutRight, Mem>;
template <class Mem>
using Output = Kokkos::View<float***, Kokkos::LayoutRight, Mem>;

template <class Mem>
struct DotScore {
  static constexpr bool reduces = true;
  Features<Mem> q, k, v;
  float scale;
  KOKKOS_INLINE_FUNCTION float term(node_t dst, node_t src, int h, int d) const {
    return q(dst, h, d) * k(src, h, d);
  }
  KOKKOS_INLINE_FUNCTION float finish(float acc, node_t, node_t, int) const { return scale * acc; }
  KOKKOS_INLINE_FUNCTION float value(node_t u, int h, int d) const { return v(u, h, d); }
};

template <class Mem>
struct CosineScore {
  static constexpr bool reduces = true;
  Features<Mem> x;
  Matrix<Mem> inv_norm;  // [N,H], 0 for zero vectors so their cosine is 0
  Vector<Mem> beta;      // [H] or [1]
  KOKKOS_INLINE_FUNCTION float term(node_t dst, node_t src, int h, int d) const {
    return x(dst, h, d) * x(src, h, d);
  }
  KOKKOS_INLINE_FUNCTION float finish(float acc, node_t dst, node_t src, int h) const {
    return beta(beta.extent(0) == 1 ? 0 : h) * acc * inv_norm(dst, h) * inv_norm(src, h);
  }
  KOKKOS_INLINE_FUNCTION float value(node_t u, int h, int d) const { return x(u, h, d); }
};

template <class Mem>
struct AdditiveScore {
  static constexpr bool reduces = false;
  Matrix<Mem> el, er;
  Features<Mem> v;
  float slope;
  KOKKOS_INLINE_FUNCTION float term(node_t, node_t, int, int) const { return 0.0f; }
  KOKKOS_INLINE_FUNCTION float finish(float, node_t dst, node_t src, int h) const {
    return leaky_relu(el(src, h) + er(dst, h), slope);
  }
  KOKKOS_INLINE_FUNCTION float value(node_t u, int h, int d) const { return v(u, h, d); }
};

template <class Mem>
struct AdditiveV2Score {
  static constexpr bool reduces = true;
  Features<Mem> xl, xr;
  Matrix<Mem> a;
  float slope;
  KOKKOS_INLINE_FUNCTION float term(node_t dst, node_t src, int h, int d) const {
    return a(h, d) * leaky_relu(xl(src, h, d) + xr(dst, h, d), slope);
  }
  KOKKOS_INLINE_FUNCTION float finish(float acc, node_t, node_t, int) const { return acc; }
  KOKKOS_INLINE_FUNCTION float value(node_t u, int h, int d) const { return xl(u, h, d); }
};

/// Everything a kernel needs besides the score: graph arrays, options, output, shape.
template <class Mem>
struct Problem {
  Kokkos::View<const edge_t*, Mem> row_ptr;
  Kokkos::View<const node_t*, Mem> src, dst;
  Kokkos::View<const edge_t*, Mem> edge_id;  // CSR position -> caller's edge index
  Matrix<Mem> edge_values;                   // [E, 1 or H] or empty
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> lse;  // [N,H] training statistics or empty
  Dropout dropout;
  Output<Mem> out;
  int heads, dim;

  /// The score of CSR edge e, head h, times its edge value.
  KOKKOS_INLINE_FUNCTION float scaled(float s, edge_t e, int h) const {
    return edge_values.data() ? s * edge_values(edge_id(e), edge_values.extent(1) == 1 ? 0 : h) : s;
  }
  /// The dropout factor of CSR edge e, head h (1 without dropout).
  KOKKOS_INLINE_FUNCTION float keep(edge_t e, int h) const {
    return dropout.rate > 0.0f ? dropout.factor(edge_id(e), h) : 1.0f;
  }
  /// Records a row's softmax statistics in training mode.
  KOKKOS_INLINE_FUNCTION void record(node_t v, int h, float max, float sum) const {
    if (lse.data()) lse(v, h) = sum > 0.0f ? max + log(sum) : 0.0f;
  }
};

/// Score of CSR edge e (u -> v), head h, reduced over the calling thread group's vector
/// lanes; every lane gets the result.
template <class Score, class Member, class Mem>
KOKKOS_INLINE_FUNCTION float edge_score(const Member& team, const Score& score,
                                        const Problem<Mem>& p, edge_t e, int h) {
  const node_t v = p.dst(e), u = p.src(e);
  float acc = 0.0f;
  if constexpr (Score::reduces)
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, p.dim),
        [&](int d, float& sum) { sum += score.term(v, u, h, d); }, acc);
  return p.scaled(score.finish(acc, v, u, h), e, h);
}

/// Launches `f` over `league` teams with the plan's geometry, clamping the team size to what
/// the backend allows for this functor.
template <class Exec, class Functor>
void launch(const Exec& exec, const char* name, int league, int team_size, int vector_length,
            const Functor& f, std::size_t scratch_bytes = 0) {
  if (league == 0) return;
  using policy = Kokkos::TeamPolicy<Exec>;
  const int limit = policy(exec, league, 1, vector_length).team_size_max(f, Kokkos::ParallelForTag());
  policy p(exec, league, std::max(1, std::min(team_size, limit)), vector_length);
  if (scratch_bytes) p = p.set_scratch_size(0, Kokkos::PerTeam(scratch_bytes));
  Kokkos::parallel_for(name, p, f);
}

}  // namespace dfgnn::kokkos_impl
