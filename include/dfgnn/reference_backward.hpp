#pragma once
/// \file reference_backward.hpp
/// Float64 host reference of the attention backward: the gradients of reference_attention's
/// loss sum(out * dOut) with respect to every input, straight from the chain rule (no
/// recomputation tricks, no CSC). The oracle of the backward kernels; it is itself checked
/// against finite differences of reference_attention.
///
/// Same conventions as reference.hpp: row-major float32 inputs, dOut [N,H,D];
/// ReferenceOptions supplies the edge values and the dropout of the forward (its logsumexp
/// pointer is ignored). Gradients have the shapes of their inputs.

#include <dfgnn/reference.hpp>

#include <vector>

namespace dfgnn {

struct GTGradients {
  std::vector<double> dQ, dK, dV;  ///< [N,H,D] each
  std::vector<double> dE;  ///< with edge features (ReferenceOptions): their shape ([E,H,D] or the edge columns'), else empty
};
struct AGNNGradients {
  std::vector<double> dX;     ///< [N,H,D]
  std::vector<double> dbeta;  ///< beta_count entries (a shared beta: the sum over heads)
};
struct GATGradients {
  std::vector<double> del, der;  ///< [N,H] each
  std::vector<double> dV;        ///< [N,H,D]
  std::vector<double> dee;       ///< [E,H] with edge features (ReferenceOptions), else empty
};
struct GATv2Gradients {
  std::vector<double> dXL, dXR;  ///< [N,H,D] each
  std::vector<double> da;        ///< [H,D]
  std::vector<double> dE;        ///< [E,H,D] with edge features (ReferenceOptions), else empty
};

GTGradients reference_attention_backward(const HostGraph& g, int H, int D, const GT& model,
                                         const float* Q, const float* K, const float* V,
                                         const float* dOut, const ReferenceOptions& options = {});

AGNNGradients reference_attention_backward(const HostGraph& g, int H, int D, const AGNN& model,
                                           const float* X, const float* beta, int beta_count,
                                           const float* dOut, const ReferenceOptions& options = {});

GATGradients reference_attention_backward(const HostGraph& g, int H, int D, const GAT& model,
                                          const float* el, const float* er, const float* V,
                                          const float* dOut, const ReferenceOptions& options = {});

GATv2Gradients reference_attention_backward(const HostGraph& g, int H, int D, const GATv2& model,
                                            const float* XL, const float* XR, const float* a,
                                            const float* dOut, const ReferenceOptions& options = {});

}  // namespace dfgnn
