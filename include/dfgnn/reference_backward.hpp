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

#include <utility>
#include <vector>

namespace dfgnn {

namespace detail {
template <class... V>
std::vector<std::vector<double>> moved(V&... v) {
  std::vector<std::vector<double>> r;
  r.reserve(sizeof...(v));
  (r.push_back(std::move(v)), ...);
  return r;
}
}  // namespace detail

struct GTGradients {
  std::vector<double> dQ, dK, dV;  ///< [N,H,D] each
  std::vector<double> dE;  ///< with edge features (ReferenceOptions): their shape ([E,H,D] or the edge columns'), else empty
};
struct AGNNGradients {
  std::vector<double> dX;     ///< [NS,H,D]; without X_dst also its destination-side terms
  std::vector<double> dbeta;  ///< beta_count entries (a shared beta: the sum over heads)
  std::vector<double> dX_dst;  ///< [N,H,D] with X_dst, else (left out) empty
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

/// A model's gradients by position, as its traits name them (types.hpp, ModelArgs): its
/// arguments' (`gradients`), then its edge argument's (`edge_gradient`; empty without edge
/// features), for callers that hold a model's tensors by position (the CLI's --reference).
inline std::vector<std::vector<double>> by_position(GTGradients r) {
  return detail::moved(r.dQ, r.dK, r.dV, r.dE);
}
inline std::vector<std::vector<double>> by_position(AGNNGradients r) { return detail::moved(r.dX, r.dbeta, r.dX_dst); }
inline std::vector<std::vector<double>> by_position(GATGradients r) { return detail::moved(r.del, r.der, r.dV, r.dee); }
inline std::vector<std::vector<double>> by_position(GATv2Gradients r) {
  return detail::moved(r.dXL, r.dXR, r.da, r.dE);
}

GTGradients reference_attention_backward(const HostGraph& g, int H, int D, const GT& model,
                                         const float* Q, const float* K, const float* V,
                                         const float* dOut, const ReferenceOptions& options = {});

AGNNGradients reference_attention_backward(const HostGraph& g, int H, int D, const AGNN& model,
                                           const float* X, const float* beta, int beta_count,
                                           const float* dOut, const ReferenceOptions& options = {});
/// With the destinations' X_dst (reference_attention's; null: left out).
AGNNGradients reference_attention_backward(const HostGraph& g, int H, int D, const AGNN& model,
                                           const float* X, const float* beta, int beta_count, const float* X_dst,
                                           const float* dOut, const ReferenceOptions& options = {});

GATGradients reference_attention_backward(const HostGraph& g, int H, int D, const GAT& model,
                                          const float* el, const float* er, const float* V,
                                          const float* dOut, const ReferenceOptions& options = {});

GATv2Gradients reference_attention_backward(const HostGraph& g, int H, int D, const GATv2& model,
                                            const float* XL, const float* XR, const float* a,
                                            const float* dOut, const ReferenceOptions& options = {});

}  // namespace dfgnn
