#pragma once
// Graph shapes every kernel test runs on, and random inputs (never zeros).

#include <dfgnn/csr.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace dfgnn::test {

struct NamedGraph {
  std::string name;
  HostGraph graph;
};

inline std::vector<float> random_values(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Random edges; a fraction of the nodes never appears as a destination (empty rows).
inline HostGraph random_graph(node_t n, std::size_t m, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<node_t> any(0, n - 1), dest(0, n - 1 - n / 5);
  std::vector<node_t> src(m), dst(m);
  for (std::size_t i = 0; i < m; ++i) src[i] = any(rng), dst[i] = dest(rng);
  return graph_from_edges(n, src, dst);
}

// Bipartite: m random edges u -> v with u < `sources` (of ns) and v < `rows` (of n); the
// sources and rows above them have no edge.
inline HostGraph random_bipartite(node_t ns, node_t n, node_t sources, node_t rows, std::size_t m, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<node_t> u(0, sources - 1), v(0, rows - 1);
  std::vector<node_t> src(m), dst(m);
  for (std::size_t i = 0; i < m; ++i) src[i] = u(rng), dst[i] = v(rng);
  return graph_from_edges(ns, n, src, dst);
}

// Node 0 has `degree` in-edges: more scores than any team scratch holds. Its edges come in
// CSR order (edge ids equal positions), the other graphs' do not: kernels see both.
inline HostGraph super_node_graph(node_t n, std::size_t degree, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<node_t> any(0, n - 1);
  std::vector<node_t> src, dst;
  for (std::size_t i = 0; i < degree; ++i) src.push_back(any(rng)), dst.push_back(0);
  for (node_t v = 1; v < n; ++v)
    for (int k = 0; k < 3; ++k) src.push_back(any(rng)), dst.push_back(v);
  return graph_from_edges(n, src, dst);
}

// In-degrees drawn from a Zipf-like law: a few heavy rows, many light ones.
inline HostGraph power_law_graph(node_t n, std::size_t m, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<node_t> any(0, n - 1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<node_t> src(m), dst(m);
  for (std::size_t i = 0; i < m; ++i) {
    src[i] = any(rng);
    dst[i] = node_t(double(n) * std::pow(unit(rng), 3.0));
  }
  return graph_from_edges(n, src, dst);
}

inline HostGraph batch_of_small_graphs(int count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> size(2, 30);
  std::vector<HostGraph> graphs;
  for (int g = 0; g < count; ++g) {
    const node_t n = size(rng);
    graphs.push_back(random_graph(n, std::size_t(n) * 4, seed + 1 + unsigned(g)));
  }
  return batch_graphs(graphs);
}

inline std::vector<NamedGraph> test_graphs(std::size_t super_degree) {
  std::vector<NamedGraph> gs;
  gs.push_back({"random", random_graph(300, 2400, 1)});
  gs.push_back({"one_node", graph_from_edges(1, {0}, {0})});
  gs.push_back({"one_node_no_edge", graph_from_edges(1, {}, {})});
  gs.push_back({"empty", graph_from_edges(7, {}, {})});
  gs.push_back({"self_loops_and_duplicates",
                graph_from_edges(5, {0, 1, 1, 1, 2, 3, 3, 4, 4, 0}, {0, 1, 2, 2, 2, 3, 4, 4, 4, 4})});
  gs.push_back({"super_node", super_node_graph(500, super_degree, 2)});
  gs.push_back({"batch64", batch_of_small_graphs(64, 3)});
  gs.push_back({"power_law", power_law_graph(1000, 8000, 4)});
  return gs;
}

}  // namespace dfgnn::test
