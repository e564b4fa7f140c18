#pragma once
// Graph shapes every kernel test runs on, and random inputs (never zeros).

#include <dfgnn/csr.hpp>
#include <dfgnn/generate.hpp>

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

/// Square g with every edge `times` times, each copy beside its edge in CSR order; its batch kept.
inline HostGraph repeated_edges(const HostGraph& g, int times) {
  std::vector<node_t> src, dst;
  for (node_t v = 0; v < g.num_nodes; ++v)
    for (edge_t e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e)
      for (int r = 0; r < times; ++r) src.push_back(g.src[e]), dst.push_back(v);
  HostGraph r = graph_from_edges(g.num_nodes, src, dst);
  r.graph_ptr = g.graph_ptr;
  return r;
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

/// Dense's own batches: PATTERN-like; the same with every 7th edge three times and the first
/// node of each graph without in-edges; random graphs (edge probability 1/2, self loops, no
/// duplicates) at and around each of its buckets' size limits; rows whose edges start past the
/// first key chunks, stop in the first, or skip keys.
inline std::vector<NamedGraph> dense_batches() {
  std::vector<NamedGraph> m;
  m.push_back({"pattern", gen::sbm_batch(gen::SbmKind::Pattern, 64)});
  {
    const HostGraph p = gen::sbm_batch(gen::SbmKind::Pattern, 64, 7);
    std::vector<node_t> src, dst;
    for (std::size_t i = 0; i + 1 < p.graph_ptr.size(); ++i)
      for (node_t v = p.graph_ptr[i] + 1; v < p.graph_ptr[i + 1]; ++v)
        for (edge_t e = p.row_ptr[v]; e < p.row_ptr[v + 1]; ++e)
          for (int r = 0; r < (e % 7 == 0 ? 3 : 1); ++r) src.push_back(p.src[e]), dst.push_back(v);
    m.push_back({"pattern_dup", graph_from_edges(p.num_nodes, src, dst)});
    m.back().graph.graph_ptr = p.graph_ptr;
  }
  {
    std::mt19937 rng(11);
    std::vector<HostGraph> parts;
    for (node_t n : {1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 191, 192}) {
      std::vector<node_t> src, dst;
      for (node_t v = 0; v < n; ++v)
        for (node_t u = 0; u < n; ++u)
          if (rng() % 2) src.push_back(u), dst.push_back(v);
      parts.push_back(graph_from_edges(n, src, dst));
    }
    m.push_back({"sizes", batch_graphs(parts)});
  }
  {
    std::vector<HostGraph> parts;
    for (node_t n : {150, 40}) {
      std::vector<node_t> src, dst;
      for (node_t v = 0; v < n; ++v)
        for (node_t u = 0; u < n; ++u)
          if ((v % 3 == 0 && u >= n - 40) || (v % 3 == 1 && u < 24) || (v % 3 == 2 && u % 5 == v % 5))
            src.push_back(u), dst.push_back(v);
      parts.push_back(graph_from_edges(n, src, dst));
    }
    m.push_back({"late_edges", batch_graphs(parts)});
  }
  return m;
}

}  // namespace dfgnn::test
