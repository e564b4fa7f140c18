#pragma once
/// \file reference_message_passing.hpp
/// Float64 host reference of g-SpMM, g-SDDMM and the GCN aggregation, forward and backward:
/// the oracle of the Kokkos and CUDA-native kernels, straight from the definitions in
/// message.hpp (no transposed graph: gradients are scattered edge by edge). The backward is
/// itself checked against finite differences of the forward.
///
/// Operands are host pointers with their heads and dims (message.hpp); edge tensors are in the
/// caller's edge order (HostGraph::edge_id). Results are row-major float64. Shapes are checked
/// like the kernels' (dfgnn::Error naming the argument).

#include <dfgnn/csr.hpp>
#include <dfgnn/message.hpp>

#include <vector>

namespace dfgnn {

/// out [N,H,D]. For max and min, `arg` (if set) receives [N,H,D] caller's edge indices of the
/// winning messages: the first edge of the row (CSR order) among equal ones; -1 for an empty row.
std::vector<double> reference_gspmm(const HostGraph& g, const Message& m, Reduce r, int H, int D, const Operand& lhs,
                                    const Operand& rhs, std::vector<edge_t>* arg = nullptr);

/// Gradients of the loss sum(out * dout), shaped like the operands (summed over broadcast axes).
struct GspmmGradients {
  std::vector<double> dlhs, drhs;  ///< drhs empty for a copy
};
/// `arg` [N,H,D] is the forward's (max and min only; ignored otherwise): the gradient of each
/// output element flows to the message that won it, so it depends on the forward's choice
/// among (near-)equal messages, not on this function's own float64 comparison.
GspmmGradients reference_gspmm_backward(const HostGraph& g, const Message& m, Reduce r, int H, int D,
                                        const Operand& lhs, const Operand& rhs, const edge_t* arg,
                                        const float* dout);

/// out [E,H,D], or [E,H,1] for dot (D the width of the product), caller's edge order.
std::vector<double> reference_gsddmm(const HostGraph& g, BinaryOp op, int H, int D, const Operand& x,
                                     const Operand& y);

struct GsddmmGradients {
  std::vector<double> dx, dy;  ///< shaped like x and y
};
GsddmmGradients reference_gsddmm_backward(const HostGraph& g, BinaryOp op, int H, int D, const Operand& x,
                                          const Operand& y, const float* dout);

/// GCN's symmetric normalisation: out[v] = sum over u -> v of x[u] / sqrt(d_out(u) d_in(v)),
/// degrees clamped to at least 1 (x and out [N,H,D]).
std::vector<double> reference_gcn_aggregate(const HostGraph& g, int H, int D, const float* x);
/// Its gradient dx from dout (the same sum over the reversed edges).
std::vector<double> reference_gcn_aggregate_backward(const HostGraph& g, int H, int D, const float* dout);

}  // namespace dfgnn
