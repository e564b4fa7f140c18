#pragma once
// Score functors shared by every Kokkos kernel family, and the launch helper.
//
// A score exposes
//   reduces            whether it sums a per-feature term over d (GT, AGNN, GATv2) or not (GAT)
//   terms<W>(v, u, id, h, i)  the sum of the per-feature terms over features [W i, W i + W),
//                      summed further by the vector lanes (term_of: one feature)
//   finish(acc, v, u, id, h)  the score of edge u -> v, head h, from that sum
//   values<W>(u, id, h, i)  those features of the message aggregated by the SpMM (V, X or XL,
//                      GT's plus its edge features; value_of)
//   rows_aligned(W)    whether W = 4 may be used: a lane then moves 4 features in one load (16
//                      bytes of floats, 8 of two-byte elements)
//   element            the type of the call's tensors (float, bf16, f16)
// so SDDMM, softmax and SpMM are written once for all four models. `id` is the edge's index in
// the caller's order, where its edge features are (an empty View: none; the models' edge
// arguments, types.hpp).

#include <dfgnn/detail/kokkos_math.hpp>
#include <dfgnn/detail/kokkos_range.hpp>

#include <dfgnn/dropout.hpp>
#include <dfgnn/half.hpp>
#include <dfgnn/plan.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace dfgnn::kokkos_impl {

/// The portable backend's plan, which the kernel families read (executor.hpp).
template <class Exec>
class PortablePlan;

// A call's tensors, of its element type T (float, or half.hpp's bf16 and f16: docs/design.md,
// "Element types"); the kernels widen what they read to float (to_float) and round what they
// write once (from_float, half.hpp).
template <class Mem, class T = float>
using Features = Kokkos::View<const T***, Kokkos::LayoutRight, Mem>;
template <class Mem, class T = float>
using Matrix = Kokkos::View<const T**, Kokkos::LayoutRight, Mem>;
template <class Mem, class T = float>
using Vector = Kokkos::View<const T*, Kokkos::LayoutRight, Mem>;
template <class Mem, class T = float>
using Output = Kokkos::View<T***, Kokkos::LayoutRight, Mem>;
template <class Mem, class T = float>
using ScalarsOut = Kokkos::View<T**, Kokkos::LayoutRight, Mem>;

/// W consecutive floats, aligned to their size so that W = 4 is one 16-byte access.
template <int W>
struct alignas(4 * W) Vec {
  float x[W];
};

/// W consecutive elements of type T as stored, aligned to their size (one access).
template <class T, int W>
struct alignas(sizeof(T) * W) Packed {
  T x[W];
};

/// Features [W i, W i + W) of row (n, h) of a [N,H,D] (or [E,H,D]) tensor, or of row h of an
/// [H,D] one, widened.
template <int W, class T>
KOKKOS_INLINE_FUNCTION Vec<W> widened(const T* row, int i) {
  const Packed<T, W> p = reinterpret_cast<const Packed<T, W>*>(row)[i];
  Vec<W> x;
  for (int j = 0; j < W; ++j) x.x[j] = to_float(p.x[j]);
  return x;
}
template <int W, class Mem, class T>
KOKKOS_INLINE_FUNCTION Vec<W> chunk(const Features<Mem, T>& t, std::int64_t n, int h, int i) {
  return widened<W>(&t(n, h, 0), i);
}
template <int W, class Mem, class T>
KOKKOS_INLINE_FUNCTION Vec<W> chunk(const Matrix<Mem, T>& t, int h, int i) {
  return widened<W>(&t(h, 0), i);
}

/// Whether every row of these tensors starts on a boundary of W elements (W = 1 always).
template <class... Views>
bool rows_aligned(int W, int dim, const Views&... t) {
  const auto ok = [&](const auto* data) {
    return reinterpret_cast<std::uintptr_t>(data) % (sizeof(*data) * W) == 0;
  };
  return dim % W == 0 && (ok(t.data()) && ...);
}

/// Stores x, rounded to T, as features [W i, W i + W) of row (n, h) of an output tensor.
template <int W, class Mem, class T>
KOKKOS_INLINE_FUNCTION void store(const Output<Mem, T>& t, std::int64_t n, int h, int i, const Vec<W>& x) {
  Packed<T, W> p;
  for (int j = 0; j < W; ++j) p.x[j] = from_float<T>(x.x[j]);
  reinterpret_cast<Packed<T, W>*>(&t(n, h, 0))[i] = p;
}

template <int W>
KOKKOS_INLINE_FUNCTION Vec<W>& operator+=(Vec<W>& a, const Vec<W>& b) {
  for (int j = 0; j < W; ++j) a.x[j] += b.x[j];
  return a;
}
template <int W>
KOKKOS_INLINE_FUNCTION Vec<W> operator*(float s, Vec<W> a) {
  for (int j = 0; j < W; ++j) a.x[j] *= s;
  return a;
}

template <int W>
KOKKOS_INLINE_FUNCTION float dot(const Vec<W>& a, const Vec<W>& b) {
  float s = 0.0f;
  for (int j = 0; j < W; ++j) s += a.x[j] * b.x[j];
  return s;
}

/// The first chunk of W features of a head's row that edge argument e [E, 1 or H, F] adds to:
/// its last F features (types.hpp, GT's edge columns; all of them for [E,H,D]).
template <int W, class Mem, class T>
KOKKOS_INLINE_FUNCTION int edge_first_chunk(const Features<Mem, T>& t, const Features<Mem, T>& e) {
  return int(t.extent(2) - e.extent(2)) / W;
}

/// Row (n, h)'s features [W i, W i + W) of `t`, plus edge `id`'s of `e` where it has some (its
/// one row for every head when it has one head). kEdges false: the call has no edge argument,
/// known at compile time (the Online walk's plain variant: no edge ids loaded, no branch, and
/// the registers they took, which spilled at Online's launch bounds).
template <int W, bool kEdges = true, class Mem, class T>
KOKKOS_INLINE_FUNCTION Vec<W> with_edge(const Features<Mem, T>& t, node_t n, const Features<Mem, T>& e, edge_t id,
                                        int h, int i) {
  Vec<W> x = chunk<W>(t, n, h, i);
  if constexpr (kEdges) {
    if (e.data()) {
      const int first = edge_first_chunk<W>(t, e);
      if (i >= first) x += chunk<W>(e, id, e.extent(1) == 1 ? 0 : h, i - first);
    }
  }
  return x;
}

/// Whether an edge argument's rows allow W features a lane access (rows_aligned, and W
/// dividing its width: its columns start on a chunk).
template <class Mem, class T>
bool edge_aligned(int W, const Features<Mem, T>& e) {
  return !e.data() || (e.extent(2) % W == 0 && rows_aligned(W, int(e.extent(2)), e));
}

template <class Mem, class T = float>
struct GTScore {
  using element = T;
  static constexpr bool reduces = true;
  Features<Mem, T> q, k, v;
  float scale;
  Features<Mem, T> e;  // [E,H,D] (or edge columns [E, 1 or H, F]) added to the key and the value, or empty
  template <int W, bool kEdges = true>
  KOKKOS_INLINE_FUNCTION float terms(node_t dst, node_t src, edge_t id, int h, int i) const {
    return dot(chunk<W>(q, dst, h, i), with_edge<W, kEdges>(k, src, e, id, h, i));
  }
  template <bool kEdges = true>
  KOKKOS_INLINE_FUNCTION float finish(float acc, node_t, node_t, edge_t, int) const { return scale * acc; }
  template <int W, bool kEdges = true>
  KOKKOS_INLINE_FUNCTION Vec<W> values(node_t u, edge_t id, int h, int i) const {
    return with_edge<W, kEdges>(v, u, e, id, h, i);
  }
  bool rows_aligned(int W) const { return kokkos_impl::rows_aligned(W, int(q.extent(2)), q, k, v) && edge_aligned(W, e); }
  bool has_edges() const { return e.data() != nullptr; }
};

template <class Mem, class T = float>
struct AGNNScore {
  using element = T;
  static constexpr bool reduces = true;
  Features<Mem, T> x, x_dst;          // the sources' (and the values), the destinations'
  Matrix<Mem> inv_norm, inv_norm_dst;  // [NS,H], [N,H]; 0 for zero vectors so their cosine is 0
  Vector<Mem, T> beta;                 // [H] or [1]
  template <int W, bool = true>
  KOKKOS_INLINE_FUNCTION float terms(node_t dst, node_t src, edge_t, int h, int i) const {
    return dot(chunk<W>(x_dst, dst, h, i), chunk<W>(x, src, h, i));
  }
  template <bool = true>
  KOKKOS_INLINE_FUNCTION float finish(float acc, node_t dst, node_t src, edge_t, int h) const {
    return to_float(beta(beta.extent(0) == 1 ? 0 : h)) * acc * inv_norm_dst(dst, h) * inv_norm(src, h);
  }
  template <int W, bool = true>
  KOKKOS_INLINE_FUNCTION Vec<W> values(node_t u, edge_t, int h, int i) const { return chunk<W>(x, u, h, i); }
  bool rows_aligned(int W) const { return kokkos_impl::rows_aligned(W, int(x.extent(2)), x, x_dst); }
  bool has_edges() const { return false; }
};

template <class Mem, class T = float>
struct GATScore {
  using element = T;
  static constexpr bool reduces = false;
  Matrix<Mem, T> el, er;
  Features<Mem, T> v;
  float slope;
  Matrix<Mem, T> ee;  // [E,H] edge scores added inside the LeakyReLU, or empty
  template <int W, bool = true>
  KOKKOS_INLINE_FUNCTION float terms(node_t, node_t, edge_t, int, int) const { return 0.0f; }
  /// el_u + er_v (+ ee_e): the LeakyReLU's argument.
  template <bool kEdges = true>
  KOKKOS_INLINE_FUNCTION float logit(node_t dst, node_t src, edge_t id, int h) const {
    const float z = to_float(el(src, h)) + to_float(er(dst, h));
    if constexpr (kEdges) return z + (ee.data() ? to_float(ee(id, h)) : 0.0f);
    return z;
  }
  template <bool kEdges = true>
  KOKKOS_INLINE_FUNCTION float finish(float, node_t dst, node_t src, edge_t id, int h) const {
    return leaky_relu(logit<kEdges>(dst, src, id, h), slope);
  }
  template <int W, bool = true>
  KOKKOS_INLINE_FUNCTION Vec<W> values(node_t u, edge_t, int h, int i) const { return chunk<W>(v, u, h, i); }
  bool rows_aligned(int W) const { return kokkos_impl::rows_aligned(W, int(v.extent(2)), v); }
  bool has_edges() const { return ee.data() != nullptr; }
};

template <class Mem, class T = float>
struct GATv2Score {
  using element = T;
  static constexpr bool reduces = true;
  Features<Mem, T> xl, xr;
  Matrix<Mem, T> a;
  float slope;
  Features<Mem, T> e;  // [E,H,D] added inside the LeakyReLU, or empty
  /// XL_u + XR_v (+ E_e), features [W i, W i + W): the LeakyReLU's argument.
  template <int W, bool kEdges = true>
  KOKKOS_INLINE_FUNCTION Vec<W> logit(node_t dst, node_t src, edge_t id, int h, int i) const {
    Vec<W> z = with_edge<W, kEdges>(xl, src, e, id, h, i);
    z += chunk<W>(xr, dst, h, i);
    return z;
  }
  template <int W, bool kEdges = true>
  KOKKOS_INLINE_FUNCTION float terms(node_t dst, node_t src, edge_t id, int h, int i) const {
    const Vec<W> w = chunk<W>(a, h, i), z = logit<W, kEdges>(dst, src, id, h, i);
    float s = 0.0f;
    for (int j = 0; j < W; ++j) s += w.x[j] * leaky_relu(z.x[j], slope);
    return s;
  }
  template <bool = true>
  KOKKOS_INLINE_FUNCTION float finish(float acc, node_t, node_t, edge_t, int) const { return acc; }
  template <int W, bool = true>
  KOKKOS_INLINE_FUNCTION Vec<W> values(node_t u, edge_t, int h, int i) const { return chunk<W>(xl, u, h, i); }
  bool rows_aligned(int W) const { return kokkos_impl::rows_aligned(W, int(xl.extent(2)), xl, xr, a, e); }
  bool has_edges() const { return e.data() != nullptr; }
};

/// The one-feature forms of terms and values, which most kernels loop over.
template <class Score>
KOKKOS_INLINE_FUNCTION float term_of(const Score& score, node_t dst, node_t src, edge_t id, int h, int d) {
  return score.template terms<1>(dst, src, id, h, d);
}
template <class Score>
KOKKOS_INLINE_FUNCTION float value_of(const Score& score, node_t u, edge_t id, int h, int d) {
  return score.template values<1>(u, id, h, d).x[0];
}

/// Everything a kernel needs besides the score: graph arrays, options, output, shape.
template <class Mem, class T = float>
struct Problem {
  Kokkos::View<const edge_t*, Mem> row_ptr;
  Kokkos::View<const node_t*, Mem> src, dst;
  Kokkos::View<const edge_t*, Mem> edge_id;  // CSR position -> caller's edge index
  Matrix<Mem, T> edge_values;                // [E, 1 or H] or empty
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> lse;  // [N,H] training statistics or empty
  Dropout dropout;
  Output<Mem, T> out;
  int heads, dim;

  /// Stores feature d of row (v, h) of the output, rounded to T.
  KOKKOS_INLINE_FUNCTION void put(node_t v, int h, int d, float x) const { out(v, h, d) = from_float<T>(x); }

  /// The score of CSR edge e, head h, times its edge value.
  KOKKOS_INLINE_FUNCTION float scaled(float s, edge_t e, int h) const {
    return edge_values.data() ? s * to_float(edge_values(edge_id(e), edge_values.extent(1) == 1 ? 0 : h)) : s;
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
template <class Score, class Member, class Mem, class T>
KOKKOS_INLINE_FUNCTION float edge_score(const Member& team, const Score& score,
                                        const Problem<Mem, T>& p, edge_t e, int h) {
  const node_t v = p.dst(e), u = p.src(e);
  const edge_t id = p.edge_id(e);
  float acc = 0.0f;
  if constexpr (Score::reduces)
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, p.dim),
        [&](int d, float& sum) { sum += term_of(score, v, u, id, h, d); }, acc);
  return p.scaled(score.finish(acc, v, u, id, h), e, h);
}

/// How a launch deals its teams to a host's threads: on demand, since rows differ in degree
/// (R-MAT's by four orders of magnitude) and an even split of the teams leaves threads idle
/// behind the one with the longest rows. A GPU schedules teams itself.
template <class Exec>
using TeamSchedule = std::conditional_t<Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible,
                                        Kokkos::Schedule<Kokkos::Dynamic>, Kokkos::Schedule<Kokkos::Static>>;

/// `team_size` clamped to what the backend allows for this functor at this vector length.
/// Traits: further TeamPolicy properties (LaunchBounds), as the launch will have them.
template <class... Traits, class Exec, class Functor>
int team_size_for(const Exec& exec, int team_size, int vector_length, const Functor& f) {
  const int limit =
      Kokkos::TeamPolicy<Exec, TeamSchedule<Exec>, Traits...>(exec, 1, 1, vector_length)
          .team_size_max(f, Kokkos::ParallelForTag());
  return std::max(1, std::min(team_size, limit));
}

/// A launch's team count as Kokkos takes it (an int): Error, naming the kernel, beyond 2^31 - 1.
/// Team counts are computed in 64 bits (rows or edges over rows per team), so that a graph near
/// 2^31 nodes or a larger edge count cannot wrap them around.
inline int league_of(const char* name, std::int64_t teams) {
  if (teams > std::numeric_limits<int>::max())
    throw Error(std::string(name) + ": " + std::to_string(teams) + " teams, more than the 2^31 - 1 a launch takes");
  return int(teams);
}

/// Launches `f` over `league` teams of `team_size` threads, a size the backend allows
/// (team_size_for).
template <class... Traits, class Exec, class Functor>
void launch_sized(const Exec& exec, const char* name, std::int64_t league, int team_size, int vector_length,
                  const Functor& f, std::size_t scratch_bytes = 0) {
  if (league == 0) return;
  Kokkos::TeamPolicy<Exec, TeamSchedule<Exec>, Traits...> p(exec, league_of(name, league), team_size, vector_length);
  if (scratch_bytes) p = p.set_scratch_size(0, Kokkos::PerTeam(scratch_bytes));
  Kokkos::parallel_for(name, p, f);
}

/// Launches `f` over `league` teams with the plan's geometry, clamping the team size to what
/// the backend allows for this functor.
template <class... Traits, class Exec, class Functor>
void launch(const Exec& exec, const char* name, std::int64_t league, int team_size, int vector_length,
            const Functor& f, std::size_t scratch_bytes = 0) {
  if (league == 0) return;
  launch_sized<Traits...>(exec, name, league, team_size_for<Traits...>(exec, team_size, vector_length, f),
                          vector_length, f, scratch_bytes);
}

}  // namespace dfgnn::kokkos_impl
