// libFuzzer target: graph_from_edges and transpose. The input is a node count and then edges
// (source, destination), each a signed byte: ids near the count, negative ones and ones out of
// range all come up, and no run is spent on the rows of a huge count. Invariants: refused
// exactly when the count is negative or an id out of range; otherwise validate passes, every
// CSR edge is the given edge it names, each row keeps the given order, and the CSC holds the
// same edges by source.

#include "fuzz.hpp"

#include <vector>

using namespace dfgnn;
using fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const auto id = [&](std::size_t k) { return node_t(std::int8_t(data[k])); };
  const node_t n = id(0);
  std::vector<node_t> src, dst;
  for (std::size_t k = 1; k + 2 <= size; k += 2) src.push_back(id(k)), dst.push_back(id(k + 1));
  bool valid = n >= 0;
  for (std::size_t i = 0; i < src.size(); ++i) valid &= src[i] >= 0 && src[i] < n && dst[i] >= 0 && dst[i] < n;
  HostGraph g;
  try {
    g = graph_from_edges(n, src, dst);
  } catch (const Error& e) {
    check(!valid, std::string("refused a valid edge list: ") + e.what());
    fuzz::check_message(e, "graph: ");
    return 0;
  }
  check(valid, "accepted a negative node count or an id out of range");
  validate(g);  // an Error here is a crash too
  check(g.num_nodes == n && g.num_edges() == edge_t(src.size()), "the CSR has another size");
  for (node_t v = 0; v < n; ++v)
    for (edge_t p = g.row_ptr[v]; p < g.row_ptr[v + 1]; ++p) {
      const edge_t e = g.edge_id[p];
      check(g.src[p] == src[e] && dst[e] == v, "CSR edge " + std::to_string(p) + " is not edge " + std::to_string(e));
      check(p == g.row_ptr[v] || g.edge_id[p - 1] < e, "row " + std::to_string(v) + " lost the given order");
    }
  const HostCsc c = transpose(g);
  check(c.col_ptr.size() == std::size_t(n) + 1 && c.col_ptr.back() == g.num_edges(), "the CSC has another size");
  for (node_t u = 0; u < n; ++u)
    for (edge_t q = c.col_ptr[u]; q < c.col_ptr[u + 1]; ++q)
      check(g.src[c.csr_edge[q]] == u && g.dst[c.csr_edge[q]] == c.dst[q], "CSC edge " + std::to_string(q) + " is not its CSR edge");
  return 0;
}
