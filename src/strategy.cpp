// Every strategy decision of both backends (include/dfgnn/detail/strategy.hpp), and the
// strategies' names.

#include <dfgnn/detail/strategy.hpp>

#include <algorithm>

namespace dfgnn {

const char* to_string(Strategy s) {
  switch (s) {
    case Strategy::Auto: return "auto";
    case Strategy::SMMF: return "smmf";
    case Strategy::PMF: return "pmf";
    case Strategy::Unfused: return "unfused";
    case Strategy::Staged: return "staged";
    case Strategy::Online: return "online";
    case Strategy::Dense: return "dense";
  }
  return "?";
}

Strategy parse_strategy(const std::string& text) {
  const std::string s = lower(text);
  for (Strategy v : {Strategy::Auto, Strategy::SMMF, Strategy::PMF, Strategy::Unfused, Strategy::Staged,
                     Strategy::Online, Strategy::Dense})
    if (s == to_string(v)) return v;
  throw Error("unknown strategy '" + text + "' (expected auto, smmf, pmf, unfused, staged, online or dense)");
}

}  // namespace dfgnn

namespace dfgnn::detail {

namespace {

/// Dense's rule for the model of `kind` (its traits).
DenseRule dense_rule(ScoreKind kind) {
  return visit_model(kind, [](auto model) { return decltype(model)::dense; });
}

/// Dense's time over Online's, times the batch's density, came out the same on PATTERN-like
/// (~115 nodes, density 0.41) and CLUSTER-like (0.30) batches, within 0.015, for each score and
/// D (H100 forwards at 1x128, 2x64, 4x32; docs/cuda.md, "How Auto decides"): Dense pays above
/// that product, the model's bar (DenseRule). It rises as D falls, since each head's softmax
/// and staging weigh more against its products, and is highest for GAT, whose Online kernel is
/// the cheapest (a scalar key). On MNIST-like batches (~57 nodes, 0.13) Dense lost at all nine
/// H x D measured: the products of absent pairs and the per-graph staging outweigh the reuse,
/// and the 64-node mean keeps such batches on Online. Two-byte elements keep float32's bars:
/// their Dense gains more over their Online at every score and D measured on PATTERN-like but
/// bf16 GAT at 4x32 (docs/cuda.md, "Dense").
bool dense_pays(const Op& op, const BatchStats& batch) {
  constexpr double kDenseMeanNodes = 64;
  const DenseRule rule = dense_rule(op.kind);
  if (!rule.runs) return false;
  const double bar = rule.bars[op.dim <= 32 ? 0 : op.dim <= 64 ? 1 : 2];
  return batch.density >= bar && batch.mean_nodes >= kDenseMeanNodes;
}

/// "GT, AGNN and GAT": the labels of the models Dense computes.
std::string dense_models() {
  std::string names;
  int left = 0;
  for (ScoreKind k : kModels) left += dense_rule(k).runs;
  for (ScoreKind k : kModels) {
    if (!dense_rule(k).runs) continue;
    names += visit_model(k, [](auto model) { return decltype(model)::label; });
    --left;
    names += left > 1 ? ", " : left == 1 ? " and " : "";
  }
  return names;
}

}  // namespace

Strategy element_strategy(const char* who, Strategy asked, DType dtype, unsigned two_byte) {
  const auto runs = [&](Strategy s) { return (two_byte & strategy_bit(s)) != 0; };
  const bool dense = runs(Strategy::Dense);  // Online runs every type on both backends
  if (dtype == DType::F32 || (asked != Strategy::Auto && runs(asked))) return asked;
  if (asked == Strategy::Auto) return dense ? Strategy::Auto : Strategy::Online;
  throw Error(std::string(who) + ": the " + to_string(asked) + " strategy runs float32 tensors only; " +
              to_string(dtype) + " ones run " + (dense ? "Online or Dense (Auto picks one)" : "Online (Auto picks it)"));
}

Strategy choose_strategy(const Op& op, const DegreeStats& degrees, const DeviceFacts& device) {
  if (device.has(Strategy::Dense) && dense_pays(op, device.batch)) return Strategy::Dense;
  if (device.has(Strategy::Online) && std::size_t(op.dim) * sizeof(float) <= device.scratch_bytes)
    return Strategy::Online;
  const bool pmf = visit_model(op.kind, [](auto model) { return decltype(model)::pmf_on_heavy_rows; });
  const std::size_t heaviest = std::size_t(degrees.max) * op.heads * sizeof(float);
  return pmf && heaviest >= device.scratch_bytes ? Strategy::PMF : Strategy::SMMF;
}

Strategy resolve_strategy(const char* who, Strategy asked, const Op& op, const DegreeStats& degrees,
                          const DeviceFacts& device) {
  if (std::string(to_string(asked)) == "?")
    throw Error(std::string(who) + ": strategy " + std::to_string(int(asked)) + " is none of the enum's values");
  const Strategy s = element_strategy(who, asked, op.dtype, device.two_byte);
  if (s == Strategy::Auto) {
    DeviceFacts offered = device;
    if (op.dtype != DType::F32) offered.strategies &= device.two_byte;
    return choose_strategy(op, degrees, offered);
  }
  if (!device.has(s)) throw Error(std::string(who) + ": " + device.why_not[int(s)]);
  return s;
}

DenseFit dense_fit(const Op& op, const DegreeStats& degrees, const DenseBatch& b, const DenseLimits& limits) {
  DenseFit f;
  const auto fail = [&](std::string why) {
    f.why = std::move(why);
    return f;
  };
  const DenseRule rule = dense_rule(op.kind);
  const char* label = visit_model(op.kind, [](auto model) { return decltype(model)::label; });
  const bool cosine = visit_model(op.kind, [](auto model) { return decltype(model)::cosine; });
  const int D = op.dim;
  if (!b.batch) return fail("needs a batch of square graphs, not a bipartite graph");
  if (!rule.runs) return fail("computes the " + dense_models() + " scores, not " + label);
  if (D % limits.dim_multiple != 0)
    return fail("needs D a multiple of " + std::to_string(limits.dim_multiple) + ", got " + std::to_string(D));
  if (cosine && D > limits.max_cosine_dim)
    return fail(std::string("computes the ") + label + " score at D <= " + std::to_string(limits.max_cosine_dim) +
                " only, got " + std::to_string(D));
  if (b.first_too_large >= 0)
    return fail("needs a batch of graphs of at most " + std::to_string(limits.max_nodes) + " nodes; graph " +
                std::to_string(b.first_too_large) + " has " + std::to_string(b.too_large_nodes));
  if (b.unfit_nodes > 0)
    return fail("needs " + std::to_string(b.unfit_bytes) + " bytes of shared memory for graphs of " +
                std::to_string(b.unfit_nodes) + " nodes at D = " + std::to_string(D) + ", the device allows " +
                std::to_string(limits.shared_bytes));
  if (degrees.max > limits.max_degree)
    return fail("takes rows of at most " + std::to_string(limits.max_degree) + " edges; the largest has " +
                std::to_string(degrees.max));
  f.batch.density = b.squares > 0 ? double(op.edges) / b.squares : 0;
  f.batch.mean_nodes = b.graphs > 0 ? op.dst_nodes / double(b.graphs) : 0;
  return f;
}

bool dense_runs(bool auto_dense, bool edge_wise, bool edge_features) {
  return !(auto_dense && (edge_wise || edge_features));
}

void check_edge_strategy(const char* who, Strategy strategy, bool auto_dense) {
  if (strategy != Strategy::Online && !(strategy == Strategy::Dense && auto_dense))
    throw Error(std::string(who) + ": the " + to_string(strategy) +
                " strategy takes no edge features; Online does (Auto picks it)");
}

bool columns_first(const char* who, BackwardOrder order, ScoreKind kind, bool rows, bool columns, edge_t edges,
                   node_t nodes, bool edge_features) {
  const bool cols_ok = columns && !(edge_features && rows);
  if (order == BackwardOrder::Auto) return cols_ok && (!rows || double(edges) >= kColsFirstDegree * double(nodes));
  const bool cols = order == BackwardOrder::ColumnsFirst;
  if (cols ? !cols_ok : !rows)
    throw Error(std::string(who) + "(" + to_string(kind) + "): no " + (cols ? "columns-first" : "rows-first") +
                " order for this score" + (cols && columns ? " with edge features" : "") + " (docs/backward.md)");
  return cols;
}

edge_t piece_edges(edge_t num_edges, const PieceFacts& device) {
  const edge_t share = num_edges * device.lanes / std::max<std::int64_t>(1, device.threads);
  return std::min(device.longest, std::max(device.shortest, share));
}

}  // namespace dfgnn::detail
