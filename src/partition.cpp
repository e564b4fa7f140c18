// Partitions of a square graph's nodes over ranks and each rank's share (partition.hpp).
#include <dfgnn/partition.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>

namespace dfgnn {

namespace {

void check_square(const HostGraph& g, int ranks, const char* who) {
  if (ranks < 1) throw Error(std::string(who) + ": ranks must be at least 1, got " + std::to_string(ranks));
  if (g.bipartite())
    throw Error(std::string(who) + ": the graph is bipartite (" + std::to_string(g.num_src_nodes) + " sources, " +
                std::to_string(g.num_nodes) + " destinations); a partition splits the nodes of a square graph");
}

}  // namespace

Partition partition_by_edges(const HostGraph& g, int ranks) {
  check_square(g, ranks, "partition_by_edges");
  // Weight each node by its in-edges plus one, so that edgeless stretches split too.
  const edge_t N = g.num_nodes, total = g.num_edges() + N;
  Partition p{ranks, std::vector<int>(std::size_t(N))};
  int r = 0;
  for (node_t v = 0; v < g.num_nodes; ++v) {
    // Rank r + 1 starts at the first row whose weight before reaches (r + 1) total / ranks.
    while (r + 1 < ranks && (g.row_ptr[std::size_t(v)] + v) * ranks >= edge_t(r + 1) * total) ++r;
    p.owner[std::size_t(v)] = r;
  }
  return p;
}

Partition partition_from(node_t num_nodes, int ranks, std::vector<int> owner) {
  if (ranks < 1) throw Error("partition_from: ranks must be at least 1, got " + std::to_string(ranks));
  if (owner.size() != std::size_t(num_nodes))
    throw Error("partition_from: the partition vector has " + std::to_string(owner.size()) +
                " entries, expected one per node (" + std::to_string(num_nodes) + ")");
  for (std::size_t v = 0; v < owner.size(); ++v)
    if (owner[v] < 0 || owner[v] >= ranks)
      throw Error("partition_from: node " + std::to_string(v) + " has rank " + std::to_string(owner[v]) +
                  ", outside [0, " + std::to_string(ranks) + ")");
  return {ranks, std::move(owner)};
}

Partition partition_from(const HostGraph& g, int ranks, std::vector<int> owner) {
  check_square(g, ranks, "partition_from");
  return partition_from(g.num_nodes, ranks, std::move(owner));
}

std::uint64_t fingerprint(const HostGraph& g, const Partition& p) {
  std::uint64_t h = 1469598103934665603ull;
  const auto mix = [&](const void* data, std::size_t bytes) {
    for (std::size_t k = 0; k < bytes; ++k) h = (h ^ static_cast<const unsigned char*>(data)[k]) * 1099511628211ull;
  };
  const std::int64_t sizes[3] = {g.num_src_nodes, g.num_nodes, p.ranks};
  mix(sizes, sizeof sizes);
  mix(g.row_ptr.data(), g.row_ptr.size() * sizeof(edge_t));
  mix(g.src.data(), g.src.size() * sizeof(node_t));
  mix(g.edge_id.data(), g.edge_id.size() * sizeof(edge_t));
  mix(p.owner.data(), p.owner.size() * sizeof(int));
  return h;
}

RankGraph rank_graph_from_edges(const Partition& p, int rank, const std::vector<node_t>& src,
                                const std::vector<node_t>& dst, std::vector<edge_t> edge_ids) {
  const std::string who = "rank_graph_from_edges: ";
  if (rank < 0 || rank >= p.ranks)
    throw Error(who + "rank " + std::to_string(rank) + " outside [0, " + std::to_string(p.ranks) + ")");
  if (src.size() != dst.size() || edge_ids.size() != src.size())
    throw Error(who + std::to_string(src.size()) + " sources, " + std::to_string(dst.size()) + " destinations and " +
                std::to_string(edge_ids.size()) + " edge ids");
  const node_t N = node_t(p.owner.size());
  const auto owner = [&](node_t v) { return p.owner[std::size_t(v)]; };
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0 || src[i] >= N || dst[i] < 0 || dst[i] >= N)
      throw Error(who + "edge " + std::to_string(i) + " (" + std::to_string(src[i]) + " -> " + std::to_string(dst[i]) +
                  ") has a node id outside [0, " + std::to_string(N) + ")");
    if (owner(dst[i]) != rank)
      throw Error(who + "edge " + std::to_string(i) + " goes into node " + std::to_string(dst[i]) + ", a row of rank " +
                  std::to_string(owner(dst[i])));
    if (edge_ids[i] < 0) throw Error(who + "edge " + std::to_string(i) + " has a negative edge id");
  }
  RankGraph r;
  r.rank = rank, r.ranks = p.ranks;
  for (node_t v = 0; v < N; ++v)
    if (owner(v) == rank) r.rows.push_back(v);
  // Each node's local source index: own rows first, then the halo by (owner, id).
  std::vector<node_t> local(std::size_t(N), -1);
  for (node_t i = 0; i < r.num_rows(); ++i) local[std::size_t(r.rows[std::size_t(i)])] = i;
  for (node_t u : src)
    if (owner(u) != rank) r.halo.push_back(u);
  std::sort(r.halo.begin(), r.halo.end(),
            [&](node_t a, node_t b) { return owner(a) != owner(b) ? owner(a) < owner(b) : a < b; });
  r.halo.erase(std::unique(r.halo.begin(), r.halo.end()), r.halo.end());
  for (node_t i = 0; i < r.num_halo(); ++i) local[std::size_t(r.halo[std::size_t(i)])] = r.num_rows() + i;
  r.recv_ptr.assign(std::size_t(p.ranks) + 1, 0);
  for (node_t u : r.halo) ++r.recv_ptr[std::size_t(owner(u)) + 1];
  for (int q = 0; q < p.ranks; ++q) r.recv_ptr[std::size_t(q) + 1] += r.recv_ptr[std::size_t(q)];
  // The local graph: the edges in their given order (each row keeps it), renumbered.
  std::vector<node_t> s(src.size()), d(dst.size());
  for (std::size_t i = 0; i < src.size(); ++i) s[i] = local[std::size_t(src[i])], d[i] = local[std::size_t(dst[i])];
  r.graph = graph_from_edges(r.num_rows() + r.num_halo(), r.num_rows(), s, d);
  r.edge_ids = std::move(edge_ids);
  return r;
}

SourceSplit split_by_source(const RankGraph& r) {
  const std::size_t E = r.graph.src.size();
  std::vector<node_t> s(E), d(E);  // by local edge
  for (std::size_t k = 0; k < E; ++k) {
    const std::size_t i = std::size_t(r.graph.edge_id[k]);
    s[i] = r.graph.src[k], d[i] = r.graph.dst[k];
  }
  SourceSplit split;
  std::vector<node_t> inner_src, inner_dst, outer_src, outer_dst;
  for (std::size_t i = 0; i < E; ++i) {
    const bool own = s[i] < r.num_rows();
    (own ? split.inner.edges : split.outer.edges).push_back(edge_t(i));
    (own ? inner_src : outer_src).push_back(own ? s[i] : s[i] - r.num_rows());
    (own ? inner_dst : outer_dst).push_back(d[i]);
  }
  split.inner.graph = graph_from_edges(r.num_rows(), r.num_rows(), inner_src, inner_dst);
  split.outer.graph = graph_from_edges(r.num_halo(), r.num_rows(), outer_src, outer_dst);
  return split;
}

void set_sends(RankGraph& r, const std::vector<node_t>& counts, const std::vector<node_t>& ids) {
  if (counts.size() != std::size_t(r.ranks))
    throw Error("set_sends: " + std::to_string(counts.size()) + " counts for " + std::to_string(r.ranks) + " ranks");
  // The counts come from the peers: summed in 64 bits, as the positions past node_t's range
  // (the transports' 32-bit counts and offsets of one exchange) would wrap.
  for (std::size_t q = 0; q < counts.size(); ++q)
    if (counts[q] < 0)
      throw Error("set_sends: rank " + std::to_string(r.rank) + " would send " + std::to_string(counts[q]) +
                  " rows to rank " + std::to_string(q));
  const std::int64_t total = std::accumulate(counts.begin(), counts.end(), std::int64_t(0));
  if (total > std::numeric_limits<node_t>::max())
    throw Error("set_sends: rank " + std::to_string(r.rank) + " would send " + std::to_string(total) +
                " rows in all, more than the " + std::to_string(std::numeric_limits<node_t>::max()) +
                " one exchange moves");
  r.send_ptr.assign(1, 0);
  for (node_t c : counts) r.send_ptr.push_back(r.send_ptr.back() + c);
  if (std::size_t(r.send_ptr.back()) != ids.size())
    throw Error("set_sends: the counts add up to " + std::to_string(r.send_ptr.back()) + " rows, " +
                std::to_string(ids.size()) + " ids given");
  r.send_rows.resize(ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const auto at = std::lower_bound(r.rows.begin(), r.rows.end(), ids[k]);
    if (at == r.rows.end() || *at != ids[k])
      throw Error("set_sends: node " + std::to_string(ids[k]) + " is not a row of rank " + std::to_string(r.rank));
    r.send_rows[k] = node_t(at - r.rows.begin());
  }
}

RankGraph rank_graph(const HostGraph& g, const Partition& p, int rank) {
  if (rank < 0 || rank >= p.ranks)
    throw Error("rank_graph: rank " + std::to_string(rank) + " outside [0, " + std::to_string(p.ranks) + ")");
  if (g.bipartite() || p.owner.size() != std::size_t(g.num_nodes))
    throw Error("rank_graph: the partition has " + std::to_string(p.owner.size()) + " nodes, the graph " +
                std::to_string(g.num_nodes) + (g.bipartite() ? " destinations (bipartite)" : ""));
  const auto owner = [&](node_t v) { return p.owner[std::size_t(v)]; };
  // The rank's rows' in-edges in the whole graph's CSR order, and each edge's caller index.
  std::vector<node_t> src, dst;
  std::vector<edge_t> ids;
  for (node_t v = 0; v < g.num_nodes; ++v) {
    if (owner(v) != rank) continue;
    for (edge_t e = g.row_ptr[std::size_t(v)]; e < g.row_ptr[std::size_t(v) + 1]; ++e)
      src.push_back(g.src[std::size_t(e)]), dst.push_back(v), ids.push_back(g.edge_id[std::size_t(e)]);
  }
  RankGraph r = rank_graph_from_edges(p, rank, src, dst, std::move(ids));
  // What each other rank's rows read of this rank's: its halo's part from here, by id.
  std::vector<std::vector<node_t>> wanted(std::size_t(p.ranks));
  for (node_t v = 0; v < g.num_nodes; ++v) {
    if (owner(v) == rank) continue;
    for (edge_t e = g.row_ptr[std::size_t(v)]; e < g.row_ptr[std::size_t(v) + 1]; ++e)
      if (owner(g.src[std::size_t(e)]) == rank) wanted[std::size_t(owner(v))].push_back(g.src[std::size_t(e)]);
  }
  std::vector<node_t> counts, requested;
  for (auto& w : wanted) {
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
    counts.push_back(node_t(w.size()));
    requested.insert(requested.end(), w.begin(), w.end());
  }
  set_sends(r, counts, requested);
  return r;
}

}  // namespace dfgnn
