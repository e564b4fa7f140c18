#pragma once
// Shared by the libFuzzer targets (docs/reliability.md): the input as a file for the readers,
// which take paths, and the checks that turn a broken invariant into a crash libFuzzer records.

#include <dfgnn/csr.hpp>
#include <dfgnn/io.hpp>
#include <dfgnn/types.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace dfgnn::fuzz {

/// Aborts, a crash libFuzzer saves the input of, unless ok.
inline void check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz: invariant broken: %s\n", what.c_str());
  std::abort();
}

/// A file of this process, in /dev/shm where there is one; removed at exit.
struct TempFile {
  explicit TempFile(const std::string& name)
      : path(std::string(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : P_tmpdir) + "/dfgnn_fuzz_" +
             std::to_string(getpid()) + "_" + name) {}
  ~TempFile() { std::remove(path.c_str()); }
  const std::string path;
};

/// Writes the input to `file` and returns its path.
inline const std::string& write(const TempFile& file, const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(file.path.c_str(), "wb");
  check(f != nullptr, "cannot create " + file.path);
  check(std::fwrite(data, 1, size, f) == size && std::fclose(f) == 0, "cannot write " + file.path);
  return file.path;
}

/// A message: one line of printable text (UTF-8 allowed) that starts with `prefix`.
inline void check_line(const std::string& m, const std::string& prefix) {
  check(!m.empty(), "an empty message");
  check(m.rfind(prefix, 0) == 0, "the message does not start with '" + prefix + "': " + m);
  for (const unsigned char c : m) check(c >= 0x20 && c != 0x7F, "the message is not one printable line: " + m);
}

/// An Error's message: the same.
inline void check_message(const Error& e, const std::string& prefix) { check_line(e.what(), prefix); }

/// read_graph on the input as `file`: ids in [0, num_nodes), as many sources, destinations and
/// values, the node count it reports accepted back with the same edges, and the CSR of them.
inline void check_graph_file(const TempFile& file, const std::uint8_t* data, std::size_t size) {
  const std::string& path = write(file, data, size);
  io::EdgeList g;
  try {
    g = io::read_graph(path);
  } catch (const Error& e) {
    check_message(e, path + ":");
    return;
  }
  check(g.src.size() == g.dst.size(), "sources and destinations differ in count");
  check(g.values.empty() || g.values.size() == g.src.size(), "values and edges differ in count");
  check(g.num_nodes >= 0, "negative node count");
  for (std::size_t i = 0; i < g.src.size(); ++i)
    check(g.src[i] >= 0 && g.src[i] < g.num_nodes && g.dst[i] >= 0 && g.dst[i] < g.num_nodes,
          "edge " + std::to_string(i) + " has an id outside [0, " + std::to_string(g.num_nodes) + ")");
  const io::EdgeList again = io::read_graph(path, g.num_nodes);  // an Error here is a crash too
  check(again.src == g.src && again.dst == g.dst && again.values == g.values && again.num_nodes == g.num_nodes,
        "read with its own node count, the file gives another graph");
  if (g.num_nodes > (1 << 20)) return;  // ids up to 2^31 - 2 are fine, but their offsets not in libFuzzer's memory
  const HostGraph csr = graph_from_edges(g.num_nodes, g.src, g.dst);
  check(csr.num_edges() == edge_t(g.src.size()), "the CSR lost or gained edges");
}

}  // namespace dfgnn::fuzz
