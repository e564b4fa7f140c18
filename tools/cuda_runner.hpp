#pragma once
// The CLI's bridge to the CUDA-native kernels: host inputs in, host outputs (and gradients)
// back, and timing with CUDA events for `dfgnn bench`.

#include "inputs.hpp"

#include <dfgnn/csr.hpp>

#include <string>
#include <vector>

namespace dfgnn::cli {

/// Runs one forward on the current device; `used` receives the plan's strategy, `weights` the
/// attention weights when the inputs ask for them (Inputs::weights).
std::vector<float> run_cuda(const HostGraph& g, const Inputs& in, Strategy strategy, Strategy& used,
                            std::vector<float>* weights = nullptr);

/// Times `iters` forwards after `warmup` ones (CUDA events around each, median), with the plan
/// built and inputs uploaded beforehand. `out` (if given) receives the last output.
Timing time_cuda(const HostGraph& g, const Inputs& in, Strategy strategy, int warmup, int iters, Strategy& used,
                 std::vector<float>* out = nullptr);

/// The training forward, then the fused backward with dLoss/dout = dout; the gradients in the
/// order of the CLI's gradient names (GT dQ dK dV, AGNN dX dbeta, GAT del der dV, GATv2 dXL dXR da).
std::vector<std::vector<float>> run_cuda_backward(const HostGraph& g, const Inputs& in, Strategy strategy,
                                                  const std::vector<float>& dout);

struct TrainTiming {
  Timing total;     ///< training forward + backward
  Timing backward;  ///< the backward alone
};

/// Times `iters` training forwards + backwards after `warmup` (CUDA events around each pass);
/// `grads` (if given) receives the last gradients.
TrainTiming time_cuda_backward(const HostGraph& g, const Inputs& in, Strategy strategy, const std::vector<float>& dout,
                               int warmup, int iters, Strategy& used,
                               std::vector<std::vector<float>>* grads = nullptr);

std::string cuda_device_name();

/// Device-to-device copy bandwidth of a 1 GiB buffer, bytes read + written, GB/s (median).
double cuda_copy_bandwidth();

}  // namespace dfgnn::cli
