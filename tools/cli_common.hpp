#pragma once
// Command-line plumbing of the dfgnn tool's subcommands: `--key value` options and `--flag`s,
// the graph options (--graph, --nodes, --symmetrize), reproducible random tensors.

#include <dfgnn/csr.hpp>
#include <dfgnn/generate.hpp>
#include <dfgnn/io.hpp>
#ifdef DFGNN_ENABLE_CUDA
#include <dfgnn/cuda.hpp>
#endif

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace dfgnn::cli {

/// Bound of --warmup and --iters: their sum stays far from int's range and a run ends.
constexpr long long kMaxIters = 1000000;

struct Args {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;

  bool has(const std::string& k) const { return values.count(k) != 0; }
  std::string get(const std::string& k, const std::string& fallback = "") const {
    auto it = values.find(k);
    return it == values.end() ? fallback : it->second;
  }
  std::string need(const std::string& k) const {
    if (!has(k)) throw Error("missing --" + k);
    return get(k);
  }
  /// The value of --k (fallback when absent), an integer in [lo, hi]: by default the range of
  /// int, so that no caller's narrowing wraps a huge value around.
  long long integer(const std::string& k, long long fallback, long long lo = std::numeric_limits<int>::min(),
                    long long hi = std::numeric_limits<int>::max()) const {
    if (!has(k)) return fallback;
    const std::string s = get(k);
    std::size_t used = 0;
    long long v = 0;
    bool in_range = true;
    try {
      v = std::stoll(s, &used);
    } catch (const std::out_of_range&) {
      in_range = false, used = s.size();
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
      throw Error("--" + k + ": '" + s + "' is not an integer");
    if (!in_range || v < lo || v > hi)
      throw Error("--" + k + ": " + s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  /// --seed: any 64-bit integer (default 1).
  std::uint64_t seed() const {
    return std::uint64_t(
        integer("seed", 1, std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max()));
  }
  /// The value of --k (fallback when absent), one finite number.
  float real(const std::string& k, float fallback) const {
    if (!has(k)) return fallback;
    const std::vector<float> v = io::parse_float_list(get(k), "--" + k);
    if (v.size() != 1) throw Error("--" + k + ": expected one number, got " + std::to_string(v.size()));
    return v[0];
  }
};

/// argv[first..] as options (each takes a value) and flags; anything else is an Error.
inline Args parse_args(int argc, char** argv, int first, const std::set<std::string>& options,
                       const std::set<std::string>& flags) {
  Args a;
  for (int i = first; i < argc; ++i) {
    const std::string tok = argv[i];
    if (tok.rfind("--", 0) != 0) throw Error("unexpected argument '" + tok + "'");
    const std::string key = tok.substr(2);
    if (a.flags.count(key) || a.values.count(key)) throw Error(tok + " given twice");
    if (flags.count(key)) {
      a.flags.insert(key);
    } else if (options.count(key)) {
      if (i + 1 >= argc) throw Error(tok + " needs a value");
      a.values[key] = argv[++i];
    } else {
      throw Error("unknown option " + tok);
    }
  }
  return a;
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
    if (a.flags.count("symmetrize")) throw Error("--symmetrize does not apply to a generated graph (it is symmetric)");
    return generated_graph(a.get("graph"));
  }
  if (!a.has("src-nodes")) {
    io::EdgeList edges = io::read_graph(a.need("graph"), a.integer("nodes", -1, 0));
    if (a.flags.count("symmetrize")) symmetrize(edges.src, edges.dst);
    return graph_from_edges(edges.num_nodes, edges.src, edges.dst);
  }
  // Bipartite: sources below --src-nodes, destinations below --nodes (default: the largest + 1).
  if (a.flags.count("symmetrize")) throw Error("--symmetrize needs one node set; it cannot be combined with --src-nodes");
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
