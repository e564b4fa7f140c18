#pragma once
/// \file generate.hpp
/// Synthetic benchmark graphs (anchors.md): R-MAT power-law graphs, PATTERN-/CLUSTER-like
/// stochastic-block-model batches and MNIST-like k-NN batches, plus a plain edge-list writer.
///
/// Every generator is a pure function of its arguments: randomness comes from a
/// counter-based generator (splitmix64 over (seed, stream, counter)) and never from the std::
/// distributions, whose outputs differ between standard libraries, so a seed names the same
/// graph on every platform and for any thread count.

#include <dfgnn/csr.hpp>

#include <cstdint>
#include <string>

namespace dfgnn::gen {

/// R-MAT graph over 2^scale nodes: edge_factor * 2^scale / 2 node pairs are drawn with
/// quadrant probabilities a, b, c, d = 1 - a - b - c and stored in both directions (so
/// edge_factor is the mean directed degree before deduplication), node ids are scrambled by a
/// random permutation (as Graph500 does, so hubs are not clustered at low ids), and duplicates
/// and self loops are removed. rmat(17, 64) gives ~7.05M edges, max degree ~23K; rmat(20, 32)
/// ~31.4M, max degree ~64K (anchors.md's rmat-s17-d64, rmat-s20-d32); rmat(25, 72) ~2.3G
/// (beyond 2^31 edges; about 16 bytes per edge of host memory). Throws Error for scale outside
/// [1, 30], edge_factor < 1, a graph beyond the host memory this process may use, or
/// probabilities that are negative or sum above 1.
HostGraph rmat(int scale, int edge_factor, double a = 0.57, double b = 0.19, double c = 0.19,
               std::uint64_t seed = 1);

enum class SbmKind {
  Pattern,  ///< 5 communities (p=0.5, q=0.35) plus a planted pattern (p=0.5, link 0.5)
  Cluster,  ///< 6 communities, p=0.55, q=0.25
};

/// A batch of `graphs` stochastic-block-model graphs with the Benchmarking-GNNs parameters
/// (shared/data/README.md): community sizes uniform in [5, 34], undirected edges stored in both
/// directions, no self loops, node order shuffled inside each graph. For Pattern the planted
/// pattern's size and internal edges are redrawn every 100 graphs, as in the original recipe.
/// graph_ptr holds the per-graph node offsets. Throws Error for graphs < 1.
HostGraph sbm_batch(SbmKind kind, int graphs, std::uint64_t seed = 1);

/// A batch of `graphs` MNIST-superpixel-like graphs: 40..75 uniform random points in the unit
/// square each; affinity A_ij = exp(-(d_ij/sigma_i)^2) with sigma_i the mean distance to node
/// i's 8 nearest neighbours, symmetrised as (A + A^T)/2; every node receives edges from its k
/// highest-affinity neighbours (edge neighbour -> node, so in-degree k). Graphs of at most k+1
/// nodes are fully connected without self loops. Throws Error for graphs < 1 or k < 1.
HostGraph knn_batch(int graphs, int k = 8, std::uint64_t seed = 1);

/// Parses "pattern" / "cluster" (case-insensitive); throws Error otherwise.
SbmKind parse_sbm_kind(const std::string& s);

/// Writes g as a text edge list, one `u v` line per edge (u -> v, CSR order), readable by
/// dfgnn::io::read_graph. The header holds `# nodes N` and `# edges E` (readers that cannot
/// see comments must be told N, e.g. the CLI's `--nodes N`, since trailing isolated nodes
/// would otherwise be lost), `# graph_ptr o0 o1 ...` for batched graphs, and each line of
/// `comment` (e.g. the generator and its parameters) prefixed with "# ". A path ending in
/// ".gz" is written gzip-compressed. Throws Error when g is not valid (validate), is bipartite,
/// or the file cannot be written.
void write_edge_list(const std::string& path, const HostGraph& g, const std::string& comment = "");

}  // namespace dfgnn::gen
