// libFuzzer target: read_graph on a file named .mtx, so that any content goes to the Matrix
// Market parser (or gunzipped first). Invariants: fuzz.hpp's check_graph_file.

#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dfgnn::fuzz::TempFile file("graph.mtx");
  dfgnn::fuzz::check_graph_file(file, data, size);
  return 0;
}
