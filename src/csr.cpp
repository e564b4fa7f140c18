#include <dfgnn/csr.hpp>
#include <dfgnn/detail/parallel.hpp>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <tuple>

namespace dfgnn {

namespace {
std::atomic<unsigned> preprocessing{0};  // set_preprocessing_threads; 0: the default
std::atomic<unsigned (*)()> host_concurrency{nullptr};  // detail::set_host_concurrency_source
}  // namespace

void set_preprocessing_threads(unsigned threads) { preprocessing = threads; }

void detail::set_host_concurrency_source(unsigned (*source)()) { host_concurrency = source; }

unsigned preprocessing_threads() {
  if (const unsigned set = preprocessing.load()) return set;
  if (unsigned (*const source)() = host_concurrency.load())
    if (const unsigned n = source()) return n;
  return std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
}

using detail::parallel_ranges;

namespace {

void check_node_count(node_t n) {
  if (n < 0) throw Error("graph: negative node count " + std::to_string(n));
}

void check_id(node_t id, node_t n, const char* what, std::size_t edge) {
  if (id < 0 || id >= n)
    throw Error(std::string("graph: ") + what + " id " + std::to_string(id) + " of edge " +
                std::to_string(edge) + " is outside [0, " + std::to_string(n) + ")");
}

// Fills dst[] (the COO rows) from row_ptr.
void fill_rows(HostGraph& g) {
  g.dst.resize(g.src.size());
  parallel_ranges(g.num_nodes, g.num_edges(), [&](node_t lo, node_t hi) {
    for (node_t v = lo; v < hi; ++v) std::fill(g.dst.begin() + g.row_ptr[v], g.dst.begin() + g.row_ptr[v + 1], v);
  });
}

}  // namespace

DegreeStats degree_stats(const std::vector<edge_t>& row_ptr, edge_t threshold) {
  DegreeStats s;
  s.threshold = threshold;
  const std::size_t n = row_ptr.empty() ? 0 : row_ptr.size() - 1;
  for (std::size_t v = 0; v < n; ++v) {
    const edge_t d = row_ptr[v + 1] - row_ptr[v];
    s.max = std::max(s.max, d);
    s.above_threshold += d > threshold;
    s.empty_rows += d == 0;
  }
  s.mean = n ? double(row_ptr[n]) / double(n) : 0.0;
  return s;
}

HostGraph graph_from_edges(node_t num_nodes, const std::vector<node_t>& src,
                           const std::vector<node_t>& dst) {
  return graph_from_edges(num_nodes, num_nodes, src, dst);
}

HostGraph graph_from_edges(node_t num_src_nodes, node_t num_nodes, const std::vector<node_t>& src,
                           const std::vector<node_t>& dst) {
  check_node_count(num_src_nodes);
  check_node_count(num_nodes);
  if (src.size() != dst.size())
    throw Error("graph: " + std::to_string(src.size()) + " source ids but " +
                std::to_string(dst.size()) + " destination ids");
  const std::size_t m = src.size();
  for (std::size_t i = 0; i < m; ++i) {
    check_id(src[i], num_src_nodes, "source", i);
    check_id(dst[i], num_nodes, "destination", i);
  }
  // Offsets and the sort's cursors [N+1] each, src, dst and edge_id [E]: a huge id or node
  // count would otherwise zero-fill gigabytes until the OOM killer ends it.
  check_host_bytes("graph: " + std::to_string(num_nodes) + " nodes and " + std::to_string(m) + " edges",
                   2 * (std::uint64_t(num_nodes) + 1) * sizeof(edge_t) + std::uint64_t(m) * (2 * sizeof(node_t) + sizeof(edge_t)));
  HostGraph g;
  g.num_nodes = num_nodes;
  g.num_src_nodes = num_src_nodes;
  g.row_ptr.assign(std::size_t(num_nodes) + 1, 0);
  for (node_t v : dst) ++g.row_ptr[std::size_t(v) + 1];
  for (node_t v = 0; v < num_nodes; ++v) g.row_ptr[v + 1] += g.row_ptr[v];
  // Stable counting sort by destination: each row keeps the caller's edge order.
  std::vector<edge_t> next(g.row_ptr.begin(), g.row_ptr.end() - 1);
  g.src.resize(m);
  g.edge_id.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    const edge_t pos = next[dst[i]]++;
    g.src[pos] = src[i];
    g.edge_id[pos] = edge_t(i);
  }
  fill_rows(g);
  g.stats = degree_stats(g.row_ptr);
  return g;
}

HostGraph graph_from_csr(node_t num_nodes, std::vector<edge_t> row_ptr, std::vector<node_t> src) {
  return graph_from_csr(num_nodes, num_nodes, std::move(row_ptr), std::move(src));
}

HostGraph graph_from_csr(node_t num_src_nodes, node_t num_nodes, std::vector<edge_t> row_ptr,
                         std::vector<node_t> src) {
  check_node_count(num_src_nodes);
  check_node_count(num_nodes);
  if (row_ptr.size() != std::size_t(num_nodes) + 1)
    throw Error("graph: row offsets have " + std::to_string(row_ptr.size()) +
                " entries, expected num_nodes + 1 = " + std::to_string(num_nodes + 1));
  if (row_ptr.front() != 0) throw Error("graph: row offsets must start at 0");
  for (node_t v = 0; v < num_nodes; ++v)
    if (row_ptr[v + 1] < row_ptr[v])
      throw Error("graph: row offsets decrease at row " + std::to_string(v));
  if (row_ptr.back() != edge_t(src.size()))
    throw Error("graph: row offsets end at " + std::to_string(row_ptr.back()) + " but there are " +
                std::to_string(src.size()) + " edges");
  for (std::size_t e = 0; e < src.size(); ++e) check_id(src[e], num_src_nodes, "source", e);
  HostGraph g;
  g.num_nodes = num_nodes;
  g.num_src_nodes = num_src_nodes;
  g.row_ptr = std::move(row_ptr);
  g.src = std::move(src);
  g.edge_id.resize(g.src.size());
  for (std::size_t e = 0; e < g.edge_id.size(); ++e) g.edge_id[e] = edge_t(e);
  fill_rows(g);
  g.stats = degree_stats(g.row_ptr);
  return g;
}

void detail::check_row_offsets(const HostGraph& g) {
  check_node_count(g.num_nodes);
  if (g.row_ptr.size() != std::size_t(g.num_nodes) + 1 || g.row_ptr.front() != 0)
    throw Error("graph: row offsets must have num_nodes + 1 entries starting at 0");
  for (node_t v = 0; v < g.num_nodes; ++v)
    if (g.row_ptr[v + 1] < g.row_ptr[v]) throw Error("graph: row offsets decrease at row " + std::to_string(v));
}

void validate(const HostGraph& g) {
  detail::check_row_offsets(g);
  check_node_count(g.num_src_nodes);
  const node_t n = g.num_nodes;
  const std::size_t m = g.src.size();
  if (g.dst.size() != m || g.edge_id.size() != m)
    throw Error("graph: " + std::to_string(m) + " sources but " + std::to_string(g.dst.size()) + " destinations and " +
                std::to_string(g.edge_id.size()) + " edge ids");
  if (g.row_ptr.back() != edge_t(m))
    throw Error("graph: row offsets end at " + std::to_string(g.row_ptr.back()) + " but there are " +
                std::to_string(m) + " edges");
  std::vector<bool> seen(m);
  for (node_t v = 0; v < n; ++v) {
    for (edge_t e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
      check_id(g.src[e], g.num_src_nodes, "source", std::size_t(e));
      if (g.dst[e] != v)
        throw Error("graph: edge " + std::to_string(e) + " is in row " + std::to_string(v) + " but its destination is " +
                    std::to_string(g.dst[e]));
      const edge_t id = g.edge_id[e];
      if (id < 0 || id >= edge_t(m) || seen[std::size_t(id)])
        throw Error("graph: edge ids are not a permutation of [0, E) (edge " + std::to_string(e) + ")");
      seen[std::size_t(id)] = true;
    }
  }
  const DegreeStats s = degree_stats(g.row_ptr, g.stats.threshold);
  if (s.max != g.stats.max || s.mean != g.stats.mean || s.above_threshold != g.stats.above_threshold ||
      s.empty_rows != g.stats.empty_rows)
    throw Error("graph: its degree statistics do not match the row offsets (degree_stats recomputes them)");
  if (g.graph_ptr.empty()) return;
  if (g.bipartite()) throw Error("graph: graph offsets (a batch) need a square graph, not a bipartite one");
  if (g.graph_ptr.front() != 0 || g.graph_ptr.back() != n || !std::is_sorted(g.graph_ptr.begin(), g.graph_ptr.end()))
    throw Error("graph: graph offsets must run from 0 to num_nodes without decreasing");
  // Block-diagonal: every edge's ends lie in the same graph, i.e. row v's sources in [start, end).
  for (std::size_t i = 0; i + 1 < g.graph_ptr.size(); ++i)
    for (edge_t e = g.row_ptr[g.graph_ptr[i]]; e < g.row_ptr[g.graph_ptr[i + 1]]; ++e)
      if (g.src[e] < g.graph_ptr[i] || g.src[e] >= g.graph_ptr[i + 1])
        throw Error("graph: edge " + std::to_string(e) + " joins graph " + std::to_string(i) + " of the batch to another");
}

HostGraph batch_graphs(const std::vector<HostGraph>& graphs) {
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    validate(graphs[i]);
    if (graphs[i].bipartite()) throw Error("graph: graph " + std::to_string(i) + " of the batch is bipartite");
  }
  HostGraph b;
  std::int64_t nodes = 0;
  for (const HostGraph& g : graphs) nodes += g.num_nodes;
  if (nodes > std::int64_t(INT32_MAX))
    throw Error("graph: the batch has " + std::to_string(nodes) + " nodes, more than 2^31 - 1");
  b.num_nodes = b.num_src_nodes = node_t(nodes);
  b.graph_ptr.reserve(graphs.size() + 1);
  b.graph_ptr.push_back(0);
  node_t node0 = 0;
  edge_t edge0 = 0;
  for (const HostGraph& g : graphs) {
    for (node_t v = 0; v < g.num_nodes; ++v) b.row_ptr.push_back(edge0 + g.row_ptr[v + 1]);
    for (node_t u : g.src) b.src.push_back(node0 + u);
    for (node_t v : g.dst) b.dst.push_back(node0 + v);
    for (edge_t e : g.edge_id) b.edge_id.push_back(edge0 + e);
    node0 += g.num_nodes;
    edge0 += g.num_edges();
    b.graph_ptr.push_back(node0);
  }
  b.stats = degree_stats(b.row_ptr);
  return b;
}

void symmetrize(std::vector<node_t>& src, std::vector<node_t>& dst) {
  if (src.size() != dst.size())
    throw Error("graph: " + std::to_string(src.size()) + " source ids but " + std::to_string(dst.size()) +
                " destination ids");
  std::vector<std::pair<node_t, node_t>> pairs;
  pairs.reserve(2 * src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    pairs.emplace_back(src[i], dst[i]);
    pairs.emplace_back(dst[i], src[i]);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  src.resize(pairs.size());
  dst.resize(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) std::tie(src[i], dst[i]) = pairs[i];
}

std::vector<node_t> independent_blocks(const HostGraph& g) {
  validate(g);
  if (g.bipartite()) return {0, g.num_nodes};
  // reach[i]: the highest node id joined to some node <= i by an edge; a block ends at i when
  // nothing at or below i reaches past it.
  std::vector<node_t> reach(std::size_t(g.num_nodes));
  for (node_t v = 0; v < g.num_nodes; ++v) reach[v] = v;
  parallel_ranges(g.num_nodes, g.num_edges(), [&](node_t first, node_t last) {  // threads own ranges of reach
    for (edge_t e = 0; e < g.num_edges(); ++e) {
      const node_t lo = std::min(g.src[e], g.dst[e]), hi = std::max(g.src[e], g.dst[e]);
      if (lo >= first && lo < last) reach[lo] = std::max(reach[lo], hi);
    }
  });
  std::vector<node_t> bounds{0};
  node_t far = -1;
  for (node_t v = 0; v < g.num_nodes; ++v) {
    far = std::max(far, reach[v]);
    if (far == v) bounds.push_back(v + 1);
  }
  return bounds;
}

HostCsc transpose(const HostGraph& g) {
  validate(g);
  return detail::transpose_of_valid(g);
}

RowSubgraph row_subgraph(const HostGraph& g, const std::vector<node_t>& rows) {
  validate(g);
  RowSubgraph r;
  const bool square = !g.bipartite();
  std::vector<node_t> local(std::size_t(g.num_src_nodes), -1);  // g's source -> its source, or -1
  std::vector<char> taken(std::size_t(g.num_nodes), 0);
  for (const node_t v : rows) {
    if (v < 0 || v >= g.num_nodes)
      throw Error("row_subgraph: row " + std::to_string(v) + " out of range [0, " + std::to_string(g.num_nodes) + ")");
    if (taken[std::size_t(v)]++) throw Error("row_subgraph: row " + std::to_string(v) + " given twice");
    if (square) local[std::size_t(v)] = node_t(r.sources.size()), r.sources.push_back(v);
  }
  r.rows = rows;
  std::vector<node_t> src, dst;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (edge_t e = g.row_ptr[std::size_t(rows[i])]; e < g.row_ptr[std::size_t(rows[i]) + 1]; ++e) {
      node_t& u = local[std::size_t(g.src[std::size_t(e)])];
      if (u < 0) u = node_t(r.sources.size()), r.sources.push_back(g.src[std::size_t(e)]);
      src.push_back(u);
      dst.push_back(node_t(i));
      r.edges.push_back(g.edge_id[std::size_t(e)]);
    }
  const node_t ns = node_t(r.sources.size());
  r.graph = square ? graph_from_edges(ns, src, dst) : graph_from_edges(ns, node_t(rows.size()), src, dst);
  return r;
}

namespace detail {

HostCsc transpose_of_valid(const HostGraph& g) {
  HostCsc t;
  const edge_t m = g.num_edges();
  const node_t ns = g.num_src_nodes;
  t.col_ptr.assign(std::size_t(ns) + 1, 0);
  // Each thread owns a range of columns (parallel_ranges): the serial loop's result.
  parallel_ranges(ns, m, [&](node_t lo, node_t hi) {
    for (const node_t u : g.src)
      if (u >= lo && u < hi) ++t.col_ptr[std::size_t(u) + 1];
  });
  for (node_t u = 0; u < ns; ++u) t.col_ptr[u + 1] += t.col_ptr[u];
  t.dst.resize(m);
  t.csr_edge.resize(m);
  // By rows, not g.dst: the CUDA plan transposes the arrays it keeps on the device, row_ptr and src.
  parallel_ranges(ns, m, [&](node_t lo, node_t hi) {
    std::vector<edge_t> next(t.col_ptr.begin() + lo, t.col_ptr.begin() + hi);
    for (node_t v = 0; v < g.num_nodes; ++v)
      for (edge_t e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
        const node_t u = g.src[e];
        if (u < lo || u >= hi) continue;
        const edge_t pos = next[u - lo]++;
        t.dst[pos] = v;
        t.csr_edge[pos] = e;
      }
  });
  return t;
}

bool edges_in_csr_order(const HostGraph& g) {
  for (std::size_t e = 0; e < g.edge_id.size(); ++e)
    if (g.edge_id[e] != edge_t(e)) return false;
  return true;
}

}  // namespace detail

}  // namespace dfgnn
