#pragma once
// What the tool's commands share: the graph options (--graph, --nodes, --symmetrize,
// --src-nodes), --backend, JSON strings, reproducible random tensors.

#include <dfgnn/csr.hpp>
#include <dfgnn/generate.hpp>
#include <dfgnn/io.hpp>

#include "options.hpp"
#ifdef DFGNN_ENABLE_CUDA
#include <dfgnn/cuda.hpp>
#endif

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace dfgnn::cli {

/// The graph's options, which load_graph reads (all but --src-nodes: bipartite_section).
inline const Section& graph_section() {
  static const Section s{
      "graph",
      {{"graph", "FILE",
        "an edge list or Matrix Market file, or rmat:SCALE:EDGE_FACTOR[:SEED]:\n"
        "the graph of `dfgnn gen rmat` with those options, generated in process"},
       {"nodes", "N", "the node count (default: max id + 1, or the `# nodes N` line of a file\nfrom dfgnn gen)"},
       {"symmetrize", "", "add reverse edges and drop duplicates"}},
      "Edge lists: `u v` (u -> v, 0-based; '#'/'%' comments; whitespace or commas; an optional\n"
      "header line `src,dst`; at most a weight and a time column after u v, ignored). Matrix\n"
      "Market .mtx: row = destination, col = source, 1-based. .gz is read transparently."};
  return s;
}

/// "gt k v, gat el v, ...": the source-side inputs (their options) of each model that reads a
/// bipartite graph, i.e. that has a destination-side input (AGNN's one x is both sides).
inline std::string source_inputs_text() {
  std::string r;
  for (const ScoreKind kind : kModels) {
    const ModelArgs m = visit_model(kind, [](auto model) { return decltype(model)::args; });
    std::string sources;
    bool bipartite = false;
    for (int i = 0; i < m.count; ++i) {
      const Extent e = m.inputs[i].extent;
      if (source_rows(e)) sources += " " + lower(m.inputs[i].name);
      bipartite |= e == Extent::DstFeatures || e == Extent::DstScalars;
    }
    if (bipartite) r += (r.empty() ? "" : ", ") + std::string(to_string(kind)) + sources;
  }
  return r;
}

/// --src-nodes: a bipartite graph (attention, info, bench).
inline const Section& bipartite_section() {
  static const Section s{"bipartite graphs",
                         {{"src-nodes", "NS",
                           "sources u < NS, destinations v < N (--nodes; default max destination\n"
                           "+ 1); source-side inputs (" + source_inputs_text() + ") then have NS rows,\n"
                           "the others and out N"}},
                         ""};
  return s;
}

/// The graph of --graph (--nodes, --symmetrize).
/// --graph rmat:SCALE:EDGE_FACTOR[:SEED] (seed 1 by default): the graph `dfgnn gen rmat` writes
/// with those options, generated in process, so that a graph of billions of edges needs no
/// file; its edges in that file's order.
inline HostGraph generated_graph(const std::string& spec) {
  std::vector<long long> v;
  for (std::size_t at = 5; at <= spec.size();) {  // past "rmat:"
    const std::size_t end = std::min(spec.find(':', at), spec.size());
    const std::string field = spec.substr(at, end - at);
    long long x = 0;
    const auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), x);
    if (field.empty() || ec != std::errc() || p != field.data() + field.size())
      throw Error("--graph " + spec + ": '" + field + "' is not an integer (expected rmat:SCALE:EDGE_FACTOR[:SEED])");
    v.push_back(x);
    at = end + 1;
  }
  if (v.size() < 2 || v.size() > 3)
    throw Error("--graph " + spec + ": expected rmat:SCALE:EDGE_FACTOR[:SEED]");
  for (std::size_t i = 0; i < 2; ++i)
    if (v[i] < 1 || v[i] > std::numeric_limits<int>::max())
      throw Error("--graph " + spec + ": " + (i == 0 ? "SCALE" : "EDGE_FACTOR") + " out of range");
  return gen::rmat(int(v[0]), int(v[1]), 0.57, 0.19, 0.19, std::uint64_t(v.size() == 3 ? v[2] : 1));
}

inline HostGraph load_graph(const Args& a) {
  if (a.need("graph").rfind("rmat:", 0) == 0) {
    for (const char* o : {"nodes", "src-nodes"})
      if (a.has(o)) throw Error(std::string("--") + o + " does not apply to a generated graph (--graph rmat:...)");
    if (a.flag("symmetrize")) throw Error("--symmetrize does not apply to a generated graph (it is symmetric)");
    return generated_graph(a.get("graph"));
  }
  if (!a.has("src-nodes")) {
    io::EdgeList edges = io::read_graph(a.need("graph"), a.integer("nodes", -1, 0));
    if (a.flag("symmetrize")) symmetrize(edges.src, edges.dst);
    return graph_from_edges(edges.num_nodes, edges.src, edges.dst);
  }
  // Bipartite: sources below --src-nodes, destinations below --nodes (default: the largest + 1).
  if (a.flag("symmetrize")) throw Error("--symmetrize needs one node set; it cannot be combined with --src-nodes");
  const io::EdgeList edges = io::read_graph(a.need("graph"));
  const long long ns = a.integer("src-nodes", 0, 0);
  const long long nd =
      a.has("nodes") ? a.integer("nodes", 0, 0)
                     : (edges.dst.empty() ? 0 : *std::max_element(edges.dst.begin(), edges.dst.end()) + 1LL);
  return graph_from_edges(node_t(ns), node_t(nd), edges.src, edges.dst);
}

/// `s` as the body of a JSON string: quotes, backslashes and control characters escaped.
inline std::string json_escaped(const std::string& s) {
  std::string r;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\', r += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char u[7];
      std::snprintf(u, sizeof u, "\\u%04x", c);
      r += u;
    } else {
      r += c;
    }
  }
  return r;
}

/// n values uniform in [-1, 1) from `seed`.
inline std::vector<float> random_tensor(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Why the CUDA-native kernels cannot run here (empty: they can): they need a build with
/// DFGNN_ENABLE_CUDA and a visible GPU.
inline std::string native_unavailable() {
#ifdef DFGNN_ENABLE_CUDA
  return cuda::device_available() ? "" : "needs a visible CUDA device";
#else
  return "needs dfgnn built with DFGNN_ENABLE_CUDA";
#endif
}

/// --backend auto|kokkos|cuda, resolved by the library's one rule (resolve_backend).
inline Backend backend_option(const Args& a) {
  return resolve_backend("--backend", parse_backend(a.get("backend", "auto")), native_unavailable());
}

/// A resolved backend's name in the CLI's output.
inline const char* backend_name(Backend b) { return b == Backend::Native ? "cuda" : "kokkos"; }

}  // namespace dfgnn::cli
