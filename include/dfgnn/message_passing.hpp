#pragma once
/// \file message_passing.hpp
/// Generalized message passing on Kokkos (DGL's fused g-SpMM / g-SDDMM, message.hpp has the
/// semantics): SpMM-based convolutions (GCN, GraphSAGE-mean, GIN) and max/min/mean/sum
/// aggregations without materialising per-edge messages, forward and backward.
///
/// \code
///   dfgnn::Graph<Mem> graph(dfgnn::graph_from_edges(N, src, dst));
///   // GraphSAGE-mean: out[v] = mean over u -> v of x[u]                     x, out [N,H,D]
///   dfgnn::gspmm(exec, graph, dfgnn::Message::copy_u(), dfgnn::Reduce::Mean, x, {}, out);
///   // weighted max: out[v] = max over e = u -> v of x[u] * w[e], w [E,1,1]; arg [N,H,D]
///   dfgnn::gspmm(exec, graph, dfgnn::Message::u_op_e(dfgnn::BinaryOp::Mul), dfgnn::Reduce::Max, x, w, out, arg);
///   dfgnn::gspmm_backward(exec, graph, msg, dfgnn::Reduce::Max, x, w, arg, dout, dx, dw);
///   dfgnn::gsddmm(exec, graph, dfgnn::BinaryOp::Dot, q, k, scores);      // scores [E,H,1]
///   dfgnn::gcn_aggregate(exec, graph, x, out);                            // D^-1/2 A D^-1/2 x
/// \endcode
///
/// Tensors are rank-3 LayoutRight Views on the graph's memory space, [rows, heads, dim]; an
/// operand's heads and dim may be 1 (broadcast). Every shape is checked and an output
/// overlapping an input throws dfgnn::Error naming both. No atomics: each output entry is summed
/// by one lane in an order fixed by the graph, so results are bitwise reproducible. Gradients are
/// gathered, not scattered: at destinations over the CSR rows, at sources over the CSC (built by
/// Graph::transposed() on first use), per edge for edge tensors. Kernels run asynchronously on
/// `exec`. These are the portable kernels on every execution space; the CUDA-native ones have
/// their own entry (cuda_message_passing.hpp).

#include <dfgnn/graph.hpp>
#include <dfgnn/message.hpp>

namespace dfgnn {

/// An input [rows, 1|H, 1|D]: rows N for node tensors, E (caller's edge order) for edge tensors.
template <class MemorySpace>
using Tensor = Kokkos::View<const float***, Kokkos::LayoutRight, MemorySpace>;
/// An output or gradient [rows, heads, dim].
template <class MemorySpace>
using TensorOutput = Kokkos::View<float***, Kokkos::LayoutRight, MemorySpace>;
/// The winning edge (caller's index) of every entry of a max/min g-SpMM [N,H,D]; -1: empty row.
template <class MemorySpace>
using ArgOutput = Kokkos::View<edge_t***, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using ArgInput = Kokkos::View<const edge_t***, Kokkos::LayoutRight, MemorySpace>;

/// out [N,H,D] = reduce over u -> v of message(lhs, rhs). lhs is on U (on E for copy_e), rhs
/// on E or V, empty for a copy. arg, optional and for max/min only, receives the winners (the
/// first edge of the row among equal messages); the backward of max/min needs it.
template <class Exec>
void gspmm(const Exec& exec, const Graph<typename Exec::memory_space>& graph, const Message& message, Reduce reduce,
           const Tensor<typename Exec::memory_space>& lhs, const Tensor<typename Exec::memory_space>& rhs,
           const TensorOutput<typename Exec::memory_space>& out,
           const ArgOutput<typename Exec::memory_space>& arg = {});

/// Gradients of gspmm from dout = dLoss/dout [N,H,D]: dlhs shaped like lhs, drhs like rhs
/// (summed over broadcast axes; either may be empty to skip it), overwritten. arg is the
/// forward's (max/min only): the gradient of each output entry goes to its winning message.
template <class Exec>
void gspmm_backward(const Exec& exec, const Graph<typename Exec::memory_space>& graph, const Message& message,
                    Reduce reduce, const Tensor<typename Exec::memory_space>& lhs,
                    const Tensor<typename Exec::memory_space>& rhs, const ArgInput<typename Exec::memory_space>& arg,
                    const Tensor<typename Exec::memory_space>& dout,
                    const TensorOutput<typename Exec::memory_space>& dlhs,
                    const TensorOutput<typename Exec::memory_space>& drhs);

/// out[e] = op(x[u], y[v]) for every edge e = u -> v, out [E,H,D] ([E,H,1] for dot) in the
/// caller's edge order; x and y [N, 1|H, 1|D]. Edge-parallel.
template <class Exec>
void gsddmm(const Exec& exec, const Graph<typename Exec::memory_space>& graph, BinaryOp op,
            const Tensor<typename Exec::memory_space>& x, const Tensor<typename Exec::memory_space>& y,
            const TensorOutput<typename Exec::memory_space>& out);

/// Gradients of gsddmm from dout [E,H,D] ([E,H,1] for dot): dx like x, dy like y (either may
/// be empty), overwritten.
template <class Exec>
void gsddmm_backward(const Exec& exec, const Graph<typename Exec::memory_space>& graph, BinaryOp op,
                     const Tensor<typename Exec::memory_space>& x, const Tensor<typename Exec::memory_space>& y,
                     const Tensor<typename Exec::memory_space>& dout,
                     const TensorOutput<typename Exec::memory_space>& dx,
                     const TensorOutput<typename Exec::memory_space>& dy);

/// GCN's symmetric normalisation fused in the SpMM: out[v] = sum over u -> v of
/// x[u] / sqrt(d_out(u) d_in(v)), degrees clamped to at least 1 (add self loops to the graph for
/// the usual D^-1/2 (A + I) D^-1/2). x, out [N,H,D].
template <class Exec>
void gcn_aggregate(const Exec& exec, const Graph<typename Exec::memory_space>& graph,
                   const Tensor<typename Exec::memory_space>& x, const TensorOutput<typename Exec::memory_space>& out);

/// Its gradient: dx [N,H,D] from dout [N,H,D].
template <class Exec>
void gcn_aggregate_backward(const Exec& exec, const Graph<typename Exec::memory_space>& graph,
                            const Tensor<typename Exec::memory_space>& dout,
                            const TensorOutput<typename Exec::memory_space>& dx);

/// out[i] = in[index[i]] for node tensors [N,H,D]: moves them into a reordered graph's order
/// (index = Reordered::order) and results back (index = Reordered::position), reorder.hpp.
/// index must hold a node id in [0, N) per entry (not checked on the device).
template <class Exec>
void permute_nodes(const Exec& exec, const Kokkos::View<const node_t*, typename Exec::memory_space>& index,
                   const Tensor<typename Exec::memory_space>& in, const TensorOutput<typename Exec::memory_space>& out);

}  // namespace dfgnn
