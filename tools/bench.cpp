// `dfgnn bench`: the forward (and with --backward the training step) of one model timed per
// backend and strategy, with bandwidth against the bytes it must move (bytes.hpp).

#include "bytes.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "inputs.hpp"
#include "reference_check.hpp"
#include "run.hpp"

#include <dfgnn/reference.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "build_info.hpp"

namespace dfgnn::cli {

namespace {

int bench(const Args& options) {
  Args a = options;  // with the files of --inputs
  if (a.has("dropout") && !a.flag("backward")) throw Error("--dropout applies to training: it needs --backward");
  reject_foreign_options(a, parse_score_kind(a.need("model")));
  // DIR/<name>.npy for each input; X and XL fall back to q, XR to k (the harness writes q, k,
  // v, el, er, a once and every model reads what it needs).
  if (a.has("inputs") && !std::filesystem::is_directory(a.get("inputs")))
    throw Error("--inputs " + a.get("inputs") + ": not a directory");
  if (a.has("inputs"))
    for (const auto& [name, file] : std::vector<std::pair<std::string, std::string>>{
             {"q", "q"}, {"k", "k"}, {"v", "v"}, {"el", "el"}, {"er", "er"}, {"a", "a"},
             {"x", "x"}, {"x", "q"}, {"xl", "xl"}, {"xl", "q"}, {"xr", "xr"}, {"xr", "k"}}) {
      const std::string path = a.get("inputs") + "/" + file + ".npy";
      if (!a.has(name) && std::filesystem::exists(path)) a.values[name] = path;
    }
  const Ordering ordering = parse_ordering(a.get("reorder", "none"));
  HostGraph file_graph = load_graph(a);
  const auto t0 = std::chrono::steady_clock::now();
  const Renumbered rn = renumbered(std::move(file_graph), ordering);
  const double reorder_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const HostGraph& g = rn.run();
  const Inputs in = in_order(load_inputs(a, g), rn.re.order);
  const int warmup = int(a.integer("warmup", 5, 0, kMaxIters)), iters = int(a.integer("iters", 20, 1, kMaxIters));
  std::vector<Strategy> strategies;
  const std::string list = a.get("strategy", "all");
  if (list == "all") {
    strategies = {Strategy::Auto,   Strategy::SMMF,   Strategy::PMF,  Strategy::Unfused,
                  Strategy::Online, Strategy::Staged, Strategy::Dense};
  } else {
    for (std::size_t p = 0, q; p <= list.size(); p = q + 1) {
      q = std::min(list.find(',', p), list.size());
      strategies.push_back(parse_strategy(list.substr(p, q - p)));
    }
  }
  std::vector<Backend> backends;  // --backend all: the CUDA-native kernels where they run, then the portable ones
  if (a.get("backend", "all") != "all") {
    backends.push_back(backend_option(a));
  } else {
    if (native_unavailable().empty()) backends.push_back(Backend::Native);
    backends.push_back(Backend::Portable);
  }
  const std::unique_ptr<Device> first = make_device(backends.front());
  const std::string device = first->name();
  const double copy_gbs = first->copy_bandwidth();
  const Traffic bytes = forward_bytes(g, in);
  const std::vector<double> ref = a.flag("check") ? run_reference(g, in) : std::vector<double>{};
  std::FILE* json = a.has("json") ? std::fopen(a.get("json").c_str(), "a") : nullptr;
  if (a.has("json") && !json) throw Error(a.get("json") + ": cannot open for writing");
  std::printf("%s | %s N=%d E=%lld H=%zu D=%zu reorder=%s (%.0f ms on the host) | copy %.0f GB/s\n", device.c_str(),
              to_string(in.kind), g.num_nodes, (long long)g.num_edges(), in.H, in.D, to_string(ordering), reorder_ms,
              copy_gbs);
  std::printf("%-7s %-8s %-8s %10s %10s %12s %12s %10s\n", "backend", "strategy", "resolved", "median ms", "min ms",
              "compulsory", "gather", "max err");
  // The bytes `t` moved in `ms` as fractions of the copy bandwidth (compulsory, gather model).
  const auto fractions = [&](const Traffic& t, double ms) {
    return copy_gbs > 0 ? std::pair{t.compulsory / (ms * 1e6) / copy_gbs, t.gather / (ms * 1e6) / copy_gbs}
                        : std::pair{0.0, 0.0};
  };
  // One printed line and one JSON object per timing.
  auto report = [&](Backend b, Strategy s, Strategy used, const Timing& t, const char* pass,
                    const Traffic& moved, double comp, double gath, double err) {
    char checked[16] = "-";  // without --check
    if (err >= 0) std::snprintf(checked, sizeof checked, "%.2g", err);
    std::printf("%-7s %-8s %-8s %10.4f %10.4f %11.1f%% %11.1f%% %10s  %s\n", backend_name(b), to_string(s),
                to_string(used), t.median_ms, t.min_ms, 100 * comp, 100 * gath, checked, pass);
    if (json)
      std::fprintf(json,
                   "{\"name\": \"%s\", \"device\": \"%s\", \"commit\": \"%s\", \"dirty\": %s, \"model\": \"%s\", \"N\": %d, "
                   "\"E\": %lld, \"H\": %zu, \"D\": %zu, \"reorder\": \"%s\", \"reorder_ms\": %.1f, \"backend\": \"%s\", \"strategy\": \"%s\", "
                   "\"resolved\": \"%s\", \"pass\": \"%s\", \"ms\": %.6f, \"min_ms\": %.6f, "
                   "\"compulsory_bytes\": %.0f, \"gather_bytes\": %.0f, \"copy_gbs\": %.1f, "
                   "\"compulsory_frac\": %.4f, \"gather_frac\": %.4f, \"max_rel_err\": %.3g, \"plan_mib\": %.2f, "
                   "\"dropout\": %g, \"dtype\": \"%s\"}\n",
                   json_escaped(a.get("name", a.get("graph"))).c_str(), json_escaped(device).c_str(),
                   DFGNN_GIT_COMMIT, DFGNN_GIT_DIRTY ? "true" : "false", to_string(in.kind),
                   g.num_nodes, (long long)g.num_edges(), in.H, in.D, to_string(ordering), reorder_ms, backend_name(b), to_string(s),
                   to_string(used), pass,
                   t.median_ms, t.min_ms, moved.compulsory, moved.gather, copy_gbs, comp, gath, err, t.plan_mib,
                   std::strcmp(pass, "fwd") == 0 ? 0.0f : in.dropout.rate,  // inference runs without
                   to_string(in.dtype));
  };
  for (const Backend b : backends)
    for (Strategy s : strategies) {
      Strategy used = s;
      std::vector<float> out;
      Timing t;
      try {
        LocalRun run(g, in, s, b, /*training=*/false);
        used = run.strategy();
        t = run.time(warmup, iters).total;
        out = run.output();
      } catch (const Error& e) {  // a strategy this backend or graph does not support
        std::printf("%-7s %-8s n/a: %s\n", backend_name(b), to_string(s), e.what());
        continue;
      }
      const double err = ref.empty() ? -1.0 : max_relative_error(out.data(), ref);
      const auto [comp, gath] = fractions(bytes, t.median_ms);
      report(b, s, used, t, "fwd", bytes, comp, gath, err);
      if (!ref.empty() && !(err <= output_tolerance(in))) {
        std::fprintf(stderr, "dfgnn: error: %s %s output differs from the reference (%.3g)\n", backend_name(b),
                     to_string(used), err);
        return 1;
      }
    }
  if (a.flag("backward")) {
    const std::vector<float> dout = random_tensor(in.out_size(), 7);
    const auto ref_grads =
        a.flag("check") ? run_reference_backward(g, in, dout) : std::vector<std::vector<double>>{};
    const Traffic bwd = backward_bytes(g, in), both{bytes.compulsory + bwd.compulsory, bytes.gather + bwd.gather};
    for (const Backend b : backends)
      for (Strategy s : strategies) {
        Strategy used = s;
        try {
          LocalRun run(g, in, s, b, /*training=*/true);
          run.set_dout(dout);
          used = run.strategy();
          const Timings t = run.time(warmup, iters);
          // The portable kernels' training is reported as one pass, the CUDA-native ones' also
          // their backward alone, checked: the records perf/ reads.
          if (b == Backend::Portable) {
            report(b, s, used, t.total, "fwd+bwd", both, 0, 0, -1);
            continue;
          }
          const Gradients grads = ref_grads.empty() ? Gradients{} : run.gradients();
          double err = -1;
          for (std::size_t i = 0; i < ref_grads.size(); ++i) {
            const double e = max_relative_error(grads[i].second.data(), ref_grads[i]);
            err = std::max(err, e);
            if (!(e <= gradient_tolerance(in, i))) {
              std::fprintf(stderr, "dfgnn: error: cuda %s differs from the reference (%.3g)\n", grads[i].first.c_str(), e);
              return 1;
            }
          }
          const auto [tc, tg] = fractions(both, t.total.median_ms);
          report(b, s, used, t.total, "fwd+bwd", both, tc, tg, -1);
          const auto [bc, bg] = fractions(bwd, t.backward.median_ms);
          report(b, s, used, t.backward, "bwd", bwd, bc, bg, err);
        } catch (const Error& e) {
          std::printf("%-7s %-8s n/a: %s\n", backend_name(b), to_string(s), e.what());
        }
      }
  }
  if (json) std::fclose(json);
  return 0;
}

}  // namespace

const Command& bench_command() {
  static const Section own{
      "bench",
      {{"inputs", "DIR", "DIR/{q,k,v,x,el,er,xl,xr,a}.npy where present (x and xl fall back to\nq, xr to k), else random"},
       {"backend", "B", "cuda|kokkos|all (default all: cuda where it runs, then kokkos)"},
       {"strategy", "S", "all|S1,S2,.. (default all)"},
       {"warmup", "W", "untimed runs first (default 5)"},
       {"iters", "I", "timed runs, of which the median (default 20)"},
       {"check", "", "compare each output (and on cuda each backward's gradients) with the\nfloat64 reference"},
       {"backward", "", "also time the training forward plus the fused backward (\"fwd+bwd\")\nand, on cuda, the backward alone (\"bwd\")"},
       {"name", "NAME", "the records' name (default: the graph)"},
       {"json", "F", "append one JSON object per timing to F"}},
      "Times the forward per backend and strategy (CUDA events on cuda, the host clock after a\n"
      "fence on kokkos; median of --iters after --warmup; the plan is built and inputs uploaded\n"
      "beforehand), with bandwidth against the bytes it must move and, on CUDA, the device copy\n"
      "bandwidth measured in the same run (bytes of the --dtype elements). On CUDA the JSON has\n"
      "plan_mib, the device memory the plan holds: graph copy, CSC, workspaces. --reorder times\n"
      "the renumbered graph (the renumbering, a once-per-graph step, is not timed; --check runs\n"
      "on the same graph)."};
  static const Command c{"bench", "--graph FILE --model M [--heads H] [--dim D] [options]",
                         {&graph_section(), &bipartite_section(), &run_section(), &own}, bench};
  return c;
}

}  // namespace dfgnn::cli
