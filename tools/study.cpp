// `dfgnn study`: one platform characterized in one JSON record (docs/study.md): the build's and
// the devices' facts, microbenchmarks, and the standard suite timed on every backend present,
// each case with its bytes, bandwidth fractions and a sampled float64 check.

#include "bytes.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "inputs.hpp"
#include "platform.hpp"
#include "reference_check.hpp"
#include "run.hpp"
#include "suite.hpp"

#include <dfgnn/reference.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

namespace dfgnn::cli {

namespace {

constexpr int kSchemaVersion = 1;  // perf/study.schema.json; raise it with any change of meaning

// The graphs studied by default: the quick suite's, or the generated headline graphs (the
// largest R-MAT only when named) and, with --data, the real ones.
std::string default_graphs(const Args& a) {
  if (a.flag("quick")) return "pattern-2,mnist-16,rmat-s9-d8";
  return std::string(a.has("data") ? "cora,citeseer,pubmed,tolokers,web-NotreDame," : "") +
         "pattern,cluster,mnist,rmat-s17-d64";
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> r;
  for (std::size_t p = 0, q; p <= list.size(); p = q + 1) {
    q = std::min(list.find(',', p), list.size());
    if (q > p) r.push_back(list.substr(p, q - p));
  }
  return r;
}

// The backends of --backends (native,portable), or every backend present, less the portable
// kernels on the host beside a GPU: they would time the host's CPU in a GPU's record.
std::vector<Backend> backends(const Args& a, nlohmann::json& skipped) {
  std::vector<Backend> r;
  const bool host = Kokkos::SpaceAccessibility<Kokkos::DefaultExecutionSpace, Kokkos::HostSpace>::accessible;
  if (!a.has("backends")) {
    if (native_unavailable().empty()) r.push_back(Backend::Native);
    if (r.empty() || !host) r.push_back(Backend::Portable);
    else skipped["portable"] = "runs on the host beside a GPU; --backends native,portable studies it too";
    return r;
  }
  for (const std::string& name : split(a.get("backends"))) {
    if (name != "native" && name != "portable")
      throw Error("--backends: unknown backend '" + name + "' (expected native or portable)");
    const Backend b = name == "native" ? Backend::Native : Backend::Portable;
    if (b == Backend::Native && !native_unavailable().empty())
      throw Error("--backends native: the CUDA-native backend " + native_unavailable());
    if (std::find(r.begin(), r.end(), b) == r.end()) r.push_back(b);
  }
  if (r.empty()) throw Error("--backends: no backend named");
  return r;
}

const char* study_name(Backend b) { return b == Backend::Native ? "native" : "portable"; }

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char s[32];
  std::strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return s;
}

// The sampled float64 check of a (graph, model, shape, type): the reference on the part of the
// graph that kSample random rows (and for the backward as many sources) depend on.
constexpr int kSample = 16;
struct Check {
  Reference fwd, bwd;
  std::vector<double> out;
  std::vector<std::vector<double>> grads;
  std::vector<float> dout;
  Check(const HostGraph& g, const Inputs& in, const Args& fwd_args, const Args& bwd_args)
      : fwd(fwd_args, g, in), bwd(bwd_args, g, in), dout(random_tensor(in.out_size(), 7)) {
    for (float& x : dout) x = rounded(in.dtype, x);  // what the run's dOut of that type holds
    out = run_reference(*fwd.graph, fwd.in);
    grads = run_reference_backward(*bwd.graph, bwd.in, bwd.dout(dout));
  }
};

// The largest relative error of a run's results against the check, and whether it is within
// the accuracy contract.
nlohmann::json checked(const Check& c, const Run& run, const Inputs& in, bool training) {
  double err = 0, tol = output_tolerance(in);
  bool passed = true;
  const auto compare = [&](const Reference& ref, const std::vector<float>& got, std::vector<double> want, Extent e,
                           double limit) {
    const auto [x, y] = ref.compared(got, std::move(want), e);
    if (y.empty()) return;  // a per-head parameter's gradient: a sum over every edge, not sampled
    const double e_max = max_relative_error(x.data(), y);
    err = std::max(err, e_max), tol = std::max(tol, limit), passed = passed && e_max <= limit;
  };
  if (!training) {
    compare(c.fwd, run.output(), c.out, Extent::DstFeatures, output_tolerance(in));
  } else {
    const Gradients g = run.gradients();
    for (std::size_t i = 0; i < g.size(); ++i)
      compare(c.bwd, g[i].second, c.grads[i], gradient_extent(in, i), gradient_tolerance(in, i));
  }
  nlohmann::json j{{"sampled_rows", kSample}, {"tolerance", tol}, {"passed", passed}};
  put(j, "max_rel_err", err, "the results hold a NaN or an infinity");
  return j;
}

// One case: its timing, bytes, fractions of the backend's copy bandwidth and check, or why it
// cannot run there.
nlohmann::json run_case(const HostGraph& g, const Inputs& in, const Check& check, Backend b, Strategy s, bool training,
                        Repeats r, double copy_gbs) {
  nlohmann::json c{{"backend", study_name(b)}, {"strategy", to_string(s)}, {"pass", training ? "fwd+bwd" : "fwd"}};
  try {
    LocalRun run(g, in, s, b, training);
    if (training) run.set_dout(check.dout);
    const Timing t = run.time(r.warmup, r.iters).total;
    c.update({{"status", "ok"}, {"resolved", to_string(run.strategy())}, {"median_ms", t.median_ms},
              {"min_ms", t.min_ms}, {"spread_ms", t.spread_ms}});
    if (t.plan_mib >= 0) c["plan_mib"] = t.plan_mib;
    Traffic bytes = forward_bytes(g, in);
    if (training) {
      const Traffic bwd = backward_bytes(g, in);
      bytes = {bytes.compulsory + bwd.compulsory, bytes.gather + bwd.gather};
    }
    c["bytes"] = {{"compulsory", bytes.compulsory}, {"gather", bytes.gather}};
    nlohmann::json& f = c["fraction"] = nlohmann::json::object();
    put(f, "compulsory", gb_per_s(bytes.compulsory, t.median_ms) / copy_gbs, "no time or copy bandwidth measured");
    put(f, "gather", gb_per_s(bytes.gather, t.median_ms) / copy_gbs, "no time or copy bandwidth measured");
    c["check"] = checked(check, run, in, training);
  } catch (const Error& e) {  // a strategy this backend, graph or type does not run
    c.update({{"status", "unsupported"}, {"reason", e.what()}});
  }
  return c;
}

int study(const Args& a) {
  const bool quick = a.flag("quick");
  const std::string out = a.need("out");
  std::ofstream file(out);  // opened first: a path that cannot be written fails before the hours
  if (!file) throw Error("--out " + out + ": cannot open for writing");
  if (a.has("data") && !std::filesystem::is_directory(a.get("data")))
    throw Error("--data " + a.get("data") + ": not a directory");
  std::vector<std::string> graphs;  // --graphs none: the platform and its microbenchmarks alone
  const std::string names = a.get("graphs", default_graphs(a));
  for (const std::string& name : split(names == "none" ? "" : names)) {
    check_suite_graph("--graphs", name, a.has("data"));
    graphs.push_back(name);
  }
  if (graphs.empty() && names != "none") throw Error("--graphs: no graph named (none: no suite)");
  nlohmann::json skipped = nlohmann::json::object();
  const std::vector<Backend> studied = backends(a, skipped);
  const Repeats repeats = quick ? Repeats{1, 5} : Repeats{3, 10};
  const std::vector<std::pair<int, int>> shapes{{1, 128}, {4, 32}};
  const std::vector<std::string> dtypes = quick ? std::vector<std::string>{"f32", "bf16"}
                                                : std::vector<std::string>{"f32", "bf16", "f16"};
  const std::vector<Strategy> strategies{Strategy::Auto,   Strategy::SMMF,   Strategy::PMF,  Strategy::Unfused,
                                         Strategy::Online, Strategy::Staged, Strategy::Dense};

  nlohmann::json rec{{"schema", "dfgnn-study"}, {"schema_version", kSchemaVersion}, {"date", utc_now()}};
  rec["build"] = build_facts();
  rec["host"] = host_facts();
  rec["host"]["thread_bandwidth"] = host_thread_bandwidth(quick, repeats);
  std::map<Backend, double> copy_gbs;
  for (const Backend b : studied) {
    const auto device = make_device(b);
    nlohmann::json d = device->facts();
    d["microbenchmarks"] = microbenchmarks(*device, quick, repeats);
    copy_gbs[b] = d["microbenchmarks"]["copy"]["gbs"].is_number() ? double(d["microbenchmarks"]["copy"]["gbs"]) : 0.0;
    rec["devices"][study_name(b)] = d;
    std::printf("%s: %s, copy %.0f GB/s\n", study_name(b), device->name().c_str(), copy_gbs[b]);
  }
  rec["skipped_backends"] = skipped;
  nlohmann::json suite{{"quick", quick}, {"repeats", {{"warmup", repeats.warmup}, {"iters", repeats.iters}}},
                       {"dtypes", dtypes}, {"models", nlohmann::json::array()}, {"strategies", nlohmann::json::array()}};
  for (const ScoreKind k : kModels) suite["models"].push_back(to_string(k));
  for (const Strategy s : strategies) suite["strategies"].push_back(to_string(s));
  for (const auto& [h, d] : shapes) suite["shapes"].push_back(std::to_string(h) + "x" + std::to_string(d));
  rec["suite"] = suite;
  rec["graphs"] = nlohmann::json::array();
  rec["cases"] = nlohmann::json::array();

  bool all_passed = true;
  for (const std::string& name : graphs) {
    const HostGraph g = suite_graph("--graphs", name, a.get("data", ""));
    rec["graphs"].push_back({{"name", name}, {"source", suite_needs_data(name) ? "file" : "generated"},
                             {"nodes", g.num_nodes}, {"edges", g.num_edges()}, {"max_in_degree", g.stats.max},
                             {"mean_in_degree", g.stats.mean}});
    for (const auto& [h, d] : shapes)
      for (const ScoreKind kind : kModels)
        for (const std::string& dtype : dtypes) {
          Args in_args;
          in_args.values = {{"model", to_string(kind)}, {"heads", std::to_string(h)}, {"dim", std::to_string(d)},
                            {"dtype", dtype}};
          const Inputs in = load_inputs(in_args, g);
          Args fwd_args = in_args, bwd_args = in_args;
          fwd_args.values["reference-sample"] = bwd_args.values["reference-sample"] = std::to_string(kSample);
          bwd_args.values["grad-out"] = "";  // the sample's sources too: their gradients are checked
          const Check check(g, in, fwd_args, bwd_args);
          for (const bool training : {false, true})
            for (const Backend b : studied)
              for (const Strategy s : strategies) {
                nlohmann::json c{{"graph", name}, {"model", to_string(kind)}, {"heads", h}, {"dim", d},
                                 {"dtype", dtype}};
                c.update(run_case(g, in, check, b, s, training, repeats, copy_gbs[b]));
                if (c["status"] == "ok") {
                  std::printf("%s %s %dx%d %s %s %s %s: %.4f ms\n", name.c_str(), to_string(kind), h, d, dtype.c_str(),
                              training ? "fwd+bwd" : "fwd", study_name(b), to_string(s), double(c["median_ms"]));
                  if (!c["check"]["passed"].get<bool>()) {
                    std::fprintf(stderr, "dfgnn: error: %s differs from the float64 reference\n", c.dump().c_str());
                    all_passed = false;
                  }
                }
                rec["cases"].push_back(std::move(c));
              }
        }
  }
  file << rec.dump(1) << "\n";
  if (!file) throw Error("--out " + out + ": write failed");
  std::printf("%s: %zu cases\n", out.c_str(), rec["cases"].size());
  return all_passed ? 0 : 1;
}

}  // namespace

const Command& study_command() {
  static const Section own{
      "study",
      {{"out", "FILE", "the JSON record to write (docs/study.md, perf/study.schema.json)"},
       {"quick", "", "small graphs, f32 and bf16, 1 warm-up and 5 timed runs: a minute on a\nlaptop CPU"},
       {"graphs", "G1,G2,..", "the suite's graphs (default: pattern, cluster, mnist, rmat-s17-d64,\n"
                              "and with --data cora, citeseer, pubmed, tolokers, web-NotreDame;\n"
                              "--quick: pattern-2, mnist-16, rmat-s9-d8; also rmat-s20-d32; none:\n"
                              "the platform and its microbenchmarks alone)"},
       {"backends", "native,portable",
        "the backends to study (default: every one present, but the portable\nkernels on the host only "
        "where no GPU is)"},
       {"data", "DIR", "the folder of the real graphs (shared/data's layout)"}},
      "Records the build, the host and each backend's device (vendor, name, architecture, compute\n"
      "units, clocks, L2, memory, driver), microbenchmarks there (copy bandwidth, gather bandwidth\n"
      "of random rows of 4-256 bytes, launch latency; the host's copy bandwidth per thread count)\n"
      "and the suite: each graph, model, HxD (1x128, 4x32), element type, pass (fwd, fwd+bwd),\n"
      "backend and strategy, with median, min and spread (interquartile range) of the timed runs,\n"
      "the bytes of both byte models, their fractions of the copy bandwidth and the largest error\n"
      "against the float64 reference on sampled rows. Exit 1 if a result is beyond its tolerance."};
  static const Command c{"study", "--out FILE [--quick] [--graphs G1,..] [--backends native,portable] [--data DIR]",
                         {&own}, study};
  return c;
}

}  // namespace dfgnn::cli
