#pragma once
// Online: the CUDA-native Online strategy (backends/cuda/online.cuh) on portable Kokkos.
//
// One thread group (a team thread and its vector lanes) per (row, head) walks the row's edges
// once with an online softmax: running max and sum, and a D-float accumulator rescaled when the
// max grows. Per-edge scores are never stored. The accumulator lives in team scratch, one slot
// per thread group (lanes own the features they accumulate; arrays indexed by lane are not
// portable), and kStepEdges scores are reduced together so their loads are in flight at once.
// Where D % 4 == 0 and the tensors' rows are aligned to 4 elements, a lane moves 4 features per
// load (W = 4): the kernel is bound by instruction issue, and one 16-byte access (8 bytes of
// two-byte elements) replaces four
// (ncu on the H100: 4x the native kernel's instructions at W = 1, docs/performance.md).
// Rows above the plan's split are walked as pieces (listed before the rows) whose partial
// (max, sum, accumulator) a second launch merges in piece order: no atomics, reproducible.

#include "rowwise.hpp"

namespace dfgnn::kokkos_impl {

/// W: features per lane access (1, or 4 with 16-byte aligned rows). kEdges: the call has an edge
/// argument (Score::has_edges), whose ids the walk then loads.
template <class Exec, class Score, int W, bool kEdges>
struct Online {
  using Mem = typename Exec::memory_space;
  using member = typename Kokkos::TeamPolicy<Exec>::member_type;

  Problem<Mem, typename Score::element> p;
  Score score;
  Kokkos::View<const RowPiece*, Mem> pieces;
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> partials;
  edge_t split;
  int team_units;  // (piece or row) units per team, each for every head

  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int chunks = p.dim / W;
    auto* const slots = static_cast<Vec<W>*>(
        team.team_scratch(0).get_shmem_aligned(std::size_t(team.team_size()) * p.dim * sizeof(float), kOnlineSlotAlign));
    const std::int64_t u0 = std::int64_t(team.league_rank()) * team_units;
    const std::int64_t num_pieces = std::int64_t(pieces.extent(0));
    const std::int64_t units = num_pieces + std::int64_t(p.row_ptr.extent(0)) - 1;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, team_units * p.heads), [&](int k) {
      const std::int64_t unit = u0 + k / p.heads;
      const int h = k % p.heads;
      Vec<W>* const acc = slots + team.team_rank() * chunks;
      float m = 0.0f, sum = 0.0f;
      if (unit < num_pieces) {
        const RowPiece pc = pieces(unit);
        walk(team, acc, pc.row, pc.e0, pc.e1, h, m, sum);
        const std::int64_t r = unit * p.heads + h;
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, chunks), [&](int i) {
          for (int f = 0; f < W; ++f) partials(r, 2 + W * i + f) = acc[i].x[f];
        });
        Kokkos::single(Kokkos::PerThread(team), [&] { partials(r, 0) = m, partials(r, 1) = sum; });
      } else if (unit < units) {
        const node_t v = node_t(unit - num_pieces);
        const edge_t a = p.row_ptr(v), b = p.row_ptr(v + 1);
        if (b - a > split) return;  // its pieces do it
        walk(team, acc, v, a, b, h, m, sum);
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, chunks), [&](int i) {
          for (int f = 0; f < W; ++f) p.put(v, h, W * i + f, b > a ? acc[i].x[f] / sum : 0.0f);
        });
        Kokkos::single(Kokkos::PerThread(team), [&] { p.record(v, h, m, sum); });
      }
    });
  }

  // Edges [a, b) of row v, head h: the max m and sum of exponentials, and the accumulator
  // sum_e exp(s_e - m) keep_e value(u_e) (left unset when a == b).
  KOKKOS_INLINE_FUNCTION void walk(const member& team, Vec<W>* acc, node_t v, edge_t a, edge_t b, int h, float& m,
                                   float& sum) const {
    edge_t e = a;
    for (; b - e >= kStepEdges; e += kStepEdges) step<kStepEdges>(team, acc, v, e, h, e == a, m, sum);
    for (; e < b; ++e) step<1>(team, acc, v, e, h, e == a, m, sum);
  }

  // Edges [e, e + U): their U scores reduced together, then one update of the running state.
  template <int U>
  KOKKOS_INLINE_FUNCTION void step(const member& team, Vec<W>* acc, node_t v, edge_t e, int h, bool first, float& m,
                                   float& sum) const {
    const int chunks = p.dim / W;
    node_t u[U];
    edge_t id[U] = {};
    for (int j = 0; j < U; ++j) {
      u[j] = p.src(e + j);
      if constexpr (kEdges) id[j] = p.edge_id(e + j);
    }
    EdgeSums<U> t;
    if constexpr (Score::reduces)
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, chunks),
          [&](int i, EdgeSums<U>& part) {
            for (int j = 0; j < U; ++j) part.x[j] += score.template terms<W, kEdges>(v, u[j], id[j], h, i);
          },
          Kokkos::Sum<EdgeSums<U>>(t));
    float top = m;
    for (int j = 0; j < U; ++j) {
      t.x[j] = p.scaled(score.template finish<kEdges>(t.x[j], v, u[j], id[j], h), e + j, h);
      top = first && j == 0 ? t.x[0] : fmax(top, t.x[j]);
    }
    const float c = first ? 0.0f : top > m ? exp(m - top) : 1.0f;  // the max rarely grows
    float w[U];
    sum *= c;
    for (int j = 0; j < U; ++j) {
      const float x = exp(t.x[j] - top);
      sum += x;
      w[j] = x * p.keep(e + j, h);
    }
    m = top;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, chunks), [&](int i) {
      Vec<W> y;
      for (int f = 0; f < W; ++f) y.x[f] = first ? 0.0f : acc[i].x[f] * c;
      for (int j = 0; j < U; ++j) {
        const Vec<W> x = score.template values<W, kEdges>(u[j], id[j], h, i);
        for (int f = 0; f < W; ++f) y.x[f] += w[j] * x.x[f];
      }
      acc[i] = y;
    });
  }
};

/// Second launch: a split row's pieces merged in order into its output and statistics.
template <class Mem, class T>
struct MergePieces {
  Problem<Mem, T> p;
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
      p.put(r.row, h, d, y / sum);
    });
    Kokkos::single(Kokkos::PerThread(team), [&] { p.record(r.row, h, m, sum); });
  }
};

template <int W, bool kEdges, class Exec, class Score>
void launch_online(const Exec& exec, const PortablePlan<Exec>& plan,
                   const Problem<typename Exec::memory_space, typename Score::element>& p, const Score& score) {
  const auto& L = plan.layout();
  const int groups = L.scratch_floats / p.dim;  // accumulators the plan sized the scratch for
  const int team_units = std::max(1, groups / p.heads);
  const std::int64_t units = std::int64_t(L.pieces.extent(0)) + plan.graph().num_nodes();
  using Bounds = typename Geometry<Exec>::OnlineBounds;
  launch<Bounds>(exec, "dfgnn::online", (units + team_units - 1) / team_units, groups, L.online_lanes,
                 Online<Exec, Score, W, kEdges>{p, score, L.pieces, L.partials, L.split, team_units},
                 std::size_t(L.scratch_floats) * sizeof(float) + kOnlineSlotAlign);
}

template <class Exec, class Score>
void online(const Exec& exec, const PortablePlan<Exec>& plan,
            const Problem<typename Exec::memory_space, typename Score::element>& p, const Score& score) {
  using Mem = typename Exec::memory_space;
  const auto& L = plan.layout();
  const bool aligned = score.rows_aligned(4);
  if (score.has_edges())
    aligned ? launch_online<4, true>(exec, plan, p, score) : launch_online<1, true>(exec, plan, p, score);
  else
    aligned ? launch_online<4, false>(exec, plan, p, score) : launch_online<1, false>(exec, plan, p, score);
  const node_t split_rows = node_t(L.split_rows.extent(0));
  launch_rows(exec, "dfgnn::online_merge", split_rows, p.heads, L.vector_length,
              MergePieces<Mem, typename Score::element>{p, L.split_rows, L.partials});
}

}  // namespace dfgnn::kokkos_impl
