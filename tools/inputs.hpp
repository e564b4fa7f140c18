#pragma once
// The inputs of one CLI attention run (the model options, the input files or random tensors, a
// renumbering), shared by attention and bench, and a run's timing.

#include "options.hpp"

#include <dfgnn/csr.hpp>
#include <dfgnn/dropout.hpp>
#include <dfgnn/io.hpp>
#include <dfgnn/op.hpp>
#include <dfgnn/reorder.hpp>

#include <string>
#include <utility>
#include <vector>

namespace dfgnn::cli {

// The arguments of one model run, in the order the API takes them (model_args: AGNN's beta too);
// an optional one left out has an empty tensor (X stands in for AGNN's X_dst on a square graph).
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
  /// Whether the run passes argument i: a required one always, an optional one when it has a
  /// tensor.
  bool given(int i) const { return args().inputs[i].stand_in < 0 || !tensors[std::size_t(i)].empty(); }
  /// The extent of argument i (args().count: the edge argument).
  Extent extent(int i) const { return i < args().count ? args().inputs[i].extent : args().edge.extent; }
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

/// The argument of each gradient a run writes, in the API's order: those of the arguments given
/// (Inputs::given), then the edge argument's (args().count) with edge features.
inline std::vector<int> gradient_arguments(const Inputs& in) {
  std::vector<int> r;
  for (int i = 0; i < in.args().count; ++i)
    if (in.given(i)) r.push_back(i);
  if (in.edges()) r.push_back(in.args().count);
  return r;
}

/// The gradients a run writes (gradient_arguments), with their element counts.
inline std::vector<std::pair<std::string, std::size_t>> gradient_sizes(const Inputs& in) {
  std::vector<std::pair<std::string, std::size_t>> r;
  for (const int i : gradient_arguments(in)) {
    if (i == in.args().count) {
      r.emplace_back(in.args().edge_gradient, in.edge_features.size());
      continue;
    }
    std::size_t n = 1;
    for (std::size_t x : in.shape(in.extent(i))) n *= x;
    r.emplace_back(in.args().gradients[i], n);
  }
  return r;
}

/// The extent of gradient i of gradient_sizes.
inline Extent gradient_extent(const Inputs& in, std::size_t i) { return in.extent(gradient_arguments(in)[i]); }

/// Milliseconds of repeated runs.
struct Timing {
  double median_ms = 0, min_ms = 0, spread_ms = 0;  ///< spread: the interquartile range
  double plan_mib = -1;  ///< device memory the plan held after the runs (CUDA-native), MiB
};

/// The options of a model run (attention, bench): the model, its shape and parameters, the
/// element type, dropout and renumbering.
const Section& run_section();
/// The model's input files and edge inputs (attention).
const Section& input_section();

/// --grad-out's gradients, for its help: each model's ("gt dQ dK dV | agnn dX dbeta | ..."), and
/// its edge argument's on a second line.
std::string gradients_help();
/// The gradients of the models' per-head arguments ("dbeta and da"): sums over every edge.
std::string head_gradients_help();

/// The option of a model argument: its name in lower case (--q, --el, --xl, --beta, ...).
std::string option_of(const ArgSpec& arg);
/// Options that only some models read: given for another model they are a mistake, not a no-op.
void reject_foreign_options(const Args& a, ScoreKind kind);

/// The data of t if its shape is one of `shapes`; else an Error naming `path` and the shapes.
std::vector<float> checked(const io::Array& t, const std::string& path,
                           const std::vector<std::vector<std::size_t>>& shapes);

/// The run's inputs on `g` from the options: the files given, random tensors for the others,
/// all rounded to --dtype.
Inputs load_inputs(const Args& a, const HostGraph& g);

/// The file's graph and the one a run uses: its renumbering by an Ordering (reorder.hpp), or
/// for None the file's itself, not copied (a graph of billions of edges fits once), with empty
/// order and position (no rows move; a bipartite graph, whose two sides share no numbering,
/// has only this one).
struct Renumbered {
  HostGraph file;
  Reordered re;  ///< empty for None
  const HostGraph& run() const { return re.order.empty() ? file : re.graph; }
};
Renumbered renumbered(HostGraph g, Ordering o);

/// x's rows moved by `index` (order or position of renumbered), or x itself when none moves or
/// x is empty.
std::vector<float> moved_rows(const std::vector<float>& x, const std::vector<node_t>& index);

/// The inputs in a renumbered graph's order: node tensors (features, el, er) take rows `index`
/// (reorder.hpp's order to go there, position to come back); per-head ones (GATv2's a, AGNN's
/// beta), the edge values and the dropout seed stay, since the renumbered graph's edge ids are the file's.
Inputs in_order(const Inputs& in, const std::vector<node_t>& index);

}  // namespace dfgnn::cli
