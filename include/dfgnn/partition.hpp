#pragma once
/// \file partition.hpp
/// Destination-partitioned attention over P ranks (docs/distributed.md): which rank owns each
/// node, and each rank's share of a square graph: its rows with their in-edges, as a bipartite
/// graph over [its own nodes | its halo] (the remote sources its rows read), and the exchange
/// plan that fills the halo (who sends which rows to whom). Built once per graph, reused by
/// every call: a rank's forward is one bipartite call after the halo rows of its source-side
/// tensors (GT k, v; GAT el, v; GATv2 xl) arrive, and its backward sends the halo rows'
/// gradients back to their owners, which add them in rank order. Free of Kokkos and of any
/// transport: the communication engines (MPI, NCCL, torch.distributed) move the rows this plan
/// names.

#include <dfgnn/csr.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace dfgnn {

/// The rank of each node of a square graph.
struct Partition {
  int ranks = 1;
  std::vector<int> owner;  ///< [N] in [0, ranks)
};

/// Contiguous ranges of node ids holding about (E + N) / P in-edges plus nodes each (rank r's
/// range starts at the first row with at least r (E + N) / P of them before it), so each rank's
/// walks read about E / P edges and edgeless stretches split too. Error for ranks < 1 or a
/// bipartite graph.
Partition partition_by_edges(const HostGraph& g, int ranks);

/// A given partition vector (e.g. METIS's): Error naming the problem for ranks < 1, a bipartite
/// graph, a length other than N, or an entry outside [0, ranks).
Partition partition_from(const HostGraph& g, int ranks, std::vector<int> owner);
/// The same for a graph of `num_nodes` nodes that no one holds whole.
Partition partition_from(node_t num_nodes, int ranks, std::vector<int> owner);

/// A 64-bit digest of a graph's structure and a partition of it, by which ranks check that they
/// hold the same ones (FNV-1a over the sizes, the CSR with its
/// edge ids, and the owners).
std::uint64_t fingerprint(const HostGraph& g, const Partition& p);

/// One rank's share of the graph and its part of the exchange plan.
struct RankGraph {
  int rank = 0, ranks = 1;
  std::vector<node_t> rows;  ///< [n] the rank's nodes, ascending: its output rows, and its first n sources
  std::vector<node_t> halo;  ///< [h] remote sources its rows read, by (owner, id): its last h sources
  /// The rows' in-edges, each row's in the whole graph's CSR order: n destinations, n + h sources.
  HostGraph graph;
  /// [graph's E] each local edge's index in the whole graph's edge order (its caller's order):
  /// where the rank's edge values and edge features come from.
  std::vector<edge_t> edge_ids;
  /// Receiving: halo[recv_ptr[p] .. recv_ptr[p + 1]) comes from rank p ([ranks + 1]; none from
  /// itself).
  std::vector<node_t> recv_ptr;
  /// Sending: to rank p, the rows at local positions send_rows[send_ptr[p] .. send_ptr[p + 1]),
  /// in the order p's halo holds them ([ranks + 1]).
  std::vector<node_t> send_ptr, send_rows;

  node_t num_rows() const { return node_t(rows.size()); }
  node_t num_halo() const { return node_t(halo.size()); }
};

/// Rank `rank`'s share of `g` under `p`, from the whole graph's structure. Error for a rank
/// outside [0, p.ranks) or a partition of another graph.
RankGraph rank_graph(const HostGraph& g, const Partition& p, int rank);

/// Rank `rank`'s share from its rows' in-edges alone (edge i: src[i] -> dst[i], edge_ids[i] its
/// index in the whole graph's edge order; the local graph keeps their order within a row): all
/// but the sending half of the exchange plan, which needs what the peers' halos hold
/// (set_sends; DistributedPlan exchanges it). Error naming the first edge into another rank's
/// node, with an id outside the partition's nodes or a negative edge id, or sizes that differ.
RankGraph rank_graph_from_edges(const Partition& p, int rank, const std::vector<node_t>& src,
                                const std::vector<node_t>& dst, std::vector<edge_t> edge_ids);

/// Sets r's sending half: `counts[q]` rows to rank q, `ids` (packed in rank order) the nodes of
/// r's rows each peer's halo holds, in its order. Error naming r's rank for a negative count or
/// counts that add up past the 2^31 - 1 rows one exchange moves, and for an id that is not one
/// of r's rows.
void set_sends(RankGraph& r, const std::vector<node_t>& counts, const std::vector<node_t>& ids);

/// A rank's local graph split by where its edges come from, for calls that overlap the halo
/// exchange (DistributedPlan): `inner`, the edges from its own rows (rows x rows), runs while the
/// halo travels; `outer`, those from the halo (halo x rows, sources numbered from 0 in halo
/// order), after it. Each keeps the local graph's edge order; `edges` holds the positions of its
/// edges in that order (ascending), where its part of the rank's edge tensors comes from.
struct SourceSplit {
  struct Part {
    HostGraph graph;
    std::vector<edge_t> edges;
  };
  Part inner, outer;
};

SourceSplit split_by_source(const RankGraph& r);

/// Rows `ids` of a [*, width] host tensor, in that order: a rank's part of a whole graph's
/// tensor (its rows, or its edges by edge_ids). Error for an id past the tensor's rows.
template <class T, class Index>
std::vector<T> take_rows(const std::vector<T>& x, const std::vector<Index>& ids, std::size_t width) {
  std::vector<T> r(ids.size() * width);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] < 0 || (std::size_t(ids[k]) + 1) * width > x.size())
      throw Error("take_rows: row " + std::to_string(ids[k]) + " is outside a tensor of " +
                  std::to_string(width ? x.size() / width : 0) + " rows");
    std::copy_n(x.begin() + std::ptrdiff_t(std::size_t(ids[k]) * width), width, r.begin() + std::ptrdiff_t(k * width));
  }
  return r;
}

}  // namespace dfgnn
