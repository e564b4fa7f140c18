#pragma once
/// \file reorder.hpp
/// Graph reordering, an optional preprocessing step: renumber the nodes so that the kernels'
/// memory accesses are more local (reverse Cuthill-McKee: neighbours get nearby ids, so the
/// source rows a warp gathers share cache lines and L2 sets) or better balanced (degree order:
/// the heaviest rows first, rows of similar length side by side). The permutation is kept, so
/// inputs go into the new order and results come back into the caller's.
///
/// \code
///   const dfgnn::Reordered r = dfgnn::reorder(host_graph, dfgnn::Ordering::RCM);
///   x_new = dfgnn::gather_rows(x, r.order);          // [N, ...] node tensors, caller -> new
///   ... run any kernel on r.graph with x_new ...
///   out = dfgnn::gather_rows(out_new, r.position);  // new -> caller's order
/// \endcode
/// Edge tensors need no permutation: r.graph's edge_id still maps each edge to the caller's
/// edge index. On the device, permute_nodes (message_passing.hpp) does what gather_rows does.

#include <dfgnn/csr.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace dfgnn {

enum class Ordering {
  None,    ///< the caller's order
  RCM,     ///< reverse Cuthill-McKee on the symmetrised graph
  Degree,  ///< by decreasing in-degree, ties in the caller's order
};

const char* to_string(Ordering o);
/// Parses "none|rcm|degree" (case-insensitive); throws Error otherwise.
Ordering parse_ordering(const std::string& s);

/// Reverse Cuthill-McKee order of the graph with every edge taken in both directions (self
/// loops and duplicates ignored): order[i] is the node that gets id i. Each connected component
/// is walked breadth-first from a pseudo-peripheral node (George-Liu: repeatedly restart from a
/// least-connected node of the last BFS level while the depth grows), visiting the unvisited
/// neighbours of each node by increasing degree (ties by id); components come in the order of
/// their lowest node id; the whole sequence is then reversed. Deterministic; O(E log E).
std::vector<node_t> rcm_order(const HostGraph& g);

/// Nodes by decreasing in-degree, equal degrees in id order.
std::vector<node_t> degree_order(const HostGraph& g);

/// A renumbered graph and its permutation.
struct Reordered {
  HostGraph graph;
  std::vector<node_t> order;     ///< new id -> caller's id (node i of graph is node order[i])
  std::vector<node_t> position;  ///< caller's id -> new id (the inverse of order)
};

/// The graph with node order[i] renamed i. Each row keeps its edges in their order, so sums run
/// in the same order as on the input; edge_id still maps to the caller's edge index. Batch
/// offsets (graph_ptr) are dropped: the graphs of a batch may be interleaved. Throws Error
/// unless order is a permutation of [0, N).
Reordered permute(const HostGraph& g, std::vector<node_t> order);

/// permute(g, rcm_order(g)), permute(g, degree_order(g)), or the identity for None.
Reordered reorder(const HostGraph& g, Ordering o);

/// Row i of the result is row index[i] of x, whose rows are x.size() / index.size() values
/// (x empty when index is). Moves node tensors (features, g-SpMM's max/min arguments) between
/// orders: index = order (to the new order) or position (back). Throws Error when x.size() is
/// not a multiple of index.size() or an index is outside [0, index.size()).
template <class T>
std::vector<T> gather_rows(const std::vector<T>& x, const std::vector<node_t>& index) {
  if (index.empty() ? !x.empty() : x.size() % index.size() != 0)
    throw Error("gather_rows: " + std::to_string(x.size()) + " values are not rows for " +
                std::to_string(index.size()) + " nodes");
  const std::size_t width = index.empty() ? 0 : x.size() / index.size();
  std::vector<T> out(x.size());
  for (std::size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || std::size_t(index[i]) >= index.size())
      throw Error("gather_rows: index " + std::to_string(i) + " (" + std::to_string(index[i]) + ") is outside [0, " +
                  std::to_string(index.size()) + ")");
    std::copy_n(x.begin() + std::ptrdiff_t(std::size_t(index[i]) * width), width,
                out.begin() + std::ptrdiff_t(i * width));
  }
  return out;
}

}  // namespace dfgnn
