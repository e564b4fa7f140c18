#pragma once
// Online: the CUDA-native Online strategy (backends/cuda/online.cuh) on portable Kokkos.
//
// One thread group (a team thread and its vector lanes) per (row, head) walks the row's edges
// once with an online softmax: running max and sum, and a D-float accumulator rescaled when the
// max grows. Per-edge scores are never stored. The accumulator lives in team scratch, one slot
// per thread group (lanes own the features they accumulate; arrays indexed by lane are not
// portable), and kOnlineEdges scores are reduced together so their loads are in flight at once.
// Rows above the plan's split are walked as pieces (listed before the rows) whose partial
// (max, sum, accumulator) a second launch merges in piece order: no atomics, reproducible.

#include "rowwise.hpp"

#include <type_traits>

namespace dfgnn::kokkos_impl {

/// Edges whose scores a thread group reduces in one pass over the features (a row's last
/// degree % kOnlineEdges edges go one at a time).
inline constexpr int kOnlineEdges = 4;

/// A lane's partial sums of the U scores of a step.
template <int U>
struct EdgeSums {
  float x[U];
  KOKKOS_INLINE_FUNCTION EdgeSums() {
    for (int j = 0; j < U; ++j) x[j] = 0.0f;
  }
  KOKKOS_INLINE_FUNCTION EdgeSums& operator+=(const EdgeSums& o) {
    for (int j = 0; j < U; ++j) x[j] += o.x[j];
    return *this;
  }
};

}  // namespace dfgnn::kokkos_impl

// What Kokkos::Sum needs of a custom value type.
namespace Kokkos {
template <int U>
struct reduction_identity<dfgnn::kokkos_impl::EdgeSums<U>> {
  KOKKOS_FORCEINLINE_FUNCTION static dfgnn::kokkos_impl::EdgeSums<U> sum() { return {}; }
};
}  // namespace Kokkos

namespace dfgnn::kokkos_impl {

/// Per-lane accumulator: K features in registers (lane l owns features l, l + lanes, ...), or
/// (K == 0) the thread group's D-float slot in team scratch, indexed by feature.
template <int K>
struct Accumulator {
  float x[K];
  KOKKOS_INLINE_FUNCTION float& operator[](int k) { return x[k]; }
};
template <>
struct Accumulator<0> {
  float* x;
  KOKKOS_INLINE_FUNCTION float& operator[](int k) { return x[k]; }
};

/// K > 0: each vector lane keeps its K features of the accumulator in registers, the lane ->
/// feature map fixed by a ThreadVectorRange over the `lanes` lanes of the launch. That needs
/// lanes that are separate threads (GPU spaces) or a vector length of 1 (what the launcher
/// uses on host spaces, whose vector ranges run sequentially in one thread). K == 0: the
/// accumulator in team scratch, features mapped to lanes by Kokkos (any D, any space).
template <class Exec, class Score, int K>
struct Online {
  using Mem = typename Exec::memory_space;
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;
  using scratch = Kokkos::View<float*, typename Exec::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  /// Edges per step: their U scores reduced together and their U value rows loaded together,
  /// fewer when each lane already holds many features.
  static constexpr bool kHost = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  static constexpr int U = K == 0 ? kOnlineEdges : K <= 2 ? 2 * kOnlineEdges : K <= 4 ? kOnlineEdges : kOnlineEdges / 2;

  Problem<Mem> p;
  Score score;
  Kokkos::View<const RowPiece*, Mem> pieces;
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> partials;
  edge_t split;
  int team_units;  // (piece or row) units per team, each for every head
  int lanes;       // K > 0: the launch's vector length

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    float* slots = nullptr;
    if constexpr (K == 0) slots = scratch(team.team_scratch(0), std::size_t(team.team_size()) * p.dim).data();
    const std::int64_t u0 = std::int64_t(team.league_rank()) * team_units;
    const std::int64_t num_pieces = std::int64_t(pieces.extent(0));
    const std::int64_t units = num_pieces + std::int64_t(p.row_ptr.extent(0)) - 1;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, team_units * p.heads), [&](int k) {
      const std::int64_t unit = u0 + k / p.heads;
      const int h = k % p.heads;
      Accumulator<K> acc;
      if constexpr (K == 0) acc.x = slots + team.team_rank() * p.dim;
      float m = 0.0f, sum = 0.0f;
      if (unit < num_pieces) {
        const RowPiece pc = pieces(unit);
        walk(team, acc, pc.row, pc.e0, pc.e1, h, m, sum);
        const std::int64_t r = unit * p.heads + h;
        each_feature(team, [&](int d, int i) { partials(r, 2 + d) = acc[i]; });
        Kokkos::single(Kokkos::PerThread(team), [&] { partials(r, 0) = m, partials(r, 1) = sum; });
      } else if (unit < units) {
        const node_t v = node_t(unit - num_pieces);
        const edge_t a = p.row_ptr(v), b = p.row_ptr(v + 1);
        if (b - a > split) return;  // its pieces do it
        walk(team, acc, v, a, b, h, m, sum);
        each_feature(team, [&](int d, int i) { p.out(v, h, d) = b > a ? acc[i] / sum : 0.0f; });
        Kokkos::single(Kokkos::PerThread(team), [&] { p.record(v, h, m, sum); });
      }
    });
  }

  /// f(d, i) for each feature d of the calling lane, i its accumulator index.
  template <class F>
  KOKKOS_INLINE_FUNCTION void each_feature(const member& team, const F& f) const {
    if constexpr (K == 0) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, p.dim), [&](int d) { f(d, d); });
    } else {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, lanes), [&](int l) {
        for (int i = 0; i < K; ++i)
          if (l + i * lanes < p.dim) f(l + i * lanes, i);
      });
    }
  }

  /// Source ids of edges [e, e + N), the row's last edge (b - 1) standing in past its end.
  template <int N>
  KOKKOS_INLINE_FUNCTION void ids(edge_t e, edge_t b, node_t (&u)[N]) const {
    for (int j = 0; j < N; ++j) u[j] = p.src(e + j < b ? e + j : b - 1);
  }

  // Edges [a, b) of row v, head h: the max m and sum of exponentials, and the accumulator
  // sum_e exp(s_e - m) keep_e value(u_e) (0 when a == b). The next step's source ids are
  // loaded before the current step's rows, so their latency overlaps its work. A row's last
  // degree % U edges: on a GPU one step with the missing slots weighing 0 (idle lanes cost
  // nothing), on a host one at a time (no wasted work).
  KOKKOS_INLINE_FUNCTION void walk(const member& team, Accumulator<K>& acc, node_t v, edge_t a, edge_t b, int h,
                                   float& m, float& sum) const {
    each_feature(team, [&](int, int i) { acc[i] = 0.0f; });
    const edge_t end = kHost ? a + (b - a) / U * U : b;  // the steps of U edges end here
    edge_t e = a;
    if (e < end) {
      node_t u[U];
      ids(e, b, u);
      for (; e < end; e += U) {
        node_t next[U];
        if (end - e > U)
          ids(e + U, b, next);
        else
          for (int j = 0; j < U; ++j) next[j] = u[j];
        step<U>(team, acc, v, e, b - e < U ? int(b - e) : U, h, e == a, m, sum, u);
        for (int j = 0; j < U; ++j) u[j] = next[j];
      }
    }
    for (; e < b; ++e) {
      const node_t u[1] = {p.src(e)};
      step<1>(team, acc, v, e, 1, h, e == a, m, sum, u);
    }
  }

  // Edges [e, e + n) (n <= N; the slots past n repeat the row's last edge and weigh 0): their
  // scores reduced together, then one update of the running state.
  template <int N>
  KOKKOS_INLINE_FUNCTION void step(const member& team, Accumulator<K>& acc, node_t v, edge_t e, int n, int h,
                                   bool first, float& m, float& sum, const node_t (&u)[N]) const {
    EdgeSums<N> t;
    // Register path: the lane's value features of the N edges, loaded with the keys at the
    // step's start so that the two row loads overlap (the reduction's lane exchange would
    // otherwise keep the value loads behind it).
    float val[N][K == 0 ? 1 : K];
    if constexpr (K == 0) {
      if constexpr (Score::reduces)
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(team, p.dim),
            [&](int d, EdgeSums<N>& part) {
              for (int j = 0; j < N; ++j) part.x[j] += score.term(v, u[j], h, d);
            },
            Kokkos::Sum<EdgeSums<N>>(t));
    } else if constexpr (Score::reduces) {
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, lanes),
          [&](int l, EdgeSums<N>& part) {
            for (int i = 0; i < K; ++i)
              if (l + i * lanes < p.dim)
                for (int j = 0; j < N; ++j) {
                  part.x[j] += score.term(v, u[j], h, l + i * lanes);
                  val[j][i] = score.value(u[j], h, l + i * lanes);
                }
          },
          Kokkos::Sum<EdgeSums<N>>(t));
    } else {
      each_feature(team, [&](int d, int i) {
        for (int j = 0; j < N; ++j) val[j][i] = score.value(u[j], h, d);
      });
    }
    float top = m;
    for (int j = 0; j < N; ++j)
      if (j < n) {
        t.x[j] = p.scaled(score.finish(t.x[j], v, u[j], h), e + j, h);
        top = first && j == 0 ? t.x[0] : fmax(top, t.x[j]);
      }
    const float c = first ? 0.0f : top > m ? exp(m - top) : 1.0f;  // the max rarely grows
    float w[N];
    sum *= c;
    for (int j = 0; j < N; ++j) {
      w[j] = 0.0f;
      if (j < n) {
        const float x = exp(t.x[j] - top);
        sum += x;
        w[j] = x * p.keep(e + j, h);
      }
    }
    m = top;
    each_feature(team, [&](int d, int i) {
      float y = acc[i] * c;
      for (int j = 0; j < N; ++j) {
        if constexpr (K == 0)
          y += w[j] * score.value(u[j], h, d);
        else
          y += w[j] * val[j][i];
      }
      acc[i] = y;
    });
  }
};

/// Second launch: a split row's pieces merged in order into its output and statistics.
template <class Mem>
struct MergePieces {
  Problem<Mem> p;
  Kokkos::View<const SplitRow*, Mem> rows;
  Kokkos::View<const float**, Kokkos::LayoutRight, Mem> partials;

  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team, node_t i, int h) const {
    const SplitRow r = rows(i);
    const std::int64_t first = std::int64_t(r.first) * p.heads + h;
    float m = partials(first, 0), sum = 0.0f;
    for (int j = 1; j < r.count; ++j) m = fmax(m, partials(first + j * p.heads, 0));
    for (int j = 0; j < r.count; ++j) {
      const std::int64_t k = first + j * p.heads;
      sum += partials(k, 1) * exp(partials(k, 0) - m);
    }
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, p.dim), [&](int d) {
      float y = 0.0f;
      for (int j = 0; j < r.count; ++j) {
        const std::int64_t k = first + j * p.heads;
        y += partials(k, 2 + d) * exp(partials(k, 0) - m);
      }
      p.out(r.row, h, d) = y / sum;
    });
    Kokkos::single(Kokkos::PerThread(team), [&] { p.record(r.row, h, m, sum); });
  }
};

/// launch() with the light-weight hint: on Kokkos::Cuda a functor above 512 bytes (these are)
/// otherwise goes through constant memory, whose staging buffer waits until the previous such
/// kernel has finished; as a kernel argument (up to 4 KB) back-to-back launches overlap.
template <class Exec, class Functor>
void launch_light(const Exec& exec, const char* name, int league, int team_size, int vector_length,
                  const Functor& f, std::size_t scratch_bytes = 0) {
  if (league == 0) return;
  using policy = Kokkos::TeamPolicy<Exec>;
  const auto light = Kokkos::Experimental::WorkItemProperty::HintLightWeight;
  const int limit =
      Kokkos::Experimental::require(policy(exec, league, 1, vector_length), light).team_size_max(f, Kokkos::ParallelForTag());
  auto p = Kokkos::Experimental::require(policy(exec, league, std::max(1, std::min(team_size, limit)), vector_length),
                                         light);
  if (scratch_bytes) p = p.set_scratch_size(0, Kokkos::PerTeam(scratch_bytes));
  Kokkos::parallel_for(name, p, f);
}

template <class Exec, class Score>
void online(const Exec& exec, const Plan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
            const Score& score) {
  using Mem = typename Exec::memory_space;
  const auto& L = plan.layout();
  const std::int64_t units = std::int64_t(L.pieces.extent(0)) + plan.graph().num_nodes();
  // Host spaces run a group's vector lanes in one thread: one lane there, so that the
  // register accumulator's lane -> feature map holds.
  constexpr bool host = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
  const int lanes = host ? 1 : L.vector_length;
  const int per_lane = (p.dim + lanes - 1) / lanes;
  auto run = [&](auto features) {
    constexpr int K = decltype(features)::value;
    // Scratch accumulators: as many groups as the plan sized the scratch for.
    const int groups = K == 0 ? L.scratch_floats / p.dim : L.team_size;
    const int team_units = std::max(1, groups / p.heads);
    launch_light(exec, "dfgnn::online", int((units + team_units - 1) / team_units), groups,
           K == 0 ? L.vector_length : lanes,
           Online<Exec, Score, K>{p, score, L.pieces, L.partials, L.split, team_units, lanes},
           K == 0 ? std::size_t(L.scratch_floats) * sizeof(float) : 0);
  };
  if (per_lane <= 1)
    run(std::integral_constant<int, 1>{});
  else if (per_lane <= 2)
    run(std::integral_constant<int, 2>{});
  else if (per_lane <= 4)
    run(std::integral_constant<int, 4>{});
  else if (per_lane <= 8)
    run(std::integral_constant<int, 8>{});
  else
    run(std::integral_constant<int, 0>{});
  const node_t split_rows = node_t(L.split_rows.extent(0));
  launch_light(exec, "dfgnn::online_merge", (split_rows + kMaxTeamRows - 1) / kMaxTeamRows, L.team_size, L.vector_length,
         RowHeads<Exec, MergePieces<Mem>>{split_rows, p.heads, {p, L.split_rows, L.partials}});
}

}  // namespace dfgnn::kokkos_impl
