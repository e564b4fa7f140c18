#pragma once
// Command-line plumbing of the dfgnn tool's subcommands: `--key value` options and `--flag`s,
// the graph options (--graph, --nodes, --symmetrize), reproducible random tensors.

#include <dfgnn/csr.hpp>
#include <dfgnn/io.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace dfgnn::cli {

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
  long long integer(const std::string& k, long long fallback) const {
    if (!has(k)) return fallback;
    const std::string s = get(k);
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.empty()) throw Error("--" + k + ": '" + s + "' is not an integer");
    return v;
  }
  float real(const std::string& k, float fallback) const {
    if (!has(k)) return fallback;
    return io::parse_float_list(get(k), "--" + k).at(0);
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
inline HostGraph load_graph(const Args& a) {
  io::EdgeList edges = io::read_graph(a.need("graph"), a.integer("nodes", -1));
  if (a.flags.count("symmetrize")) symmetrize(edges.src, edges.dst);
  return graph_from_edges(edges.num_nodes, edges.src, edges.dst);
}

/// n values uniform in [-1, 1) from `seed`.
inline std::vector<float> random_tensor(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace dfgnn::cli
