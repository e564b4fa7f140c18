#include <dfgnn/schedule.hpp>

namespace dfgnn {

Strategy choose_strategy(ScoreKind kind, int heads, const DegreeStats& stats,
                         std::size_t scratch_bytes) {
  const bool reduces_features = kind == ScoreKind::GT || kind == ScoreKind::AGNN;
  const std::size_t heaviest = std::size_t(stats.max) * heads * sizeof(float);
  return reduces_features && heaviest >= scratch_bytes ? Strategy::PMF : Strategy::SMMF;
}

std::vector<node_t> partition_rows(const HostGraph& g, int heads, edge_t capacity, int max_rows) {
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

}  // namespace dfgnn
