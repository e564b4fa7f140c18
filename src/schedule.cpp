#include <dfgnn/schedule.hpp>

#include <algorithm>
#include <cmath>

namespace dfgnn {

namespace {

/// Dense's time over Online's, times the batch's density, came out the same on PATTERN-like
/// (~115 nodes, density 0.41) and CLUSTER-like (0.30) batches, within 0.015, for each score and
/// D (H100 forwards at 1x128, 2x64, 4x32; docs/cuda.md, "How Auto decides"): Dense pays above
/// that product, the bar below. It rises as D falls, since each head's softmax and staging
/// weigh more against its products, and is highest for GAT, whose Online kernel is the
/// cheapest (a scalar key). On MNIST-like batches (~57 nodes, 0.13) Dense lost at all nine
/// H x D measured: the products of absent pairs and the per-graph staging outweigh the reuse,
/// and the 64-node mean keeps such batches on Online. Two-byte elements keep float32's bars:
/// their Dense gains more over their Online at every score and D measured on PATTERN-like but
/// bf16 GAT at 4x32 (docs/cuda.md, "Dense").
bool dense_pays(const Op& op, const BatchStats& batch) {
  const ScoreKind kind = op.kind;
  const int dim = op.dim;
  constexpr double kDenseMeanNodes = 64;
  //                             D <= 32, 64, above
  constexpr double kBar[3][3] = {{0.26, 0.225, 0.225},   // GT
                                 {0.29, 0.25, 0.23},     // AGNN
                                 {0.355, 0.27, 0.25}};   // GAT
  static_assert(int(ScoreKind::GT) == 0 && int(ScoreKind::AGNN) == 1 && int(ScoreKind::GAT) == 2, "kBar's rows");
  if (kind == ScoreKind::GATv2) return false;  // Dense has no GATv2 score
  const double bar = kBar[int(kind)][dim <= 32 ? 0 : dim <= 64 ? 1 : 2];
  return batch.density >= bar && batch.mean_nodes >= kDenseMeanNodes;
}

}  // namespace

Strategy choose_strategy(const Op& op, const DegreeStats& degrees, const BatchStats& batch, const DeviceFacts& device) {
  if (device.has(Strategy::Dense) && dense_pays(op, batch)) return Strategy::Dense;
  if (device.has(Strategy::Online) && std::size_t(op.dim) * sizeof(float) <= device.scratch_bytes)
    return Strategy::Online;
  const bool reduces_features = op.kind == ScoreKind::GT || op.kind == ScoreKind::AGNN;
  const std::size_t heaviest = std::size_t(degrees.max) * op.heads * sizeof(float);
  return reduces_features && heaviest >= device.scratch_bytes ? Strategy::PMF : Strategy::SMMF;
}

std::vector<node_t> partition_rows(const HostGraph& g, int heads, edge_t capacity, int max_rows) {
  detail::check_row_offsets(g);
  std::vector<node_t> bounds{0};
  edge_t team_edges = 0;
  for (node_t v = 0; v < g.num_nodes; ++v) {
    const edge_t deg = g.row_ptr[v + 1] - g.row_ptr[v];
    const int rows = v - bounds.back();
    if (rows > 0 && (rows == max_rows || (team_edges + deg) * heads > capacity)) {
      bounds.push_back(v);
      team_edges = 0;
    }
    team_edges += deg;
  }
  if (g.num_nodes > 0) bounds.push_back(g.num_nodes);
  return bounds;
}

edge_t piece_edges(edge_t num_edges, int lanes, int concurrency) {
  const edge_t share = num_edges * lanes / std::max(1, concurrency);
  return std::min(kMaxPieceEdges, std::max<edge_t>(32, share));
}

RowPieces row_pieces(const std::vector<edge_t>& ptr, edge_t split) {
  RowPieces p;
  for (node_t v = 0; v + 1 < node_t(ptr.size()); ++v) {
    const edge_t a = ptr[v], d = ptr[v + 1] - a;
    if (d <= split) continue;
    const edge_t n = (d + split - 1) / split;
    p.rows.push_back({v, int(p.pieces.size()), int(n)});
    for (edge_t i = 0; i < n; ++i) p.pieces.push_back({a + d * i / n, a + d * (i + 1) / n, v, int(p.pieces.size())});
  }
  return p;
}

WholeDegrees whole_degrees(const std::vector<edge_t>& ptr, edge_t split) {
  std::uint64_t n = 0, sum = 0, squares = 0;
  for (std::size_t v = 0; v + 1 < ptr.size(); ++v) {
    const std::uint64_t d = std::uint64_t(ptr[v + 1] - ptr[v]);
    if (d > std::uint64_t(split)) continue;
    n += 1, sum += d, squares += d * d;
  }
  return whole_degrees_of(n, sum, squares);
}

WholeDegrees whole_degrees_of(std::uint64_t count, std::uint64_t sum, std::uint64_t squares) {
  if (count == 0 || sum == 0) return {};
  const double n = double(count), mean = double(sum) / n;
  return {mean, std::sqrt(std::max(0.0, double(squares) / n - mean * mean)) / mean};
}

}  // namespace dfgnn
