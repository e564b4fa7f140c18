// `dfgnn attention`: one model's forward (and with --grad-out its training forward and fused
// backward) on a graph file, its results as .npy files, optionally checked against the float64
// reference.

#include "cli_common.hpp"
#include "commands.hpp"
#include "distributed_run.hpp"
#include "inputs.hpp"
#include "reference_check.hpp"
#include "run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

namespace dfgnn::cli {

namespace {

// Where --grad-out's gradient `name` goes: PREFIX<name>.npy.
std::string gradient_path(const Args& a, const std::string& name) { return a.get("grad-prefix", "grad_") + name + ".npy"; }

// Training forward + fused backward on the renumbered graph rn.run() with the inputs in its
// order (`run_in`) and dLoss/dOut `dout` in the file's; writes each gradient to gradient_path in
// the file's order and, with `check` (--reference), checks each against the float64 reference.
// Returns the exit code.
int run_backward(const Args& a, const Renumbered& rn, const Inputs& in, const Inputs& run_in,
                 const std::vector<float>& dout, Backend backend, Strategy strategy, const Reference* check) {
  const Reordered& re = rn.re;
  Gradients grads;
  {
    const auto run = make_run(rn.run(), run_in, strategy, backend, /*training=*/true);
    run->set_dout(moved_rows(dout, re.order));
    run->forward();
    run->backward();
    run->report_memory("training forward + backward");
    grads = run->gradients();
  }
  if (rank() != 0) return 0;  // rank 0 writes and checks the whole gradients
  for (std::size_t i = 0; i < grads.size(); ++i)  // node gradients back to the file's order
    if (node_rows(gradient_extent(in, i))) grads[i].second = moved_rows(grads[i].second, re.position);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const std::vector<std::size_t> extents = in.shape(gradient_extent(in, i));
    io::write_npy_f32(gradient_path(a, grads[i].first), std::vector<std::int64_t>(extents.begin(), extents.end()),
                      grads[i].second.data());
  }
  std::printf("backward: wrote %zu gradients to %s\n", grads.size(), gradient_path(a, "*").c_str());
  if (!check) return 0;
  auto ref = run_reference_backward(*check->graph, check->in, check->dout(dout));
  int status = 0;
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (!within(*check, grads[i].first, grads[i].second, std::move(ref[i]), gradient_extent(in, i), gradient_tolerance(in, i)))
      status = 1;
  return status;
}

// NaN or Inf in an input propagates to the outputs (the defined result, docs/design.md
// "Semantics"), which no reference comparison can pass: --reference names the input instead of
// blaming the kernels.
void reject_non_finite(const Args& a, const Inputs& in) {
  const auto check = [](const std::vector<float>& v, const std::string& name) {
    if (std::find_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); }) != v.end())
      throw Error(name + " holds NaN or Inf: the outputs propagate it, --reference cannot check them");
  };
  for (int i = 0; i < in.args().count; ++i) {
    const std::string option = option_of(in.args().inputs[i]);
    check(in.tensors[std::size_t(i)], a.has(option) ? a.get(option) : "--" + option);
  }
  check(in.edge_values, a.get("edge-values"));
  check(in.edge_features, a.get("edge-features"));
}

int attention(const Args& a) {
  reject_foreign_options(a, parse_score_kind(a.need("model")));
  const Ordering ordering = parse_ordering(a.get("reorder", "none"));
  const Renumbered rn = renumbered(load_graph(a), ordering);
  const HostGraph& g = rn.file;
  const Reordered& re = rn.re;
  const Inputs in = load_inputs(a, g);
  const Strategy strategy = parse_strategy(a.get("strategy", "auto"));
  const Inputs run_in = in_order(in, re.order);
  if (a.has("grad-prefix") && !a.has("grad-out")) throw Error("--grad-prefix needs --grad-out");
  if (a.has("dropout") && !a.has("grad-out")) throw Error("--dropout applies to training: it needs --grad-out");
  if (a.flag("reference") || a.has("reference-sample")) reject_non_finite(a, in);
  const Backend backend = parse_backend(a.get("backend", "auto"));  // make_executor applies it
  if (ranks() > 1 && in.dtype != DType::F32)  // the distributed calls take float32 only so far
    throw Error(std::string("--dtype ") + to_string(in.dtype) + " runs in one process (mpirun runs float32)");
  if (ranks() > 1 && backend == Backend::Native)
    throw Error("--backend cuda runs in one process; mpirun runs the portable kernels");
  // dOut's shape and the output paths before any compute: a typo fails now, not after the run.
  const std::string dout_path = a.get("grad-out");
  std::vector<float> dout =
      a.has("grad-out") ? checked(io::read_npy_f32(dout_path), dout_path, {{in.N, in.H, in.D}, {in.N, in.H * in.D}})
                        : std::vector<float>{};
  for (float& x : dout) x = rounded(in.dtype, x);
  if (a.has("out")) io::check_writable(a.get("out"));
  if (a.has("attention-out")) io::check_writable(a.get("attention-out"));
  if (a.has("grad-out"))
    for (const auto& [name, size] : gradient_sizes(in)) io::check_writable(gradient_path(a, name));
  std::vector<float> out, weights;  // weights: in the file's edge order (a renumbering keeps the edge ids)
  Strategy used;
  Backend ran;
  const auto t0 = std::chrono::steady_clock::now();
  {
    const auto run = make_run(rn.run(), run_in, strategy, backend, /*training=*/false);
    run->forward();
    run->report_memory("forward");
    out = run->output();
    if (in.weights) weights = run->weights();
    used = run->strategy(), ran = run->backend();
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int status = 0;
  std::optional<Reference> check;
  if (rank() == 0) {  // under mpirun rank 0 holds the whole output
    out = moved_rows(out, re.position);
    std::printf("%s N=%d E=%lld H=%zu D=%zu reorder=%s strategy=%s backend=%s%s time=%.3f ms (with transfers and "
                "planning)\n",
                to_string(in.kind), g.num_nodes, (long long)g.num_edges(), in.H, in.D, to_string(ordering),
                to_string(used), backend_name(ran), ranks() > 1 ? (" ranks=" + std::to_string(ranks())).c_str() : "",
                ms);
    if (a.has("out"))
      io::write_npy_f32(a.get("out"), {std::int64_t(in.N), std::int64_t(in.H), std::int64_t(in.D)}, out.data());
    if (in.weights) io::write_npy_f32(a.get("attention-out"), {std::int64_t(in.E), std::int64_t(in.H)}, weights.data());
    if (a.flag("reference") || a.has("reference-sample")) check.emplace(a, g, in);
  }
  if (check) {
    std::vector<double> ref_weights;
    std::vector<double> ref = run_reference(*check->graph, check->in, in.weights ? &ref_weights : nullptr);
    const double tol = output_tolerance(in);
    bool ok = within(*check, "out", out, std::move(ref), Extent::DstFeatures, tol);
    if (in.weights) ok = within(*check, "the attention weights", weights, std::move(ref_weights), Extent::EdgeScalars, tol) && ok;
    status = ok ? 0 : 1;
  }
  if (!a.has("grad-out")) return status;
  // After a failed forward check too: under mpirun the other ranks are on their way to the backward.
  return std::max(status, run_backward(a, rn, in, run_in, dout, backend, strategy, check ? &*check : nullptr));
}

}  // namespace

const Command& attention_command() {
  static const Section own{
      "attention",
      {{"out", "F.npy", "the output [N,H,D] float32"},
       {"attention-out", "A.npy",
        "the attention weights [E,H] float32, edges in file order (probability\n"
        "times dropout factor; --reference checks them too)"},
       {"strategy", "S", "auto|smmf|pmf|unfused|online (any backend) | staged|dense (cuda)"},
       {"backend", "B", "auto|kokkos|cuda    auto: cuda when built with it and a GPU is visible"},
       {"reference", "",
        "also run the float64 reference (on the rounded inputs), print the max\n"
        "relative error and fail (exit 1) when it exceeds 1e-4 (1e-3 for\n" +
            head_gradients_help() + "; bf16 1e-2, f16 2e-3, gradients twice that)"},
       {"reference-sample", "K",
        "the same on a sample, for graphs too large for the whole reference:\n"
        "K random rows and the row of most in-edges (with --grad-out also K\n"
        "random sources), the reference run on the rows they depend on; it\n"
        "checks no per-head parameter's gradient (" + head_gradients_help() + "), nor --dropout runs"},
       {"grad-out", "G.npy",
        "dLoss/dOut [N,H,D]: also run the training forward and the fused\n"
        "backward (same backend) and write each gradient to PREFIX<name>.npy:\n" +
            gradients_help()},
       {"grad-prefix", "PREFIX", "where the gradients go (default \"grad_\")"}},
      "Under mpirun (an MPI build) every rank reads the same files and runs its partition's rows;\n"
      "rank 0 writes the results (float32, the portable kernels)."};
  static const Command c{"attention", "--graph FILE --model " + model_names("|") + " [--heads H] [options]",
                         {&graph_section(), &bipartite_section(), &run_section(), &input_section(), &own}, attention};
  return c;
}

}  // namespace dfgnn::cli
