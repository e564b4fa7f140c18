// dfgnn command-line tool: fused attention on graph files, generalized message passing, graph
// info, generators, benchmarks; one file per command (commands.hpp).
// User errors (bad options, files, shapes) exit with code 2 and one line on stderr.

#include "commands.hpp"
#include "distributed_run.hpp"
#include "platform.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace dfgnn::cli {

const std::vector<const Command*>& commands() {
  static const std::vector<const Command*> all{&attention_command(), &spmm_command(),      &sddmm_command(),
                                               &info_command(),      &gen_rmat_command(),  &gen_sbm_command(),
                                               &gen_knn_command(),   &gen_suite_command(), &bench_command(),
                                               &study_command()};
  return all;
}

namespace {

// The command named `name` ("gen rmat"), or null.
const Command* command(const std::string& name) {
  for (const Command* c : commands())
    if (c->name == name) return c;
  return nullptr;
}

// "a, b or c": the words after `prefix` in the commands' names (each once), for messages.
std::string choices(const std::string& prefix) {
  std::vector<std::string> words;
  for (const Command* c : commands()) {
    if (c->name.rfind(prefix, 0) != 0) continue;
    const std::string rest = c->name.substr(prefix.size());
    const std::string word = rest.substr(0, rest.find(' '));
    if (std::find(words.begin(), words.end(), word) == words.end()) words.push_back(word);
  }
  std::string r;
  for (std::size_t i = 0; i < words.size(); ++i) r += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return r;
}

// argv's command and its options: `gen` takes its generator's word too.
int run(int argc, char** argv) {
  const std::string cmd = argv[1];
  if (ranks() > 1 && cmd != "attention") throw Error("only `dfgnn attention` runs on several ranks");
  if (cmd == "gen") {
    if (argc < 3) throw Error("gen needs a generator: " + choices("gen "));
    const Command* c = command("gen " + std::string(argv[2]));
    if (!c) throw Error("unknown generator '" + std::string(argv[2]) + "' (expected " + choices("gen ") + ")");
    return c->run(parse(*c, argc, argv, 3));
  }
  const Command* c = command(cmd);
  if (!c) throw Error("unknown command '" + cmd + "' (expected " + choices("") + "; see dfgnn --help)");
  return c->run(parse(*c, argc, argv, 2));
}

}  // namespace

}  // namespace dfgnn::cli

int main(int argc, char** argv) {
  using namespace dfgnn;
  const std::string cmd = argc > 1 ? argv[1] : "";
  const bool help = std::any_of(argv + 1, argv + argc, [](const char* s) {
    return std::strcmp(s, "--help") == 0 || std::strcmp(s, "-h") == 0;
  });
  if (cmd == "--version" || cmd == "version") {
    std::puts(cli::version_line().c_str());
    return 0;
  }
  if (cmd.empty() || help || cmd == "help") {
    std::fputs(cli::usage(cmd == "help" ? "" : cmd).c_str(), cmd.empty() ? stderr : stdout);
    return cmd.empty() ? 2 : 0;
  }
  // Kokkos gets no arguments: its own options (--threads, --help, ...) would bypass dfgnn's
  // checks. Its environment variables (KOKKOS_NUM_THREADS, ...) still apply.
  cli::Ranks ranks(argc, argv);
  int kokkos_argc = 1;
  Kokkos::ScopeGuard kokkos(kokkos_argc, argv);  // its host concurrency: preprocessing's threads too
  // Under mpirun every rank reads the same options and files, so an error before the ranks'
  // collectives is every rank's: rank 0 reports it. One after may be one rank's alone, while the
  // others wait in a collective: that rank reports it and ends them all.
  const auto fail = [](int code, const char* what, const char* text) {
    if (cli::rank() == 0 || cli::collectives_begun()) std::fprintf(stderr, "dfgnn: %s: %s\n", what, text);
    if (cli::collectives_begun()) cli::abort_ranks(code);
    return code;
  };
  try {
    return cli::run(argc, argv);
  } catch (const Error& e) {
    return fail(2, "error", e.what());
  } catch (const std::bad_alloc&) {
    return fail(1, "error", "out of host memory (the graph or tensors are too large for this machine)");
  } catch (const std::exception& e) {
    return fail(1, "failure", e.what());
  }
}
