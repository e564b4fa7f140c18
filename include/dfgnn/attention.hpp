#pragma once
/// \file attention.hpp
/// Fused attention forward on Kokkos: out[v,h,:] = sum_{u->v} softmax_u(score(v,u,h)) V[u,h,:].
///
/// \code
///   dfgnn::Graph<Mem> graph(dfgnn::graph_from_edges(N, src, dst));
///   dfgnn::Plan<Exec> plan(exec, graph, dfgnn::ScoreKind::GT, H, D);   // host preprocessing
///   dfgnn::attention(exec, plan, dfgnn::GT{}, Q, K, V, out);            // kernels only
/// \endcode
///
/// Tensors are LayoutRight Views on the plan's memory space: node features [N,H,D], node
/// scalars [N,H], GATv2's a [H,D], AGNN's beta [H] or [1]; Options adds edge values, the
/// training-mode statistics and dropout. Every shape is checked; a mismatch, or an output that
/// overlaps an input, throws dfgnn::Error naming the argument. Kernels run asynchronously on
/// `exec`; with Kokkos::Cuda and DFGNN_ENABLE_CUDA they are the CUDA-native ones.

#include <dfgnn/dropout.hpp>
#include <dfgnn/plan.hpp>

namespace dfgnn {

template <class MemorySpace>
using NodeFeatures = Kokkos::View<const float***, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using NodeOutput = Kokkos::View<float***, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using NodeScalars = Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using HeadFeatures = Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using HeadScalars = Kokkos::View<const float*, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using EdgeValues = Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>;

/// Optional inputs and outputs of a forward call.
template <class MemorySpace>
struct Options {
  /// Per-edge score multipliers [E,1] or [E,H] in the caller's edge order; empty: none.
  EdgeValues<MemorySpace> edge_values;
  /// Training mode: receives the per-row softmax statistic logsumexp_u(score) [N,H] that the
  /// backward needs (0 for rows without in-edges); empty: inference.
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> logsumexp;
  /// Attention dropout on the probabilities (training); rate 0: none.
  Dropout dropout;
};

/// Graph Transformer: score = scale * <Q[v,h], K[u,h]>.
template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GT& model,
               const NodeFeatures<typename Exec::memory_space>& Q,
               const NodeFeatures<typename Exec::memory_space>& K,
               const NodeFeatures<typename Exec::memory_space>& V,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {});

/// AGNN: score = beta[h] * cos(X[v,h], X[u,h]); the values are X.
template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const AGNN& model,
               const NodeFeatures<typename Exec::memory_space>& X,
               const HeadScalars<typename Exec::memory_space>& beta,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {});

/// GAT: score = LeakyReLU(el[u,h] + er[v,h], slope).
template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GAT& model,
               const NodeScalars<typename Exec::memory_space>& el,
               const NodeScalars<typename Exec::memory_space>& er,
               const NodeFeatures<typename Exec::memory_space>& V,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {});

/// GATv2: score = sum_d a[h,d] * LeakyReLU(XL[u,h,d] + XR[v,h,d], slope); the values are XL.
template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GATv2& model,
               const NodeFeatures<typename Exec::memory_space>& XL,
               const NodeFeatures<typename Exec::memory_space>& XR,
               const HeadFeatures<typename Exec::memory_space>& a,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {});

}  // namespace dfgnn
