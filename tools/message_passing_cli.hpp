#pragma once
// `dfgnn spmm` and `dfgnn sddmm`: g-SpMM / g-SDDMM on graph files (message_passing_cli.cpp), and
// the job a backend runs: the portable Kokkos kernels there, the CUDA-native ones in
// message_passing_cuda.cpp.

#include "inputs.hpp"

#include <dfgnn/csr.hpp>
#include <dfgnn/message.hpp>

#include <vector>

namespace dfgnn::cli {

/// A host tensor [rows, heads, dim].
struct HostTensor {
  std::vector<float> data;
  std::size_t rows = 0;
  int heads = 0, dim = 0;  ///< heads 0: absent
};

/// One g-SpMM (or, with `sddmm`, one g-SDDMM) on a graph, its inputs in the graph's node order.
struct MessageJob {
  bool sddmm = false;
  Message message;      ///< g-SpMM
  Reduce reduce = Reduce::Sum;
  BinaryOp op = BinaryOp::Add;  ///< g-SDDMM
  int H = 1, D = 1;      ///< out [N,H,D]; g-SDDMM: the op's width (out [E,H,1] for dot)
  HostTensor lhs, rhs;   ///< g-SpMM's operands; g-SDDMM's x and y
  std::vector<float> dout;  ///< dLoss/dout: also run the backward; empty: forward only
  int warmup = 0, iters = 0;  ///< iters > 0: time the calls (median of iters after warmup)
};

/// What a backend returns, in the graph's node order.
struct MessageResult {
  std::vector<float> out;
  std::vector<edge_t> arg;         ///< max/min
  std::vector<float> dlhs, drhs;   ///< with dout: shaped like lhs and rhs
  Timing forward, backward;        ///< with iters
  double extra_mib = 0;            ///< CUDA: device memory of the plan and workspace (the forward's)
};

MessageResult run_message_kokkos(const HostGraph& g, const MessageJob& job);
#ifdef DFGNN_ENABLE_CUDA
/// On the CUDA-native kernels (message_passing_cuda.cpp), timed with CUDA events.
MessageResult run_message_cuda(const HostGraph& g, const MessageJob& job);
#endif

}  // namespace dfgnn::cli
