// libFuzzer target: read_graph on a file named as an edge list (gzip and Matrix Market are
// still found by content). Invariants: fuzz.hpp's check_graph_file.

#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dfgnn::fuzz::TempFile file("edges.txt");
  dfgnn::fuzz::check_graph_file(file, data, size);
  return 0;
}
