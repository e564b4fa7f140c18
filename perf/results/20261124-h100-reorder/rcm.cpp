// throwaway: renumber a graph file (RCM or degree) and write it as an edge list
#include <dfgnn/io.hpp>
#include <dfgnn/csr.hpp>
#include <dfgnn/reorder.hpp>
#include <dfgnn/generate.hpp>
#include <cstdlib>
#include <iostream>
int main(int argc, char** argv) {
  if (argc < 6) { std::cerr << "in nodes(-1) symm(0/1) order out\n"; return 2; }
  auto e = dfgnn::io::read_graph(argv[1], std::atoll(argv[2]));
  if (std::atoi(argv[3])) dfgnn::symmetrize(e.src, e.dst);
  auto g = dfgnn::graph_from_edges(e.num_nodes, e.src, e.dst);
  auto r = dfgnn::reorder(g, dfgnn::parse_ordering(argv[4]));
  dfgnn::gen::write_edge_list(argv[5], r.graph, "");
  return 0;
}
