#include <dfgnn/detail/schedule.hpp>

#include <algorithm>
#include <cmath>

namespace dfgnn {

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
