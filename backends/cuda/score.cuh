#pragma once
// Score functors shared by every kernel family. A functor splits a score into the part of the
// destination v (Query, loaded once per row or item), the key row of the source u (loaded by
// the kernel from global or shared memory, so that loads of several edges can be in flight
// before the first reduction), `partial`: kParts per-lane sums that the lane group adds up, and
// `combine`, the score from those totals. eval() below does the sums by shuffles; the Online
// kernel reduces several edges' partials in one transposed tree instead. Lanes of a group must
// all call query() and eval() (they shuffle); loads may diverge.
//
// A model with an edge argument (types.hpp: GT and GATv2 E [E,H,D], GAT ee [E,H]) adds it to
// the source's key row before the score (`edge`, read by the caller's edge id; null: none), and
// GT to the value too (kEdgeInValue): every score's edge term is key-side, so the kernels add it
// where they load the key (add_edge_row, EdgeColumns, add_edge_scalar) and the functors stay as
// they are. A row edge argument's layout (EdgeLayout) may cover only a head's last columns.
//
// Each functor is a template on its tensors' element type E (element.cuh): float, bf16 or f16.
// kKind names the model for the kernels that differ per model.

#include "common.cuh"

#include <type_traits>

namespace dfgnn::cuda::detail {

template <class T, bool kShared, class E>
__device__ __forceinline__ void load_frag(Frag<T>& f, const E* row, int D, int l) {
  if constexpr (kShared)
    load_shared<T>(f, row, D, l);  // staged rows are float
  else
    load_global<T>(f, row, D, l);
}

__device__ __forceinline__ float leaky_relu(float x, float slope) { return x > 0.f ? x : x * slope; }

/// Where a row-key model's edge argument sits in a head's D columns (types.hpp): [E, heads,
/// width], heads 1 (one row for every head) or H, added to the head's last `width` columns;
/// [E,H,D] rows are {H, D}. GT's factored edge projection passes narrow edge columns.
struct EdgeLayout {
  int heads = 0, width = 0;
};

/// A lane's columns of one head of an edge argument (EdgeLayout), rows by the caller's edge id
/// in 64 bits: E may pass 2^32 where node ids cannot. Chunks left of the edge columns, and past
/// D, are outside: loads give 0 there and stores skip them (the vector tiles need `width` a
/// multiple of their lanes' elements: rows_aligned16).
template <class T, class E = float>
struct EdgeColumns {
  std::ptrdiff_t lane;  ///< the entry of the lane's first column in edge 0's row
  std::size_t stride;   ///< elements per edge
  bool inside[T::CHUNKS];

  __device__ EdgeColumns(EdgeLayout s, int D, int h, int l)
      : lane(std::ptrdiff_t(s.heads == 1 ? 0 : h) * s.width + frag_col<T>(0, l) - (D - s.width)),
        stride(std::size_t(s.heads) * s.width) {
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c) inside[c] = frag_col<T>(c, l) >= D - s.width && frag_col<T>(c, l) < D;
  }
  /// Edge id's fragment of t, zeros where !ok or outside.
  __device__ __forceinline__ void load(Frag<T>& f, const E* t, edge_t id, bool ok) const {
    load_chunks<T>(f, t + (std::ptrdiff_t(std::size_t(id) * stride) + lane), [&](int c) { return ok && inside[c]; });
  }
  /// Stores edge id's fragment f into t's columns.
  __device__ __forceinline__ void store(E* t, edge_t id, const Frag<T>& f) const {
    E* row = t + (std::ptrdiff_t(std::size_t(id) * stride) + lane);
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c)
      if (inside[c]) store_vec<T::VEC>(row + c * T::LANES * T::VEC, f.x + T::VEC * c);
  }
};

/// Adds edge id's columns of a row edge argument (EdgeLayout) to a lane's fragment of head h.
template <class T, class E>
__device__ __forceinline__ void add_edge_row(Frag<T>& f, const E* edge, EdgeLayout s, edge_t id, int h, int D, int l) {
  Frag<T> e;
  EdgeColumns<T, E>(s, D, h, l).load(e, edge, id, true);
#pragma unroll
  for (int i = 0; i < T::PER_LANE; ++i) f.x[i] += e.x[i];
}

/// Adds edge id's scalar of a scalar edge argument [E, H] (GAT's ee), held by every lane.
template <class T, class E>
__device__ __forceinline__ void add_edge_scalar(Frag<T>& f, const E* edge, edge_t id, int h, int H) {
  f.x[0] += load_one(edge + std::size_t(id) * H + h);
}

/// GT: scale * <Q[v,h], K[u,h] (+ E[e,h])>; values V (+ E[e,h]).
template <class E = float>
struct GTScore {
  using Elem = E;
  static constexpr ScoreKind kKind = ScoreKind::GT;
  static constexpr bool kRowKey = true;     // the key is a row of D elements (else one scalar)
  static constexpr bool kValueIsKey = false;
  static constexpr bool kEdgeInValue = true;
  const E* q;
  const E* key;
  const E* value;
  float scale;
  const E* edge = nullptr;  // E [E,H,D], or edge columns
  EdgeLayout edge_layout{};

  template <class T>
  struct Query {
    Frag<T> x;
  };
  template <class T>
  __device__ Query<T> query(node_t v, int h, int H, int D, int l) const {
    Query<T> r;
    load_global<T>(r.x, q + (std::size_t(v) * H + h) * D, D, l);
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) r.x.x[i] *= scale;
    return r;
  }
  template <class T, bool kShared, class R>
  __device__ void load_key(Frag<T>& k, const R* row, int D, int l) const {
    load_frag<T, kShared>(k, row, D, l);
  }
  static constexpr int kParts = 1;
  template <class T>
  __device__ void partial(const Query<T>& qv, const Frag<T>& k, float (&x)[kParts]) const {
    x[0] = 0.f;
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) x[0] = fmaf(qv.x.x[i], k.x[i], x[0]);
  }
  template <class T>
  __device__ float combine(const Query<T>&, const float (&x)[kParts]) const {
    return x[0];
  }
};

/// AGNN: beta[h] * cos(X_dst[v,h], X[u,h]), 0 when either vector is zero; values X.
template <class E = float>
struct AGNNScore {
  using Elem = E;
  static constexpr ScoreKind kKind = ScoreKind::AGNN;
  static constexpr bool kRowKey = true;
  static constexpr bool kValueIsKey = true;
  static constexpr bool kEdgeInValue = false;
  static constexpr const E* edge = nullptr;  // no edge argument
  const E* key;  // X, the sources'
  const E* value;
  const E* beta;
  int beta_count;
  const E* q;  // X_dst, the destinations' (key itself where X stands in for it)

  template <class T>
  struct Query {
    Frag<T> x;
    float factor;  // beta[h] / |X_dst[v,h]|, 0 for a zero vector
  };
  template <class T>
  __device__ Query<T> query(node_t v, int h, int H, int D, int l) const {
    Query<T> r;
    load_global<T>(r.x, q + (std::size_t(v) * H + h) * D, D, l);
    float n2 = 0.f;
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) n2 = fmaf(r.x.x[i], r.x.x[i], n2);
    n2 = group_sum<T::LANES>(n2);
    r.factor = n2 > 0.f ? load_one(beta + (beta_count == 1 ? 0 : h)) / sqrtf(n2) : 0.f;
    return r;
  }
  template <class T, bool kShared, class R>
  __device__ void load_key(Frag<T>& k, const R* row, int D, int l) const {
    load_frag<T, kShared>(k, row, D, l);
  }
  static constexpr int kParts = 2;  // <x_v, x_u>, |x_u|^2
  template <class T>
  __device__ void partial(const Query<T>& qv, const Frag<T>& k, float (&x)[kParts]) const {
    x[0] = x[1] = 0.f;
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) x[0] = fmaf(qv.x.x[i], k.x[i], x[0]), x[1] = fmaf(k.x[i], k.x[i], x[1]);
  }
  template <class T>
  __device__ float combine(const Query<T>& qv, const float (&x)[kParts]) const {
    return x[1] > 0.f ? x[0] * qv.factor / sqrtf(x[1]) : 0.f;
  }
};

/// GAT: LeakyReLU(el[u,h] + er[v,h] (+ ee[e,h])); the key is the scalar el[u,h]; values V.
template <class E = float>
struct GATScore {
  using Elem = E;
  static constexpr ScoreKind kKind = ScoreKind::GAT;
  static constexpr bool kRowKey = false;
  static constexpr bool kValueIsKey = false;
  static constexpr bool kEdgeInValue = false;
  const E* key;  // el [N,H]
  const E* er;   // [N,H]
  const E* value;
  float slope;
  const E* edge = nullptr;  // ee [E,H]

  template <class T>
  struct Query {
    float er;
  };
  template <class T>
  __device__ Query<T> query(node_t v, int h, int H, int, int) const {
    return {load_one(er + std::size_t(v) * H + h)};
  }
  template <class T, bool kShared, class R>
  __device__ void load_key(Frag<T>& k, const R* at, int, int) const {
    if constexpr (kShared)
      k.x[0] = *at;  // every lane of the group holds the scalar
    else
      k.x[0] = load_one(at);
  }
  static constexpr int kParts = 1;  // el[u,h] itself: nothing to add up
  template <class T>
  __device__ void partial(const Query<T>&, const Frag<T>& k, float (&x)[kParts]) const {
    x[0] = k.x[0];
  }
  template <class T>
  __device__ float combine(const Query<T>& qv, const float (&x)[kParts]) const {
    return leaky_relu(x[0] + qv.er, slope);
  }
};

/// GATv2: sum_d a[h,d] * LeakyReLU(XL[u,h,d] + XR[v,h,d] (+ E[e,h,d])); values XL.
template <class E = float>
struct GATv2Score {
  using Elem = E;
  static constexpr ScoreKind kKind = ScoreKind::GATv2;
  static constexpr bool kRowKey = true;
  static constexpr bool kValueIsKey = true;
  static constexpr bool kEdgeInValue = false;
  const E* key;  // XL
  const E* value;
  const E* xr;
  const E* a;  // [H,D]
  float slope;
  const E* edge = nullptr;  // E [E,H,D]
  EdgeLayout edge_layout{};  // {H, D}

  template <class T>
  struct Query {
    Frag<T> xr, a;
  };
  template <class T>
  __device__ Query<T> query(node_t v, int h, int H, int D, int l) const {
    Query<T> r;
    load_global<T>(r.xr, xr + (std::size_t(v) * H + h) * D, D, l);
    load_global<T>(r.a, a + std::size_t(h) * D, D, l);
    return r;
  }
  template <class T, bool kShared, class R>
  __device__ void load_key(Frag<T>& k, const R* row, int D, int l) const {
    load_frag<T, kShared>(k, row, D, l);
  }
  static constexpr int kParts = 1;
  template <class T>
  __device__ void partial(const Query<T>& qv, const Frag<T>& k, float (&x)[kParts]) const {
    x[0] = 0.f;
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) x[0] = fmaf(qv.a.x[i], leaky_relu(k.x[i] + qv.xr.x[i], slope), x[0]);
  }
  template <class T>
  __device__ float combine(const Query<T>&, const float (&x)[kParts]) const {
    return x[0];
  }
};

/// Each model's score functor (a new model adds its functor above and its line here); declared
/// only, for ScoreOf.
template <class E>
GTScore<E> score_type(GT, E);
template <class E>
AGNNScore<E> score_type(AGNN, E);
template <class E>
GATScore<E> score_type(GAT, E);
template <class E>
GATv2Score<E> score_type(GATv2, E);
template <class Model, class E = float>
using ScoreOf = decltype(score_type(Model{}, E{}));

/// Whether a score functor takes edge features (AGNN has no edge argument).
template <class S>
inline constexpr bool kHasEdge = S::kKind != ScoreKind::AGNN;

/// Whether S reads float tensors (every strategy runs it) or two-byte ones (Online only).
template <class S>
inline constexpr bool kFloat = std::is_same_v<typename S::Elem, float>;

/// The score of one (edge, head) pair from its key: the partials summed over the lane group
/// (a row key; a scalar key is whole in every lane), then combined.
template <class S, class T>
__device__ __forceinline__ float eval(const S& sc, const typename S::template Query<T>& qv, const Frag<T>& k) {
  float x[S::kParts];
  sc.partial(qv, k, x);
  if constexpr (S::kRowKey) {
#pragma unroll
    for (int p = 0; p < S::kParts; ++p) x[p] = group_sum<T::LANES>(x[p]);
  }
  return sc.combine(qv, x);
}

/// Floats per (node, head) of a functor's key: D for a row key, 1 for a scalar.
template <class S>
__host__ __device__ constexpr int key_width(int D) {
  return S::kRowKey ? D : 1;
}

/// The tile an edge-parallel SDDMM uses: the value tile for row keys, one lane per
/// (edge, head) for scalar keys.
template <class S, class T>
using ScoreTile = std::conditional_t<S::kRowKey, T, Tile<1, 1, 1>>;

}  // namespace dfgnn::cuda::detail
