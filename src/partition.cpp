// Partitions of a square graph's nodes over ranks and each rank's share (partition.hpp).
#include <dfgnn/partition.hpp>

#include <algorithm>
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

Partition partition_from(const HostGraph& g, int ranks, std::vector<int> owner) {
  check_square(g, ranks, "partition_from");
  if (owner.size() != std::size_t(g.num_nodes))
    throw Error("partition_from: the partition vector has " + std::to_string(owner.size()) +
                " entries, expected one per node (" + std::to_string(g.num_nodes) + ")");
  for (std::size_t v = 0; v < owner.size(); ++v)
    if (owner[v] < 0 || owner[v] >= ranks)
      throw Error("partition_from: node " + std::to_string(v) + " has rank " + std::to_string(owner[v]) +
                  ", outside [0, " + std::to_string(ranks) + ")");
  return {ranks, std::move(owner)};
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

RankGraph rank_graph(const HostGraph& g, const Partition& p, int rank) {
  if (rank < 0 || rank >= p.ranks)
    throw Error("rank_graph: rank " + std::to_string(rank) + " outside [0, " + std::to_string(p.ranks) + ")");
  if (g.bipartite() || p.owner.size() != std::size_t(g.num_nodes))
    throw Error("rank_graph: the partition has " + std::to_string(p.owner.size()) + " nodes, the graph " +
                std::to_string(g.num_nodes) + (g.bipartite() ? " destinations (bipartite)" : ""));
  const auto owner = [&](node_t v) { return p.owner[std::size_t(v)]; };
  RankGraph r;
  r.rank = rank, r.ranks = p.ranks;
  // Each node's local source index: own rows first, then the halo.
  std::vector<node_t> local(std::size_t(g.num_nodes), -1);
  for (node_t v = 0; v < g.num_nodes; ++v)
    if (owner(v) == rank) local[std::size_t(v)] = r.num_rows(), r.rows.push_back(v);
  for (node_t v : r.rows)
    for (edge_t e = g.row_ptr[std::size_t(v)]; e < g.row_ptr[std::size_t(v) + 1]; ++e)
      if (owner(g.src[std::size_t(e)]) != rank) r.halo.push_back(g.src[std::size_t(e)]);
  std::sort(r.halo.begin(), r.halo.end(),
            [&](node_t a, node_t b) { return owner(a) != owner(b) ? owner(a) < owner(b) : a < b; });
  r.halo.erase(std::unique(r.halo.begin(), r.halo.end()), r.halo.end());
  for (node_t i = 0; i < r.num_halo(); ++i) local[std::size_t(r.halo[std::size_t(i)])] = r.num_rows() + i;

  std::vector<edge_t> row_ptr{0};
  std::vector<node_t> src;
  for (node_t v : r.rows) {
    for (edge_t e = g.row_ptr[std::size_t(v)]; e < g.row_ptr[std::size_t(v) + 1]; ++e) {
      src.push_back(local[std::size_t(g.src[std::size_t(e)])]);
      r.edge_ids.push_back(g.edge_id[std::size_t(e)]);
    }
    row_ptr.push_back(edge_t(src.size()));
  }
  r.graph = graph_from_csr(r.num_rows() + r.num_halo(), r.num_rows(), std::move(row_ptr), std::move(src));

  r.recv_ptr.assign(std::size_t(p.ranks) + 1, 0);
  for (node_t u : r.halo) ++r.recv_ptr[std::size_t(owner(u)) + 1];
  for (int q = 0; q < p.ranks; ++q) r.recv_ptr[std::size_t(q) + 1] += r.recv_ptr[std::size_t(q)];

  // What each other rank's rows read of this rank's: its halo's part from here, by id.
  std::vector<std::vector<node_t>> wanted(std::size_t(p.ranks));
  for (node_t v = 0; v < g.num_nodes; ++v) {
    if (owner(v) == rank) continue;
    for (edge_t e = g.row_ptr[std::size_t(v)]; e < g.row_ptr[std::size_t(v) + 1]; ++e)
      if (owner(g.src[std::size_t(e)]) == rank) wanted[std::size_t(owner(v))].push_back(g.src[std::size_t(e)]);
  }
  r.send_ptr.assign(1, 0);
  for (auto& w : wanted) {
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
    for (node_t u : w) r.send_rows.push_back(local[std::size_t(u)]);
    r.send_ptr.push_back(node_t(r.send_rows.size()));
  }
  return r;
}

}  // namespace dfgnn
