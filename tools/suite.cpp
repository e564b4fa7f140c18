// The study's graphs by name (suite.hpp).

#include "suite.hpp"

#include <dfgnn/generate.hpp>
#include <dfgnn/io.hpp>

#include <functional>
#include <vector>

namespace dfgnn::cli {

namespace {

struct SuiteGraph {
  const char* name;
  const char* file;  // under the data folder; null: generated
  node_t nodes;      // a real graph's node count (isolated nodes count)
  std::function<HostGraph()> generate;
};

const std::vector<SuiteGraph>& suite_graphs() {
  using gen::SbmKind;
  static const std::vector<SuiteGraph> all{
      {"cora", "cora/planetoid_edges.tsv.gz", 2708, {}},
      {"citeseer", "citeseer/planetoid_edges.tsv.gz", 3327, {}},
      {"pubmed", "pubmed/planetoid_edges.tsv.gz", 19717, {}},
      {"tolokers", "tolokers/tolokers_edges.tsv.gz", 11758, {}},
      {"web-NotreDame", "web-NotreDame/web-NotreDame.txt.gz", 325729, {}},
      {"pattern", nullptr, 0, [] { return gen::sbm_batch(SbmKind::Pattern, 1024); }},
      {"cluster", nullptr, 0, [] { return gen::sbm_batch(SbmKind::Cluster, 1024); }},
      {"mnist", nullptr, 0, [] { return gen::knn_batch(1024, 8); }},
      {"rmat-s17-d64", nullptr, 0, [] { return gen::rmat(17, 64); }},
      {"rmat-s20-d32", nullptr, 0, [] { return gen::rmat(20, 32); }},
      {"pattern-2", nullptr, 0, [] { return gen::sbm_batch(SbmKind::Pattern, 2); }},
      {"mnist-16", nullptr, 0, [] { return gen::knn_batch(16, 8); }},
      {"rmat-s9-d8", nullptr, 0, [] { return gen::rmat(9, 8); }}};
  return all;
}

const SuiteGraph& find(const std::string& name) {
  for (const SuiteGraph& g : suite_graphs())
    if (g.name == name) return g;
  std::string names;
  for (const SuiteGraph& g : suite_graphs()) names += (names.empty() ? "" : ", ") + std::string(g.name);
  throw Error("unknown graph '" + name + "' (expected " + names + ")");
}

}  // namespace

bool suite_needs_data(const std::string& name) { return find(name).file != nullptr; }

void check_suite_graph(const std::string& option, const std::string& name, bool have_data) {
  bool real = false;
  try {
    real = suite_needs_data(name);
  } catch (const Error& e) {
    throw Error(option + ": " + e.what());
  }
  if (real && !have_data) throw Error(option + " " + name + ": a real graph needs --data DIR");
}

HostGraph suite_graph(const std::string& option, const std::string& name, const std::string& data) {
  check_suite_graph(option, name, !data.empty());
  const SuiteGraph& s = find(name);
  if (!s.file) return s.generate();
  io::EdgeList edges = io::read_graph(data + "/" + s.file, s.nodes);
  symmetrize(edges.src, edges.dst);
  return graph_from_edges(edges.num_nodes, edges.src, edges.dst);
}

}  // namespace dfgnn::cli
