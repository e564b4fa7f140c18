#pragma once
/// \file reference.hpp
/// Float64 host reference of the fused attention forward: the test oracle for every kernel.
/// Straight from the definitions (score, row-max softmax, weighted sum), no tiling, no fusion.
///
/// Tensors are row-major float32: node features [N,H,D], node scalars [N,H], a [H,D].
/// Optional edge values are [E, ew] with ew in {1, H}, in the order the edges were given
/// (HostGraph::edge_id maps CSR positions to that order); nullptr means none.
///
/// Each model's overload takes its arguments' data in its traits' order (types.hpp, ModelArgs),
/// a head vector's (AGNN's beta) followed by its count, and so do reference_attention_backward's
/// (dOut after them): the CLI passes them by position (tools/reference_check.cpp).

#include <dfgnn/csr.hpp>
#include <dfgnn/dropout.hpp>

#include <vector>

namespace dfgnn {

/// Per-edge multipliers of the score (the adjacency's nonzeros), caller's edge order.
struct HostEdgeValues {
  const float* data = nullptr;  ///< [E, heads] row-major, or nullptr
  int heads = 0;                ///< 1 (shared by all heads) or H
};

/// Everything optional of a reference forward.
struct ReferenceOptions {
  ReferenceOptions(HostEdgeValues w = {}) : edge_values(w) {}  // NOLINT: plain edge values convert
  HostEdgeValues edge_values;
  Dropout dropout;                           ///< applied to the probabilities, as the kernels do
  std::vector<double>* logsumexp = nullptr;  ///< if set, receives the [N,H] row statistics
  std::vector<double>* weights = nullptr;    ///< if set, receives the [E,H] attention weights (Call::weights)
  /// Edge features in the caller's edge order, PyG's edge_dim (null: none): GT and GATv2
  /// [E,H,D], GAT [E,H]; AGNN takes none. GT adds them to the key and the value
  /// (scale <Q_v, K_u + E>, message V_u + E), GAT to the score's terms (LeakyReLU(el_u + er_v +
  /// ee)), GATv2 inside (sum_d a_d LeakyReLU(XL_u + XR_v + E)_d): the models' edge arguments
  /// (types.hpp), Call::edge_features.
  const float* edge_features = nullptr;
  /// GT's edge columns (types.hpp): edge_features is [E, edge_heads, edge_width], heads 1 (one
  /// row for every head) or H, on each head's last edge_width columns. 0: H and D.
  int edge_heads = 0, edge_width = 0;
  /// The backward only (reference_backward.hpp): the forward's output [N,H,D] that the backward
  /// reads for Delta_v = <dOut_v, out_v> (null: the reference's own, exact): the kernels' out
  /// rounded to a two-byte type, to check their arithmetic apart from that rounding.
  const float* backward_out = nullptr;
};

std::vector<double> reference_attention(const HostGraph& g, int H, int D, const GT& model,
                                        const float* Q, const float* K, const float* V,
                                        const ReferenceOptions& options = {});

/// beta has `beta_count` entries, 1 (shared) or H; X serves both ends of an edge (a square graph).
std::vector<double> reference_attention(const HostGraph& g, int H, int D, const AGNN& model,
                                        const float* X, const float* beta, int beta_count,
                                        const ReferenceOptions& options = {});
/// With the destinations' X_dst [N,H,D]: X [NS,H,D] is the sources' and the values. X_dst null
/// leaves it out, as the API's calls do: X stands in for it (a square graph only).
std::vector<double> reference_attention(const HostGraph& g, int H, int D, const AGNN& model,
                                        const float* X, const float* beta, int beta_count, const float* X_dst,
                                        const ReferenceOptions& options = {});

std::vector<double> reference_attention(const HostGraph& g, int H, int D, const GAT& model,
                                        const float* el, const float* er, const float* V,
                                        const ReferenceOptions& options = {});

std::vector<double> reference_attention(const HostGraph& g, int H, int D, const GATv2& model,
                                        const float* XL, const float* XR, const float* a,
                                        const ReferenceOptions& options = {});

/// max_i |out_i - ref_i| / max(max_i |ref_i|, tiny): the relative error every test reports.
/// A NaN anywhere in out gives +infinity.
double max_relative_error(const float* out, const std::vector<double>& ref);

}  // namespace dfgnn
