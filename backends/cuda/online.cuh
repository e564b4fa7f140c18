#pragma once
// Online: the whole softmax of a row in registers, one kernel (+ the merge of split rows).
// A warp's lane groups take (row slot, head) pairs: hp = min(H, GROUPS) heads at once, all heads
// of a row in the same warp (passes when H > GROUPS), and the GROUPS / hp remaining slots go to
// `ep` contiguous slices of each of `GROUPS / (hp * ep)` rows. A group keeps its running
// (max, sum, accumulator), rescaled when the max grows, and has U edges in flight per step: the
// 16-byte loads of U key and value rows are issued together, the source ids come from one
// group-wide coalesced load a chunk ahead, and the U scores are reduced by one transposed shuffle
// tree. Rows above `split` edges are done as pieces (listed before the rows, so the longest work
// starts first) whose (max, sum, accumulator) go to partial slots for merge.cuh.
// On graphs whose features stay in L1/L2 (batches) the loop's instruction count sets the time
// (docs/cuda.md), so a row address is one wide multiply-add, and the steps where every group has
// U valid edges (all but a row's last) run without bounds checks or zero fills.

#include "merge.cuh"
#include "steps.cuh"

#include <type_traits>

namespace dfgnn::cuda::detail {

/// Edges a lane group has in flight per step: as many as keep a key and a value fragment of each
/// within the register budget, and at most one per lane (the transposed reduction needs it).
template <class T>
inline constexpr int kOnlineEdges = T::LANES < 4 ? T::LANES : T::PER_LANE <= 4 ? 4 : T::PER_LANE <= 8 ? 2 : 1;

/// Edges a lane group of Online has in flight per step for score S: kOnlineEdges<T>, but 4 on
/// 16-byte lanes of 8 two-byte elements (at least 4 lanes: one edge a lane for the transposed
/// reduction) where a step loads one row per edge: a scalar key (GAT), whose 4 value rows still
/// fit the registers of 4 blocks (1.1-1.3x faster on every benchmark graph), or a key that is
/// its own value (AGNN, GATv2), whose 4 rows fit those of 3 (kOnlineRowMinBlocks; 1.05-1.31x).
/// GT at 4 (2 blocks), with a key and a value row per edge, was up to 10% slower on
/// web-NotreDame, R-MAT and PATTERN-like (docs/cuda.md, "Element types").
template <class S, class T>
inline constexpr int kOnlineStepEdges =
    (!S::kRowKey || S::kValueIsKey) && T::VEC == 8 && T::PER_LANE == 8 && T::LANES >= 4 ? 4 : kOnlineEdges<T>;

/// Threads per block at most (the launch bounds).
inline constexpr int kOnlineThreads = 256;

/// Blocks per SM the launch bounds ask for (Online and the backward walks; kOnlineRowMinBlocks
/// refines it for GT): 4 (64 registers) where a lane holds one chunk or the tile pairs rows; 2
/// for a warp-wide tile of several chunks. The paired tile at 2 was 4-30% slower
/// (docs/cuda.md, "Online", Paired rows).
template <class T>
inline constexpr int kOnlineMinBlocks = T::PER_LANE <= 4 || T::LANES < kWarp ? 4 : 2;

/// The bound of Online and the backward's row walk for score S: 3 (80 registers) where a group
/// keeps the 16-byte fragments of 4 key rows and 4 value rows in flight (GT) with fewer than 32
/// lanes (D <= 64) or with dropout: at 64 registers those spilled 44-116 bytes around the step, and
/// 3 blocks made GT 3-25% faster; the other scores spill less and lost 5-19% at 3 (docs/cuda.md,
/// "Online"). Also 3 where a key that is its own value has 4 rows of 8 two-byte elements in flight
/// (kOnlineStepEdges): against 2 edges at 4 blocks it ran 1.05-1.31x as fast at 3 blocks (52 bytes
/// of spill stores for GATv2 at 1x128), 0.87-1.18x at 2 (no spills, but the rows in flight per SM
/// of 2 edges at 4 blocks; docs/cuda.md, "Element types").
template <class S, class T, bool kDrop>
inline constexpr int kOnlineRowMinBlocks = (S::kRowKey && !S::kValueIsKey && T::PER_LANE == 4 &&
                                            kOnlineEdges<T> == 4 && (T::LANES < kWarp || kDrop)) ||
                                                   (S::kValueIsKey && T::VEC == 8 && kOnlineStepEdges<S, T> == 4)
                                               ? 3
                                               : kOnlineMinBlocks<T>;

/// The block of Online and the backward walks: a block holds its SM slots until its slowest
/// row ends, so with uneven degrees blocks of 4 warps free them sooner (2-7% faster on
/// pubmed, tolokers, web-NotreDame, R-MAT), with even ones 8 launch fewer blocks (CLUSTER-like
/// GT 13% slower at 4); docs/cuda.md.
inline int online_threads(bool uneven) { return uneven ? kOnlineThreads / 2 : kOnlineThreads; }

__host__ __device__ inline int floor_pow2(int x) {
  int p = 1;
  while (2 * p <= x) p *= 2;
  return p;
}

/// A lane's columns of one head of a node tensor [N, H, width] of E: node u's fragment is at
/// base + u * stride bytes, one wide multiply-add per row address.
template <class T, class E = float>
struct HeadColumns {
  const char* base;  ///< node 0, head h, the lane's first column
  unsigned stride;   ///< bytes per node
  bool inside[T::CHUNKS];

  __device__ HeadColumns(const E* t, int H, int width, int h, int l)
      : base(reinterpret_cast<const char*>(t + std::size_t(h) * width + frag_col<T>(0, l))),
        stride(unsigned(H) * unsigned(width) * unsigned(sizeof(E))) {
    keep_in_register(base);
#pragma unroll
    for (int c = 0; c < T::CHUNKS; ++c) inside[c] = frag_col<T>(c, l) < width;
  }
  /// The fragment of node u. kAll: every column is inside the row and the edge is valid, so
  /// the loads need neither a predicate nor zeros; else zeros where !ok or outside.
  template <bool kAll>
  __device__ __forceinline__ void load(Frag<T>& f, node_t u, bool ok) const {
    load_chunks<T>(f, row_at<E>(base, unsigned(u), stride), [&](int c) { return kAll || (ok && inside[c]); });
  }
};

template <class T>
__device__ __forceinline__ void add(Frag<T>& a, const Frag<T>& b) {
#pragma unroll
  for (int i = 0; i < T::PER_LANE; ++i) a.x[i] += b.x[i];
}

/// Ids of a segment's edges for one lane group (source nodes, or caller's edge ids), L at a
/// time: lane l holds edge pos + l of the current chunk, and the next chunk is fetched a chunk
/// ahead (as the Online kernel's source ids), 0 past the end.
template <int L, class Id = node_t>
struct IdStream {
  const Id* ids;  ///< edge ids: null for the identity (caller_edge)
  edge_t e0;
  int len, l;
  Id cur = 0, next;
  __device__ IdStream(const Id* ids_, edge_t e0_, int len_, int l_) : ids(ids_), e0(e0_), len(len_), l(l_) {
    next = l < len ? load(l) : Id(0);
  }
  __device__ __forceinline__ Id load(int pos) const {
    if constexpr (std::is_same_v<Id, edge_t>) return caller_edge(ids, e0 + pos);
    return __ldg(ids + e0 + pos);
  }
  /// At the start of a step at edge pos (a multiple of U, U dividing L).
  __device__ __forceinline__ void advance(int pos) {
    if (pos % L != 0) return;
    cur = next;
    next = pos + L + l < len ? load(pos + L + l) : Id(0);
  }
  __device__ __forceinline__ Id at(int pos) const { return __shfl_sync(kFull, cur, pos % L, L); }
};

/// Dropout factors of a lane group's edges e0 .. e0 + len, L at a time as the source ids: lane l
/// draws edge pos + l's, so a group hashes each edge once (one hash per L edges) instead of once
/// in each of the L / U lanes that handle it. The edge ids are loaded a chunk ahead and hashed
/// after the step has issued its row loads, so that neither waits in front of them.
template <int L, bool kDrop>
struct KeepStream {
  const Train& tr;
  edge_t e0;
  int len, l, h;
  edge_t next = 0;  ///< caller's edge id of edge pos + L + l (of the next chunk)
  float cur = 1.f;
  __device__ KeepStream(const Train& tr_, edge_t e0_, int len_, int l_, int h_)
      : tr(tr_), e0(e0_), len(len_), l(l_), h(h_) {
    if constexpr (kDrop) next = l < len ? caller_edge(tr.edge_id, e0 + l) : 0;
  }
  /// In a step at edge pos (a multiple of U, U dividing L), after its row loads.
  __device__ __forceinline__ void advance(int pos) {
    if constexpr (kDrop) {
      if (pos % L != 0) return;
      cur = pos + l < len ? tr.dropout.factor(next, h) : 0.f;
      next = pos + L + l < len ? caller_edge(tr.edge_id, e0 + pos + L + l) : 0;
    }
  }
  /// The factor of edge pos (in the current chunk); every lane of the group must call it.
  __device__ __forceinline__ float at(int pos) const { return kDrop ? __shfl_sync(kFull, cur, pos % L, L) : 1.f; }
};

/// Transposed sum over a group of LANES lanes of U per-lane partials x[0..U): afterwards x[0]
/// holds, in lane l, the group total of partial l / (LANES / U). The first log2(U) steps halve
/// the values each lane carries, the others add one: U - 1 + log2(LANES / U) shuffles instead of
/// U * log2(LANES) for U separate butterflies.
template <int LANES, int U>
__device__ __forceinline__ void reduce_scatter(float (&x)[U], int l) {
#pragma unroll
  for (int n = U, o = LANES / 2; n > 1; n /= 2, o /= 2) {
    const bool upper = (l & o) != 0;
#pragma unroll
    for (int i = 0; i < n / 2; ++i) {
      const float send = upper ? x[i] : x[i + n / 2];
      const float mine = upper ? x[i + n / 2] : x[i];
      x[i] = mine + __shfl_xor_sync(kFull, send, o);
    }
  }
#pragma unroll
  for (int o = LANES / (2 * U); o > 0; o /= 2) x[0] += __shfl_xor_sync(kFull, x[0], o);
}

/// Butterfly over the lanes that hold different edges after reduce_scatter (lane bits
/// LANES / U .. LANES / 2): every lane ends with op over the U edges.
template <int LANES, int U, class Op>
__device__ __forceinline__ float across_edges(float x, Op op) {
#pragma unroll
  for (int o = LANES / 2; o >= LANES / U && o > 0; o /= 2) x = op(x, __shfl_xor_sync(kFull, x, o));
  return x;
}

/// kExact: D fills the tile (every lane's columns are inside the row). kEdge: the score functor
/// has edge features (score.cuh), added to each edge's key (and GT's value) as they load.
template <class S, class T, bool kDrop, bool kExact, bool kEdge = false>
__global__ void __launch_bounds__(kOnlineThreads, kOnlineRowMinBlocks<S, T, kDrop>)
    online_kernel(S sc, DeviceGraph g, EdgeScaleOf<typename S::Elem> w, Train tr, int H, int D, edge_t split,
                  int ep_rows, const Piece* __restrict__ pieces, int num_pieces, typename S::Elem* __restrict__ out,
                  Partials part) {
  using E = typename S::Elem;
  allow_dependents();  // the merge of split rows (launch_dependent) may get resident
  constexpr int U = kOnlineStepEdges<S, T>;
  constexpr int L = T::LANES;
  const int lane = threadIdx.x % kWarp, grp = lane / L, l = lane % L;
  const std::int64_t unit = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int hp = H < T::GROUPS ? H : T::GROUPS, slots = T::GROUPS / hp, r = grp / hp;

  // The warp's unit: a piece of a split row (all slots on it) or `rows` consecutive rows.
  int ep, slot = -1;
  node_t v;
  edge_t a, b;
  bool mine;  // this group's row is finished here
  if (unit < num_pieces) {
    const Piece pc = pieces[unit];
    ep = floor_pow2(slots);
    v = pc.row, a = pc.e0, b = pc.e1, slot = pc.slot;
    mine = r < ep;
  } else {
    ep = ep_rows;
    const int rows = slots / ep;
    const std::int64_t first = (unit - num_pieces) * rows;
    if (first >= g.num_nodes) return;  // whole warps only
    const std::int64_t row = first + r / ep;
    mine = r < rows * ep && row < g.num_nodes;
    v = node_t(mine ? row : first);
    a = __ldg(g.row_ptr + v), b = __ldg(g.row_ptr + v + 1);
    if (b - a > split) mine = false;  // its pieces do it
  }
  const int k = r & (ep - 1), log_ep = __ffs(ep) - 1;  // this group's slice of the row
  const std::int64_t n = mine ? b - a : 0;
  const edge_t e0 = a + ((n * k) >> log_ep), e1 = a + ((n * (k + 1)) >> log_ep);
  const int own = l / (L / U);  // the edge of a step whose score this lane reduces

  for (int pass = 0; pass * hp < H; ++pass) {
    const int head = pass * hp + grp % hp;
    const bool active = mine && head < H;
    const int h = head < H ? head : H - 1;  // idle groups shadow a valid head
    const int len = active ? int(e1 - e0) : 0;
    // Steps of the warp, and how many of them have U valid edges in every active group: those
    // load without bounds checks (idle groups load node 0's rows and weigh them 0).
    const int steps = int(__reduce_max_sync(kFull, unsigned((len + U - 1) / U)));
    const int full = min(steps, int(__reduce_min_sync(kFull, active ? unsigned(len / U) : ~0u >> 1)));
    const auto q = sc.template query<T>(v, h, H, D, l);
    const HeadColumns<T, E> keys(sc.key, H, key_width<S>(D), h, l), values(sc.value, H, D, h, l);
    float m = -INFINITY, s = 0.f;  // s: this lane's share, the sum of its own edges' exponentials
    Frag<T> acc;
#pragma unroll
    for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = 0.f;
    // Source ids of edges pos .. pos + L: lane l holds edge pos + l, 0 (a valid node) past the end.
    node_t cur = 0, next = l < len ? __ldg(g.src + e0 + l) : 0;
    KeepStream<L, kDrop> keeps(tr, e0, len, l, h);
    IdStream<L, edge_t> edge_ids(g.edge_id, e0, kEdge ? len : 0, l);  // loads nothing without edges

    auto step = [&](int t, auto checked) {
      constexpr bool kChecked = decltype(checked)::value;
      const int pos = t * U;
      if (pos % L == 0) {  // the next L source ids, prefetched a chunk ahead
        cur = next;
        next = pos + L + l < len ? __ldg(g.src + e0 + pos + L + l) : 0;
      }
      Frag<T> kf[U], vf[U];
      node_t u_own = 0;
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const node_t u = __shfl_sync(kFull, cur, (pos + j) % L, L);
        if (j == own) u_own = u;
        const bool ok = !kChecked || pos + j < len;
        if constexpr (S::kRowKey) keys.template load<kExact && !kChecked>(kf[j], u, ok);
        if constexpr (!S::kValueIsKey) values.template load<kExact && !kChecked>(vf[j], u, ok);
      }
      if constexpr (kEdge && S::kRowKey) {
        edge_ids.advance(pos);
        const EdgeColumns<T, E> edges(sc.edge_layout, D, h, l);
#pragma unroll
        for (int j = 0; j < U; ++j) {
          Frag<T> ef;
          edges.load(ef, sc.edge, edge_ids.at(pos + j), !kChecked || pos + j < len);
          if constexpr (S::kValueIsKey) vf[j] = kf[j];  // GATv2: the value stays XL_u, the key gets E_e
          add(kf[j], ef);
          if constexpr (S::kEdgeInValue) add(vf[j], ef);
        }
      }
      keeps.advance(pos);
      const bool ok = kChecked ? pos + own < len : active;
      float score;
      if constexpr (S::kRowKey) {
        float x[S::kParts][U];
#pragma unroll
        for (int j = 0; j < U; ++j) {
          float y[S::kParts];
          sc.partial(q, kf[j], y);
#pragma unroll
          for (int p = 0; p < S::kParts; ++p) x[p][j] = y[p];
        }
        float total[S::kParts];
#pragma unroll
        for (int p = 0; p < S::kParts; ++p) reduce_scatter<L, U>(x[p], l), total[p] = x[p][0];
        score = sc.combine(q, total);
      } else {  // a scalar key: each lane loads only its own edge's
        Frag<T> k1;
        k1.x[0] = ok ? load_one(sc.key + std::size_t(unsigned(u_own)) * H + h) : 0.f;
        if constexpr (kEdge) {
          edge_ids.advance(pos);
          const edge_t id = edge_ids.at(pos + own);
          if (ok) add_edge_scalar(k1, sc.edge, id, h, H);
        }
        float y[S::kParts];
        sc.partial(q, k1, y);
        score = sc.combine(q, y);
      }
      const edge_t e = e0 + pos + own;
      score = ok ? score * w(e, h) : -INFINITY;
      const float mx = across_edges<L, U>(score, [](float x, float y) { return fmaxf(x, y); });
      if (mx > m) {  // the same in the whole group
        const float c = fast_exp(m - mx);
        s *= c;
#pragma unroll
        for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] *= c;
        m = mx;
      }
      const float p = ok ? fast_exp(score - m) : 0.f;
      s += p;
      const float keep = keeps.at(pos + own);
      const float pd = ok ? p * keep : 0.f;
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const float pj = __shfl_sync(kFull, pd, j * (L / U), L);
        const Frag<T>& val = S::kValueIsKey && !kEdge ? kf[j] : vf[j];
#pragma unroll
        for (int i = 0; i < T::PER_LANE; ++i) acc.x[i] = fmaf(pj, val.x[i], acc.x[i]);
      }
    };
    int t = 0;
    for (; t < full; ++t) step(t, std::false_type{});
    for (; t < steps; ++t) step(t, std::true_type{});

    s = across_edges<L, U>(s, [](float x, float y) { return x + y; });
    merge_edge_slots<T>(m, s, acc, k, ep, hp * L);
    if (active && k == 0) finish_row<T>(acc, m, s, slot, v, head, H, D, l, out, part, tr);
  }
}

}  // namespace dfgnn::cuda::detail
