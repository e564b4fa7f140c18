#include <dfgnn/reorder.hpp>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <utility>

namespace dfgnn {

const char* to_string(Ordering o) {
  switch (o) {
    case Ordering::None: return "none";
    case Ordering::RCM: return "rcm";
    case Ordering::Degree: return "degree";
  }
  return "?";
}

Ordering parse_ordering(const std::string& text) {
  const std::string s = lower(text);
  for (Ordering o : {Ordering::None, Ordering::RCM, Ordering::Degree})
    if (s == to_string(o)) return o;
  throw Error("unknown ordering '" + text + "' (expected none, rcm or degree)");
}

namespace {

/// The undirected neighbours of every node (both directions, no self loops, no duplicates),
/// each list sorted by (degree, id): the order Cuthill-McKee visits them in.
struct Undirected {
  std::vector<edge_t> ptr;
  std::vector<node_t> adj;

  explicit Undirected(const HostGraph& g) : ptr(std::size_t(g.num_nodes) + 1, 0) {
    const std::size_t N = std::size_t(g.num_nodes);
    std::vector<edge_t> raw_ptr(N + 1, 0);
    for (edge_t e = 0; e < g.num_edges(); ++e)
      if (g.src[e] != g.dst[e]) ++raw_ptr[std::size_t(g.src[e]) + 1], ++raw_ptr[std::size_t(g.dst[e]) + 1];
    std::partial_sum(raw_ptr.begin(), raw_ptr.end(), raw_ptr.begin());
    std::vector<node_t> raw(std::size_t(raw_ptr.back()));
    std::vector<edge_t> next(raw_ptr.begin(), raw_ptr.end() - 1);
    for (edge_t e = 0; e < g.num_edges(); ++e)
      if (g.src[e] != g.dst[e]) raw[next[g.src[e]]++] = g.dst[e], raw[next[g.dst[e]]++] = g.src[e];
    adj.reserve(raw.size());
    for (std::size_t v = 0; v < N; ++v) {
      const auto first = raw.begin() + raw_ptr[v], last = raw.begin() + raw_ptr[v + 1];
      std::sort(first, last);
      adj.insert(adj.end(), first, std::unique(first, last));
      ptr[v + 1] = edge_t(adj.size());
    }
    for (std::size_t v = 0; v < N; ++v)
      std::sort(adj.begin() + ptr[v], adj.begin() + ptr[v + 1],
                [&](node_t a, node_t b) { return std::make_pair(degree(a), a) < std::make_pair(degree(b), b); });
  }
  edge_t degree(node_t v) const { return ptr[v + 1] - ptr[v]; }
};

std::vector<node_t> rcm_of_valid(const HostGraph& g) {
  const Undirected a(g);
  const std::size_t N = std::size_t(g.num_nodes);
  std::vector<node_t> order;
  order.reserve(N);
  std::vector<char> placed(N, 0);
  std::vector<int> level(N, -1);  // BFS depth of the probe in progress, reset after each probe
  std::vector<node_t> seen;
  // Breadth-first from `root` over the nodes not yet placed; returns its depth and leaves the
  // visited nodes, level by level, in `seen`.
  auto probe = [&](node_t root) {
    seen.assign(1, root);
    level[root] = 0;
    for (std::size_t i = 0; i < seen.size(); ++i)
      for (edge_t k = a.ptr[seen[i]]; k < a.ptr[seen[i] + 1]; ++k) {
        const node_t w = a.adj[k];
        if (level[w] < 0 && !placed[w]) level[w] = level[seen[i]] + 1, seen.push_back(w);
      }
    return level[seen.back()];
  };
  auto forget = [&] {
    for (node_t w : seen) level[w] = -1;
  };
  for (node_t s = 0; s < g.num_nodes; ++s) {
    if (placed[s]) continue;
    // George-Liu: from the deepest level's least-connected node while that deepens the BFS.
    node_t root = s;
    int depth = probe(root);
    for (;;) {
      node_t next = seen.back();
      for (auto it = seen.rbegin(); it != seen.rend() && level[*it] == depth; ++it)
        if (a.degree(*it) < a.degree(next) || (a.degree(*it) == a.degree(next) && *it < next)) next = *it;
      forget();
      const int deeper = probe(next);
      if (deeper <= depth) {
        forget();
        break;
      }
      root = next, depth = deeper;
    }
    // Cuthill-McKee from the root: the neighbour lists are already in (degree, id) order.
    const std::size_t first = order.size();
    order.push_back(root);
    placed[root] = 1;
    for (std::size_t i = first; i < order.size(); ++i)
      for (edge_t k = a.ptr[order[i]]; k < a.ptr[order[i] + 1]; ++k)
        if (!placed[a.adj[k]]) placed[a.adj[k]] = 1, order.push_back(a.adj[k]);
  }
  std::reverse(order.begin(), order.end());
  return order;
}

std::vector<node_t> degree_of_valid(const HostGraph& g) {
  std::vector<node_t> order(std::size_t(g.num_nodes));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](node_t a, node_t b) {
    return g.row_ptr[a + 1] - g.row_ptr[a] > g.row_ptr[b + 1] - g.row_ptr[b];
  });
  return order;
}

Reordered permute_valid(const HostGraph& g, std::vector<node_t> order) {
  const std::size_t N = std::size_t(g.num_nodes);
  if (order.size() != N)
    throw Error("reorder: the order has " + std::to_string(order.size()) + " entries, expected N = " +
                std::to_string(N));
  Reordered r;
  r.position.assign(N, -1);
  for (std::size_t i = 0; i < N; ++i) {
    const node_t v = order[i];
    if (v < 0 || std::size_t(v) >= N || r.position[v] >= 0)
      throw Error("reorder: entry " + std::to_string(i) + " (" + std::to_string(v) + ") of the order is " +
                  (v < 0 || std::size_t(v) >= N ? "outside [0, N)" : "repeated"));
    r.position[v] = node_t(i);
  }
  HostGraph& p = r.graph;
  p.num_nodes = p.num_src_nodes = g.num_nodes;
  p.row_ptr.assign(N + 1, 0);
  p.src.reserve(g.src.size());
  p.dst.reserve(g.src.size());
  p.edge_id.reserve(g.src.size());
  for (std::size_t i = 0; i < N; ++i) {
    const node_t v = order[i];
    for (edge_t e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
      p.src.push_back(r.position[g.src[e]]);
      p.dst.push_back(node_t(i));
      p.edge_id.push_back(g.edge_id[e]);
    }
    p.row_ptr[i + 1] = edge_t(p.src.size());
  }
  p.stats = degree_stats(p.row_ptr, g.stats.threshold);
  r.order = std::move(order);
  return r;
}

}  // namespace

// Each entry validates g once; the helpers above trust it. One numbering serves both ends of
// an edge, so a bipartite graph has none to reorder.
namespace {
void validate_square(const HostGraph& g) {
  validate(g);
  if (g.bipartite()) throw Error("reorder: the graph is bipartite; reordering needs one node set");
}
}  // namespace

std::vector<node_t> rcm_order(const HostGraph& g) {
  validate_square(g);
  return rcm_of_valid(g);
}

std::vector<node_t> degree_order(const HostGraph& g) {
  validate_square(g);
  return degree_of_valid(g);
}

Reordered permute(const HostGraph& g, std::vector<node_t> order) {
  validate_square(g);
  return permute_valid(g, std::move(order));
}

Reordered reorder(const HostGraph& g, Ordering o) {
  validate_square(g);
  switch (o) {
    case Ordering::RCM: return permute_valid(g, rcm_of_valid(g));
    case Ordering::Degree: return permute_valid(g, degree_of_valid(g));
    case Ordering::None: break;
    default: throw Error("reorder: ordering " + std::to_string(int(o)) + " is none of the enum's values");
  }
  std::vector<node_t> identity(std::size_t(g.num_nodes));
  std::iota(identity.begin(), identity.end(), 0);
  return permute_valid(g, std::move(identity));
}

}  // namespace dfgnn
