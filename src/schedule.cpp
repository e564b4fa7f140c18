#include <dfgnn/schedule.hpp>

#include <algorithm>
#include <cmath>

namespace dfgnn {

Strategy choose_strategy(ScoreKind kind, int heads, int dim, const DegreeStats& stats,
                         std::size_t scratch_bytes) {
  if (std::size_t(dim) * sizeof(float) <= scratch_bytes) return Strategy::Online;
  const bool reduces_features = kind == ScoreKind::GT || kind == ScoreKind::AGNN;
  const std::size_t heaviest = std::size_t(stats.max) * heads * sizeof(float);
  return reduces_features && heaviest >= scratch_bytes ? Strategy::PMF : Strategy::SMMF;
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
  double n = 0, sum = 0, sq = 0;
  for (std::size_t v = 0; v + 1 < ptr.size(); ++v) {
    const double d = double(ptr[v + 1] - ptr[v]);
    if (d > double(split)) continue;
    n += 1, sum += d, sq += d * d;
  }
  if (n == 0 || sum == 0) return {};
  const double mean = sum / n;
  return {mean, std::sqrt(std::max(0.0, sq / n - mean * mean)) / mean};
}

}  // namespace dfgnn
