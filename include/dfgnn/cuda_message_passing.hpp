#pragma once
/// \file cuda_message_passing.hpp
/// CUDA-native generalized message passing (g-SpMM, g-SDDMM, the GCN aggregation; semantics in
/// message.hpp), forward and backward, on device pointers and a stream. Available when dfgnn is
/// built with DFGNN_ENABLE_CUDA (target dfgnn::dfgnn_cuda).
///
/// \code
///   dfgnn::cuda::MessagePlan plan(host_graph);                   // once per graph
///   dfgnn::cuda::gspmm(stream, plan, dfgnn::Message::u_op_e(dfgnn::BinaryOp::Mul), dfgnn::Reduce::Sum,
///                      H, D, {x, H, D}, {w, 1, 1}, out);         // out[v] = sum x[u] * w[e]
/// \endcode
///
/// Operands are dfgnn::Operand {device pointer, heads, dim} (heads 1 or H, dim 1 or D: broadcast);
/// rows are implied (N, or E in the caller's edge order). Outputs are overwritten. Arguments are
/// checked like the Kokkos entries' (dfgnn::Error naming the argument); CUDA failures throw
/// std::runtime_error. No atomics: every output entry is summed by one lane in an order fixed by
/// the graph, so results are bitwise reproducible. Calls only launch kernels, except that the
/// first backward or GCN call through a plan builds and uploads the transposed graph, and a call
/// that needs more workspace than the plan holds (split rows' partials, broadcast gradients)
/// allocates it: calls through one plan must not overlap on different streams.

#include <dfgnn/cuda.hpp>
#include <dfgnn/detail/messages.hpp>
#include <dfgnn/message.hpp>

#include <memory>

namespace dfgnn::cuda {

/// Per-graph preprocessing of the message-passing kernels: the device graph, the pieces of
/// heavy rows (split so that no warp walks more than a fair share of the edges), per-node
/// degree factors (mean, GCN) and, built on first use, the transposed graph with its pieces.
class MessagePlan final : public dfgnn::detail::MessageExecutor {
 public:
  /// Uploads `g` to the current device and owns that copy.
  explicit MessagePlan(const HostGraph& g);
  /// Uses the caller's device copy of `g` (it must outlive the plan); `g` gives the degrees.
  MessagePlan(const HostGraph& g, const DeviceGraph& device_graph);
  ~MessagePlan() override;
  MessagePlan(MessagePlan&&) noexcept;
  MessagePlan& operator=(MessagePlan&&) noexcept;

  node_t num_nodes() const override;
  edge_t num_edges() const override;
  Backend backend() const override { return Backend::Native; }
  /// Runs a call the dispatch checked (MessageCall::stream: the cudaStream_t).
  void run(const dfgnn::detail::MessageCall& call) const override;

  const DeviceGraph& graph() const;
  /// Rows with more in-edges than this are split into pieces of at most this many edges.
  edge_t split() const;
  /// Whether g-SpMM walks a row with half a warp at 64 < D <= 128: many rows of few edges.
  bool half_warp_rows() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// out [N,H,D] = reduce over u -> v of message(lhs, rhs); arg (max/min only, may be null)
/// receives [N,H,D] caller's edge indices of the winners (the first among equal), -1 for an
/// empty row.
void gspmm(cudaStream_t stream, const MessagePlan& plan, const Message& message, Reduce reduce, int H, int D,
           const Operand& lhs, const Operand& rhs, float* out, edge_t* arg = nullptr);

/// dlhs and drhs (shaped like lhs and rhs; either may be null to skip it) from dout [N,H,D];
/// arg is the forward's (max/min). Node gradients are gathered over the CSR / CSC, edge
/// gradients written edge by edge.
void gspmm_backward(cudaStream_t stream, const MessagePlan& plan, const Message& message, Reduce reduce, int H,
                    int D, const Operand& lhs, const Operand& rhs, const edge_t* arg, const float* dout, float* dlhs,
                    float* drhs);

/// out [E,H,D] (for dot [E,H,1], D the width of the product) = op(x[u], y[v]) per edge, in the
/// caller's edge order; x and y [N, 1|H, 1|D].
void gsddmm(cudaStream_t stream, const MessagePlan& plan, BinaryOp op, int H, int D, const Operand& x,
            const Operand& y, float* out);

/// dx, dy (shaped like x and y; either may be null) from dout [E,H,D] ([E,H,1] for dot).
void gsddmm_backward(cudaStream_t stream, const MessagePlan& plan, BinaryOp op, int H, int D, const Operand& x,
                     const Operand& y, const float* dout, float* dx, float* dy);

/// out[v] = sum over u -> v of x[u] / sqrt(d_out(u) d_in(v)) (degrees clamped to 1); x, out [N,H,D].
void gcn_aggregate(cudaStream_t stream, const MessagePlan& plan, int H, int D, const float* x, float* out);
/// Its gradient dx [N,H,D] from dout [N,H,D].
void gcn_aggregate_backward(cudaStream_t stream, const MessagePlan& plan, int H, int D, const float* dout,
                            float* dx);

}  // namespace dfgnn::cuda
