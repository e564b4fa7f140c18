// `dfgnn info`: a graph file's sizes and degree statistics, and the strategy Auto picks for it.

#include "cli_common.hpp"
#include "commands.hpp"

#include <dfgnn/plan.hpp>

#include <cstdio>

namespace dfgnn::cli {

namespace {

int info(const Args& a) {
  if (a.flag("models")) {  // --model's values, for scripts (tools/run-cora.sh)
    for (const ScoreKind kind : kModels) std::printf("%s\n", to_string(kind));
    return 0;
  }
  const HostGraph g = load_graph(a);
  const DegreeStats& s = g.stats;
  if (g.bipartite()) std::printf("source nodes %d\n", g.num_src_nodes);
  std::printf("nodes %d\nedges %lld\nin-degree max %lld mean %.2f\nempty rows %d\nrows above %lld: %d\n",
              g.num_nodes, (long long)g.num_edges(), (long long)s.max, s.mean, s.empty_rows,
              (long long)s.threshold, s.above_threshold);
  const ScoreKind kind = parse_score_kind(a.get("model", "gt"));
  const long long H = a.integer("heads", 1), D = a.integer("dim", 64);
  if (H < 1 || D < 1) throw Error("--heads and --dim must be >= 1");
  using Exec = Kokkos::DefaultExecutionSpace;
  const Plan<Exec> plan(Exec(), Graph<Exec::memory_space>(g), kind, int(H), int(D));
  std::printf("auto plan (%s, H=%lld, D=%lld, kokkos %s): %s\n", to_string(kind), H, D, Exec::name(),
              to_string(plan.strategy()));
  return 0;
}

}  // namespace

const Command& info_command() {
  static const Section own{"info (the plan Auto makes on the portable kernels)",
                           {{"model", "M", model_names("|") + " (default gt)"},
                            {"heads", "H", "heads (default 1)"},
                            {"dim", "D", "features per head (default 64)"},
                            {"models", "", "print --model's values, one a line, and nothing else"}},
                           ""};
  static const Command c{"info", "--graph FILE [--nodes N] [--src-nodes NS] [--symmetrize] [--model M --heads H --dim D] | --models",
                         {&graph_section(), &bipartite_section(), &own}, info};
  return c;
}

}  // namespace dfgnn::cli
