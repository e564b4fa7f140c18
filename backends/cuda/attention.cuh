#pragma once
// The launch path shared by the four score kinds, for calls the dispatch checked: the tile
// chosen from D and the pointers' alignment, the kernel launches of the plan's strategy, and
// the backward's.

#include "backward.cuh"
#include "online.cuh"
#include "plan_impl.hpp"
#include "sddmm.cuh"
#include "staged.cuh"
#include "unfused.cuh"

#include <dfgnn/detail/strategy.hpp>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace dfgnn::cuda::detail {

/// The call's options as the launch path reads them.
inline Options options_of(const Call& c) {
  const TensorRef& w = c.edge_values;
  Options o(DeviceEdgeValues{w.data, w.data ? int(w.extents[1]) : 0});
  o.logsumexp = static_cast<float*>(const_cast<void*>(c.logsumexp.data));
  o.attention_weights = const_cast<void*>(c.weights.data);
  o.dropout = c.dropout;
  o.backward_order = c.backward_order;
  return o;
}

inline cudaStream_t stream_of(const Call& c) { return static_cast<cudaStream_t>(c.stream); }

/// Whether the tensors whose rows are D elements (features, an [H,D], edge features) are all
/// 16-byte aligned: the model's such inputs, and in the backward their gradients, out and dOut too. The walks
/// then move 16 bytes a load (the 16-byte tile).
inline bool rows_aligned16(ScoreKind kind, const Call& c, bool backward) {
  const ModelArgs& m = model_args(kind);
  bool ok = !backward || aligned16({c.out.data, c.dout.data});
  for (int i = 0; i < m.count; ++i) {
    const Extent x = m.inputs[i].extent;
    if (x == Extent::SrcScalars || x == Extent::DstScalars || x == Extent::HeadVector) continue;
    ok = ok && aligned16({c.inputs[i].data}) && (!backward || aligned16({c.grads[i].data}));
  }
  if (m.edge.extent == Extent::EdgeFeatures) {  // GT's and GATv2's edge rows and their gradient
    ok = ok && aligned16({c.edge_features.data}) && (!backward || aligned16({c.edge_grad.data}));
    // Narrow edge columns (EdgeLayout) must fill whole 16-byte chunks of a head's row.
    const std::size_t width = c.edge_features.extents[2];
    if (c.edge_features.data && width != c.out.extents[2]) ok = ok && width * size_of(c.out.dtype) % 16 == 0;
  }
  return ok;
}

/// The layout of a checked call's row edge argument (its extents; zeros without one).
inline EdgeLayout edge_layout(const Call& c) {
  const EdgeShape s = EdgeShape::of(c.edge_features);
  return {s.heads, s.width};
}

/// Calls f(std::bool_constant<dropout on>{}): kernels with the dropout factor in their inner
/// loop are compiled with and without it.
template <class F>
void with_dropout(const Train& tr, F&& f) {
  if (tr.dropout.rate > 0.f)
    f(std::true_type{});
  else
    f(std::false_type{});
}

inline unsigned blocks_for(std::int64_t threads, int block) {
  return unsigned(std::max<std::int64_t>(1, (threads + block - 1) / block));
}

/// Dense (GT, AGNN, GAT) needs 16-byte aligned tensors, i.e. the 16-byte tile (its D is a
/// multiple of 32), and of f16 a dropout factor 1 / (1 - rate) within f16's range with room to
/// spare, since its normalised P carries it (dense.cuh); returns false, and launches nothing,
/// for the others.
template <class S, class T>
bool dense(cudaStream_t st, const Plan::Impl& p, const S& sc, const EdgeScaleOf<typename S::Elem>& w,
           const Train& tr, typename S::Elem* out) {
  using E = typename S::Elem;
  constexpr bool kRuns = ModelOf<S::kKind>::dense.runs && T::VEC * sizeof(E) == 16;
  if (std::is_same_v<E, f16> && tr.dropout.rate > 0.999f) return false;
  if constexpr (kRuns) launch_dense(st, p.dense, sc, w, tr, p.graph.row_ptr, p.heads, p.dim, out);
  return kRuns;
}

/// Blocks of 256 threads for an edge-parallel pass over every (edge, head) (sddmm_items): half
/// a lane group an item, at most a full device.
template <class S, class T>
unsigned edge_blocks(const Plan::Impl& p) {
  using ST = ScoreTile<S, T>;
  return blocks_for(std::min<std::int64_t>(p.graph.num_edges * p.heads * ST::LANES / 2, std::int64_t(p.sms) * 2048),
                    256);
}

/// The Online kernel over the plan's rows and pieces.
template <class S, class T>
void online(cudaStream_t st, const Plan::Impl& p, const S& sc, const EdgeScaleOf<typename S::Elem>& w,
            const Train& tr, typename S::Elem* out) {
  const int H = p.heads, D = p.dim;
  // A warp's free slots take further rows, or, for uneven degrees, slices of each row: as
  // many as still give a slice U edges a step on an average row.
  const int slots = T::GROUPS / std::min(H, T::GROUPS);
  const bool uneven = p.online_uneven_mean > 0;
  const int ep = uneven ? floor_pow2(std::clamp(int(p.online_uneven_mean / kOnlineStepEdges<S, T>), 1, slots)) : 1;
  const std::int64_t warps = p.num_pieces + (p.graph.num_nodes + slots / ep - 1) / (slots / ep);
  const int block = online_threads(uneven);
  const auto run = [&](auto drop, auto exact, auto edge) {
    online_kernel<S, T, drop, exact, edge><<<blocks_for(warps * kWarp, block), block, 0, st>>>(
        sc, p.graph, w, tr, H, D, p.split, ep, p.pieces, p.num_pieces, out, p.part);
  };
  with_dropout(tr, [&](auto drop) {
    if constexpr (kHasEdge<S>) {  // edge features: one variant, any D
      if (sc.edge != nullptr) return run(drop, std::false_type{}, std::true_type{});
    }
    if constexpr (T::VEC > 1) {  // the fast path: rows that fill the tile
      if (D == T::MAX_D) return run(drop, std::true_type{}, std::false_type{});
    }
    run(drop, std::false_type{}, std::false_type{});
  });
}

template <class S, class T>
void launch(cudaStream_t st, const Plan::Impl& p, const S& sc, EdgeScaleOf<typename S::Elem> w, const Train& tr,
            typename S::Elem* out) {
  const int H = p.heads, D = p.dim;
  const DeviceGraph& g = p.graph;
  if (g.num_nodes == 0) return;
  const auto dense_or_online = [&] {
    // Auto's Dense takes calls with edge values, dropout or edge features to Online, and Dense
    // launches nothing for unaligned tensors or an AGNN call with an X_dst of its own
    // (dense_serves): those run Online on whole rows (no pieces).
    const bool dense_call = p.strategy == Strategy::Dense && dense_serves(sc) &&
                            dfgnn::detail::dense_runs(p.auto_dense, dense_edge_wise(w, tr), sc.edge != nullptr);
    if (!dense_call || !dense<S, T>(st, p, sc, w, tr, out)) online<S, T>(st, p, sc, w, tr, out);
  };
  if constexpr (!kFloat<S>) {  // two-byte elements: Online or Dense only (the plan saw to it)
    dense_or_online();
  } else {
    const std::int64_t E = g.num_edges, N = g.num_nodes;
    auto sddmm = [&] {
      if (E > 0) sddmm_kernel<S, T><<<edge_blocks<S, T>(p), 256, 0, st>>>(sc, g, w, H, D, p.scores);
    };
    const int passes = head_passes(H, T::GROUPS);
    switch (p.strategy) {
      case Strategy::SMMF: {
        constexpr auto kernel = smmf_kernel<S, T, kSmmfWarps>;
        allow_smem<kernel>(p.smmf_smem);
        kernel<<<p.num_blocks, kSmmfWarps * kWarp, p.smmf_smem, st>>>(sc, g, w, tr, p.blocks, H, D, out, p.part);
        break;
      }
      case Strategy::PMF:
        sddmm();
        with_dropout(tr, [&](auto drop) {
          pmf_kernel<S, T, drop><<<blocks_for((N + p.num_pieces) * passes * kWarp, 256), 256, 0, st>>>(
              sc, g, tr, p.scores, H, D, p.split, p.pieces, p.num_pieces, out, p.part);
        });
        break;
      case Strategy::Unfused:
        sddmm();
        launch_softmax(st, g, H, p.scores, tr);
        spmm_kernel<S, T><<<blocks_for(N * passes * kWarp, 256), 256, 0, st>>>(sc, g, p.scores, H, D, out);
        break;
      case Strategy::Staged:
        with_dropout(tr, [&](auto drop) {
          constexpr auto kernel = staged_kernel<S, T, drop>;
          allow_smem<kernel>(p.staged_smem);
          kernel<<<p.num_graphs, kStagedWarps<T> * kWarp, p.staged_smem, st>>>(sc, g, w, tr, p.graph_ptr, H, D, out);
        });
        break;
      case Strategy::Dense:
      case Strategy::Online: dense_or_online(); break;
      default: throw Error("cuda::attention: plan without a strategy");
    }
  }
  launch_merge(st, p.split_rows, p.num_split_rows, H, D, p.part, out, tr.lse);
  DFGNN_CUDA(cudaGetLastError());
}

/// The widest scalar tile of with_tile covers 256 elements a row: wider rows (up to 512, the
/// plan's limit) need a tile of kVec-element lanes, i.e. aligned tensors and D a multiple of kVec.
template <class E = float, int kVec = int(16 / sizeof(E))>
void require_tile(int D, bool vec16, const char* entry) {
  constexpr int kScalarMaxD = Tile<1, 32, 8>::MAX_D;
  if (D > kScalarMaxD && !(vec16 && D % kVec == 0))
    throw Error(std::string(entry) + ": dim " + std::to_string(D) + " above " + std::to_string(kScalarMaxD) +
                " needs 16-byte aligned tensors" + (D % kVec != 0 ? " and a multiple of " + std::to_string(kVec) : ""));
}

/// Picks the tile and launches.
template <class S>
void run(cudaStream_t st, const Plan& plan, const S& sc, const Options& o, typename S::Elem* out, bool vec16) {
  using E = typename S::Elem;
  const Plan::Impl& p = plan.impl();
  if (sc.edge != nullptr) dfgnn::detail::check_edge_strategy("cuda::attention", p.strategy, p.auto_dense);
  const EdgeScaleOf<E> scale{static_cast<const E*>(o.edge_values.data), p.graph.edge_id, o.edge_values.heads};
  const Train tr{o.logsumexp, p.graph.edge_id, o.dropout};
  // A scalar key (GAT) leaves a lane group little but the value gather per edge: on even
  // degrees a warp then does better walking two rows (half a warp each) than one.
  const bool pair = pair_rows(p.strategy == Strategy::Online && p.online_uneven_mean == 0, p.heads, p.dim);
  vec16 = vec16 && aligned16({out});
  require_tile<E>(p.dim, vec16, "cuda::attention");
  with_tile<!S::kRowKey, E>(p.dim, vec16, [&](auto tile) { launch<S, decltype(tile)>(st, p, sc, scale, tr, out); }, pair);
  if (o.attention_weights == nullptr || p.graph.num_edges == 0) return;
  with_tile<!S::kRowKey, E>(p.dim, vec16, [&](auto tile) {
    using T = decltype(tile);
    weights_kernel<S, T><<<edge_blocks<S, T>(p), 256, 0, st>>>(sc, p.with_destinations(st), scale, tr, p.heads,
                                                              p.dim, static_cast<E*>(o.attention_weights));
  });
  DFGNN_CUDA(cudaGetLastError());
}

/// Launches the backward (backward.cuh): rows first, the merge of split rows, columns, the
/// merge of split columns, then the parameter sums into `param` (`param_count` outputs; null
/// for GT and GAT); or columns first: Delta, columns, their merge, rows, their merge.
template <class S, class E = typename S::Elem>
void run_backward(cudaStream_t st, const Plan& plan, const S& sc, const Options& o, const Upstream<E>& up,
                  const Grads<E>& gr, E* param, int param_count, bool vec16) {
  using G = GradOf<S>;
  const Plan::Impl& p = plan.impl();
  const DeviceGraph& g = p.graph;
  const int H = p.heads, D = p.dim;
  const node_t N = g.num_nodes, NS = p.op.src_nodes;  // rows (destinations), columns (sources)
  require_tile<E, kWalkVec>(D, vec16, "cuda::attention_backward");
  const bool edges = sc.edge != nullptr;
  const bool cols_first = dfgnn::detail::columns_first("cuda::attention_backward", o.backward_order, p.kind,
                                                       G::kRowsFirst, G::kColsFirst, g.num_edges, g.num_nodes, edges);
  if (N == 0 && NS == 0) {  // otherwise the column walk writes the sources' zero gradients
    // A parameter's gradient sums over no edges: zero (it has entries without any node).
    if (param != nullptr) DFGNN_CUDA(cudaMemsetAsync(param, 0, std::size_t(param_count) * sizeof(E), st));
    return;
  }
  const BackwardData& b = p.backward(st);
  const BackwardWork& wk = b.work;
  // The scoring walk's edge values and dropout, by its own positions.
  const edge_t* edge_id = cols_first ? b.col_edge_id : g.edge_id;
  const EdgeScaleOf<E> scale{static_cast<const E*>(o.edge_values.data), edge_id, o.edge_values.heads};
  const Train tr{nullptr, edge_id, o.dropout};
  const Segments rows{g.row_ptr, g.src, N, b.split, b.rows.pieces, b.rows.num_pieces, g.edge_id};
  const Segments cols{b.col_ptr, b.col_dst, NS, b.split, b.cols.pieces, b.cols.num_pieces, b.col_edge_id};
  const auto merge = [&](auto kCols, const SplitSegments& seg, const float* part) {
    const std::size_t threads =
        std::size_t(seg.num_split) * H * pad4(decltype(kCols)::value ? G::col_width(D) : G::row_width(D)) / 4;
    if (threads == 0) return;
    launch_dependent(merge_sums<S, decltype(kCols)::value>, threads, st, seg.split, seg.num_split, H, D, part, gr,
                     wk.param);
  };
  const auto walk = [&](auto tile) {
    using T = decltype(tile);
    const int slots = T::GROUPS / std::min(H, T::GROUPS);
    const int row_threads = online_threads(b.rows.uneven), col_threads = online_threads(b.cols.uneven);
    const auto blocks = [&](const Segments& s, int threads) {
      return blocks_for((s.num_pieces + std::int64_t(s.count) + slots - 1) / slots * kWarp, threads);
    };
    const auto walks = [&](auto exact) {
      constexpr bool kExact = decltype(exact)::value;
      if (cols_first) {
        if constexpr (G::kColsFirst) {
          const std::int64_t NH = std::int64_t(N) * H;
          row_deltas<T, E><<<blocks_for(NH * T::LANES, 256), 256, 0, st>>>(up, wk.delta, NH, D);
          with_dropout(tr, [&](auto drop) {
            constexpr bool kDrop = decltype(drop)::value;
            const auto scored = [&](auto kernel) {
              launch_dependent_blocks(kernel, blocks(cols, col_threads), col_threads, 0, st, sc, cols, scale, tr, up,
                                      gr, wk, b.csr_pos, H, D);
            };
            if (!edges) return scored(backward_scored_cols<S, T, kDrop, kExact>);
            // Edge features run columns first only where the model has no rows first.
            if constexpr (!G::kRowsFirst && !kExact) scored(backward_scored_cols<S, T, kDrop, false, true>);
          });
          merge(std::true_type{}, b.cols, wk.col_part);
          launch_dependent_blocks(backward_summed_rows<S, T, kExact>, blocks(rows, row_threads), row_threads, 0, st,
                                  sc, rows, gr, wk, H, D);
          merge(std::false_type{}, b.rows, wk.row_part);
        }
      } else if constexpr (G::kRowsFirst) {
        constexpr bool kEdgeRows = kHasEdge<S> && !kExact;  // edge features: one variant, any D
        with_dropout(tr, [&](auto drop) {
          const auto rows_walk = [&](auto kernel) {
            kernel<<<blocks(rows, row_threads), row_threads, 0, st>>>(sc, rows, scale, tr, up, gr, wk, b.csc_pos, H, D);
          };
          if (!edges) return rows_walk(backward_rows<S, T, decltype(drop)::value, kExact>);
          if constexpr (kEdgeRows) rows_walk(backward_rows<S, T, decltype(drop)::value, false, true>);
        });
        merge(std::false_type{}, b.rows, wk.row_part);
        const auto cols_walk = [&](auto kernel) {
          launch_dependent_blocks(kernel, blocks(cols, col_threads), col_threads, 0, st, sc, cols, up, gr, wk, H, D);
        };
        if constexpr (G::kColsReadEdgeGrad && !kExact) {
          if (edges) cols_walk(backward_cols<S, T, false, true>);
          else cols_walk(backward_cols<S, T, kExact>);
        } else {
          cols_walk(backward_cols<S, T, kExact>);
        }
        merge(std::true_type{}, b.cols, wk.col_part);
        if constexpr (G::kSharedEdgeColumns)
          if (edges && sc.edge_layout.heads < H) {  // edge columns, one row for every head
            const int F = sc.edge_layout.width;
            shared_edge_grad<E><<<blocks_for(std::int64_t(g.num_edges) * F, 256), 256, 0, st>>>(
                sc.q, up.dout, sc.scale, p.with_destinations(st), b.csc_pos, wk.dr_q, H, D, F, gr.edge);
          }
      }
    };
    if constexpr (T::VEC == kWalkVec) {  // the fast path: rows that fill the tile (without edge features)
      if (D == T::MAX_D && !edges) return walks(std::true_type{});
    }
    walks(std::false_type{});
  };
  const bool pair = pair_rows(!b.rows.uneven && !b.cols.uneven, H, D);  // the forward's rule, over both walks' degrees
  bool wide = false;
  if constexpr (!S::kRowKey && !kFloat<S>) {  // a scalar key (GAT's) of two-byte elements
    wide = gat_wide_lanes(g, D);
    if (wide) with_tile<true, E>(D, vec16, walk, pair);
  }
  if (!wide) with_tile<!S::kRowKey, E, kWalkVec>(D, vec16, walk, pair);
  if (param != nullptr) {
    const std::int64_t units = std::int64_t(N) + b.rows.slots;
    launch_param_sums(st, wk.param, units, H * G::param_width(D), wk.param_slices, param, param_count);
  }
  DFGNN_CUDA(cudaGetLastError());
}

/// A checked forward call with score functor `sc`.
template <class S>
void run(const Plan& plan, const S& sc, const Call& c) {
  run(stream_of(c), plan, sc, options_of(c), static_cast<typename S::Elem*>(const_cast<void*>(c.out.data)),
      rows_aligned16(plan.kind(), c, false));
}

/// A checked backward call with score functor `sc`, its gradients `gr` and parameter gradient
/// `param` (`param_count` entries; null for GT and GAT), all of the functor's element type.
template <class S, class E = typename S::Elem>
void run_backward(const Plan& plan, const S& sc, const Call& c, const Grads<E>& gr, E* param, int param_count) {
  const Upstream<E> up{static_cast<const E*>(c.out.data), static_cast<const float*>(c.logsumexp.data),
                       static_cast<const E*>(c.dout.data)};
  run_backward(stream_of(c), plan, sc, options_of(c), up, gr, param, param_count, rows_aligned16(plan.kind(), c, true));
}

}  // namespace dfgnn::cuda::detail
