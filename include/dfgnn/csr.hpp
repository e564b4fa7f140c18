#pragma once
/// \file csr.hpp
/// Host-side graph preprocessing: builds the destination-major CSR every kernel reads, the
/// per-edge destination array (COO rows), the permutation back to the caller's edge order,
/// batched (block-diagonal) graphs and the transposed (CSC) structure. No Kokkos here: the
/// CUDA-native path and the CLI share it.

#include <dfgnn/types.hpp>

#include <vector>

namespace dfgnn {

/// Sets the threads of the host preprocessing passes over graphs of 2^22 edges and more
/// (building and transposing CSRs, the generators): `threads`, or 0 for the default, the
/// Kokkos host space's concurrency once Kokkos is initialized in a program that includes
/// dfgnn's Kokkos headers (dfgnn.hpp), else the hardware's threads (at most 16). So MPI ranks
/// that give Kokkos their share of a node's cores give it to preprocessing too; the Python
/// package sets torch's intra-op threads (as for the kernels). The results do not depend on it.
void set_preprocessing_threads(unsigned threads);
/// The threads those passes start.
unsigned preprocessing_threads();

/// A graph of E directed edges u -> v, stored by destination: its N rows are the destinations
/// 0..N-1 and its sources are 0..NS-1. A square graph (NS = N, what graph_from_edges(N, ...)
/// builds) has one node set; a bipartite one (NS != N allowed) has a source set and a
/// destination set, e.g. a sampled block or a rank's local rows over local and halo sources.
/// Edges of row v are row_ptr[v] .. row_ptr[v+1]; within a row they keep the caller's order.
struct HostGraph {
  node_t num_nodes = 0;      ///< N: destinations (rows)
  node_t num_src_nodes = 0;  ///< NS: sources (N for a square graph)
  std::vector<edge_t> row_ptr{0};  ///< [N+1]
  std::vector<node_t> src;         ///< [E] source id per CSR edge
  std::vector<node_t> dst;         ///< [E] destination id per CSR edge (COO rows)
  std::vector<edge_t> edge_id;     ///< [E] CSR position -> index of the edge as given
  std::vector<node_t> graph_ptr;   ///< batched square graphs: node offsets [G+1]; empty otherwise
  DegreeStats stats;

  edge_t num_edges() const { return static_cast<edge_t>(src.size()); }
  /// Sources and destinations differ in number: the inputs of each side have their own rows.
  bool bipartite() const { return num_src_nodes != num_nodes; }
};

/// Transposed structure: edges grouped by source, for gradients gathered at sources.
struct HostCsc {
  std::vector<edge_t> col_ptr{0};  ///< [NS+1]
  std::vector<node_t> dst;         ///< [E] destination per CSC edge
  std::vector<edge_t> csr_edge;    ///< [E] CSC position -> CSR position
};

/// Rows with in-degree above this count as "heavy" in DegreeStats (super-node candidates).
inline constexpr edge_t kDefaultHeavyThreshold = 1024;

/// Builds the CSR from edge arrays (edge i is src[i] -> dst[i]) of a square graph of num_nodes
/// nodes. Throws Error naming the first id out of [0, num_nodes) or a negative node count.
HostGraph graph_from_edges(node_t num_nodes, const std::vector<node_t>& src,
                           const std::vector<node_t>& dst);
/// The same for a bipartite graph: sources in [0, num_src_nodes), destinations in
/// [0, num_dst_nodes) (PyG's size = (num_src_nodes, num_dst_nodes)).
HostGraph graph_from_edges(node_t num_src_nodes, node_t num_dst_nodes, const std::vector<node_t>& src,
                           const std::vector<node_t>& dst);

/// Adopts an existing destination-major CSR (row_ptr [N+1], src [E]) of a square graph. Throws
/// Error unless row_ptr starts at 0, is non-decreasing, ends at E, and every source id is in range.
HostGraph graph_from_csr(node_t num_nodes, std::vector<edge_t> row_ptr, std::vector<node_t> src);
/// The same for a bipartite graph: num_dst_nodes rows, sources in [0, num_src_nodes).
HostGraph graph_from_csr(node_t num_src_nodes, node_t num_dst_nodes, std::vector<edge_t> row_ptr,
                         std::vector<node_t> src);

/// Throws Error unless g is what graph_from_edges / graph_from_csr build: row offsets [N+1]
/// from 0, non-decreasing, ending at E; sources in range; dst[e] the row of e; edge ids a
/// permutation of [0, E); stats those of the row offsets; graph_ptr (if any) only on a square
/// graph, from 0 to N, non-decreasing, with no edge between two graphs. Called by every entry that takes a
/// HostGraph (Graph, the CUDA plans, batch_graphs, transpose, the references, reorder,
/// write_edge_list, ...) but partition_rows, which checks only the row offsets it reads.
void validate(const HostGraph& g);

/// Rows of a graph with all their in-edges, as a graph of their own, and where each part came
/// from: for work on part of a graph (checking sampled rows against the reference; a rank's rows).
struct RowSubgraph {
  HostGraph graph;
  std::vector<node_t> rows;     ///< its destination i is g's row rows[i]
  std::vector<node_t> sources;  ///< its source j is g's source sources[j]
  std::vector<edge_t> edges;    ///< its edge k (as given) is g's edge edges[k] (as given)
};

/// The rows `rows` of g (distinct) with their in-edges. A square g gives a square graph whose
/// nodes are the rows, in order, then the other sources in order of first use (so sources
/// extends rows, and those nodes have no in-edges); a bipartite g gives a bipartite graph of the
/// rows over the sources they use. Rows keep g's edge order, so sums over a row run as in g.
/// Throws Error for a row out of range or given twice.
RowSubgraph row_subgraph(const HostGraph& g, const std::vector<node_t>& rows);

/// Block-diagonal union of square graphs; node ids of graph g are shifted by graph_ptr[g], edge
/// ids by the edges of the graphs before it. A bipartite graph among them is an Error.
HostGraph batch_graphs(const std::vector<HostGraph>& graphs);

/// Adds the reverse of every edge and drops duplicates (self loops kept once).
/// Returns the edge list as (src, dst); the caller's edge order is not preserved. Throws Error
/// when src and dst differ in length.
void symmetrize(std::vector<node_t>& src, std::vector<node_t>& dst);

/// The finest split of the node ids into contiguous ranges that no edge crosses, as node
/// offsets [B+1]: recovers the graphs of a batch that was flattened (e.g. read from a file).
/// A bipartite graph is one block: its two sides share no ids to split by.
std::vector<node_t> independent_blocks(const HostGraph& g);

/// The CSC (by source) of g, with the permutation to CSR edge positions.
HostCsc transpose(const HostGraph& g);

namespace detail {
/// transpose without validate, for a graph the caller has validated (the library's own callers:
/// Graph, the message-passing plan, the CUDA plans where the device lacks the sort's scratch),
/// so that it is not checked again.
HostCsc transpose_of_valid(const HostGraph& g);
/// True when edge_id is the identity: the caller's edges are in CSR order.
bool edges_in_csr_order(const HostGraph& g);
/// The part of validate that code reading only the row offsets needs (partition_rows).
void check_row_offsets(const HostGraph& g);
}  // namespace detail

/// Recomputes g.stats with the given heavy-row threshold.
DegreeStats degree_stats(const std::vector<edge_t>& row_ptr, edge_t threshold = kDefaultHeavyThreshold);

}  // namespace dfgnn
