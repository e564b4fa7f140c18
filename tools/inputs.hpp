#pragma once
// The inputs of one CLI attention run and its timing, shared by the Kokkos and CUDA runners.

#include <dfgnn/dropout.hpp>
#include <dfgnn/op.hpp>

#include <string>
#include <utility>
#include <vector>

namespace dfgnn::cli {

// The arguments of one model run, in the order the API takes them (model_args: AGNN's beta too).
struct Inputs {
  ScoreKind kind;
  float param = 0.0f;  // the model's scale or slope (--scale, --slope)
  std::size_t NS, N, H, D;  // sources, destinations (the rows of out), heads, features
  std::vector<std::vector<float>> tensors;
  std::vector<float> edge_values;  // [E, edge_value_heads] or empty
  int edge_value_heads = 0;
  std::vector<float> edge_features;  // the model's edge argument (--edge-features) or empty
  Dropout dropout;  // of the training forward and backward (--dropout), keyed on --seed
  std::size_t E = 0;     // edges
  bool weights = false;  // the forward also writes the attention weights [E,H] (--attention-out)
  DType dtype = DType::F32;  // the tensors' element type on the device (--dtype); the floats here hold its values

  const ModelArgs& args() const { return model_args(kind); }
  bool edges() const { return !edge_features.empty(); }
  /// The entries of a HeadVector argument (AGNN's beta: 1 or H), else 0.
  std::size_t count() const {
    for (int i = 0; i < args().count; ++i)
      if (args().inputs[i].extent == Extent::HeadVector) return tensors[std::size_t(i)].size();
    return 0;
  }
  /// The entries of out, dOut: [N,H,D].
  std::size_t out_size() const { return N * H * D; }
  /// The rows of a node argument of extent e: NS or N.
  std::size_t rows(Extent e) const { return source_rows(e) ? NS : N; }
  /// The shape of an argument (or its gradient) of extent e.
  std::vector<std::size_t> shape(Extent e) const {
    switch (e) {
      case Extent::SrcFeatures:
      case Extent::DstFeatures: return {rows(e), H, D};
      case Extent::SrcScalars:
      case Extent::DstScalars: return {rows(e), H};
      case Extent::HeadFeatures: return {H, D};
      case Extent::HeadVector: return {count()};
      case Extent::EdgeFeatures: return {E, H, D};
      case Extent::EdgeScalars: return {E, H};
    }
    return {};
  }
};

/// Whether an argument of extent e has a row per node (the rows a renumbering moves; edge
/// tensors keep the file's edge order, which a renumbered graph's edge ids are).
inline bool node_rows(Extent e) {
  return e != Extent::HeadFeatures && e != Extent::HeadVector && e != Extent::EdgeFeatures && e != Extent::EdgeScalars;
}

/// Named gradients in the API's order, on the host.
using Gradients = std::vector<std::pair<std::string, std::vector<float>>>;

/// The gradients of a model, in the API's order, with their element counts.
inline std::vector<std::pair<std::string, std::size_t>> gradient_sizes(const Inputs& in) {
  std::vector<std::pair<std::string, std::size_t>> r;
  for (int i = 0; i < in.args().count; ++i) {
    std::size_t n = 1;
    for (std::size_t x : in.shape(in.args().inputs[i].extent)) n *= x;
    r.emplace_back(in.args().gradients[i], n);
  }
  if (in.edges()) r.emplace_back(in.args().edge_gradient, in.edge_features.size());
  return r;
}

/// The extent of gradient i of gradient_sizes: the argument's, the edge argument's last.
inline Extent gradient_extent(const Inputs& in, std::size_t i) {
  return int(i) < in.args().count ? in.args().inputs[i].extent : in.args().edge.extent;
}

/// Milliseconds of repeated runs.
struct Timing {
  double median_ms = 0, min_ms = 0;
  double plan_mib = -1;  ///< device memory the plan held after the runs (CUDA-native), MiB
};

}  // namespace dfgnn::cli
