// dfgnn command-line tool: fused attention on graph files, graph info, generators, benchmarks.
// User errors (bad options, files, shapes) exit with code 2 and one line on stderr.

#include <dfgnn/attention.hpp>
#include <dfgnn/backward.hpp>
#include <dfgnn/generate.hpp>
#include <dfgnn/io.hpp>
#include <dfgnn/reference.hpp>
#include <dfgnn/reference_backward.hpp>
#include <dfgnn/reorder.hpp>

#include "cli_common.hpp"
#include "distributed_run.hpp"
#include "inputs.hpp"
#include "message_passing_cli.hpp"
#ifdef DFGNN_ENABLE_CUDA
#include <dfgnn/cuda.hpp>

#include "cuda_runner.hpp"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace dfgnn;
using cli::Inputs;
using cli::node_rows;
using cli::Gradients;
using cli::gradient_extent;
using cli::gradient_sizes;

#ifndef DFGNN_GIT_COMMIT
#define DFGNN_GIT_COMMIT "unknown"
#endif

constexpr const char* kUsage = R"(usage:
  dfgnn attention --graph FILE --model gt|agnn|gat|gatv2 [--heads H] [options]
  dfgnn spmm --graph FILE --message M --reduce sum|mean|max|min [options]
  dfgnn sddmm --graph FILE --op add|sub|mul|div|dot [options]
  dfgnn info --graph FILE [--nodes N] [--src-nodes NS] [--symmetrize] [--model M --heads H --dim D]
  dfgnn gen rmat --scale S --edge-factor F [--seed S] --out FILE
  dfgnn gen sbm --kind pattern|cluster --graphs G [--seed S] --out FILE
  dfgnn gen knn --graphs G [--k K] [--seed S] --out FILE
  dfgnn bench --graph FILE --model M [--heads H] [--dim D] [--inputs DIR] [--backend cuda|kokkos|all]
              [--strategy all|S1,S2,..] [--warmup 5] [--iters 20] [--check] [--backward]
              [--dropout P] [--reorder none|rcm|degree] [--dtype f32|bf16|f16] [--name NAME] [--json F]

graph files (or --graph rmat:SCALE:EDGE_FACTOR[:SEED], the graph of `dfgnn gen rmat`
  generated in process): edge lists `u v` (u -> v, 0-based; '#'/'%' comments; whitespace or commas; an
  optional header line `src,dst`; at most a weight and a time column after u v, ignored),
  Matrix Market .mtx (row = destination, col = source, 1-based); .gz read transparently.
  --nodes N fixes the node count (default: max id + 1, or the `# nodes N` line of a file from
  dfgnn gen); --symmetrize adds reverse edges and drops duplicates. --src-nodes NS makes the
  graph bipartite: sources u < NS, destinations v < N (--nodes; default max destination + 1);
  source-side inputs (gt k v, gat el v, gatv2 xl) then have NS rows, the others and out N.

attention inputs (.npy float32/float64, C order; features [N,H,D] or [N,H*D], el/er [N,H], or [N] when H = 1):
  gt     --q F --k F --v F [--scale S]        (scale defaults to 1/sqrt(D))
  agnn   --x F --beta B|B1,..,BH
  gat    --el F --er F --v F [--slope S]      (slope defaults to 0.2)
  gatv2  --xl F --xr F --a F [--slope S]      (a is [H,D])
  Inputs not given are drawn uniformly from [-1,1] (--seed, default 1; --dim D, default 64).
  --edge-values F.npy   per-edge score multipliers [E] or [E,H], edges in file order
  --edge-features F.npy the model's edge features (PyG's edge_dim, projected), edges in file
                        order: gt [E,H,D] or [E,H*D] added to key and value; gat [E,H] (or [E]
                        when H = 1) inside the LeakyReLU; gatv2 [E,H,D] or [E,H*D] inside it
  --out F.npy           output [N,H,D] float32
  --attention-out A.npy the attention weights [E,H] float32, edges in file order (probability
                        times dropout factor; --reference checks them too)
  --strategy auto|smmf|pmf|unfused|online (any backend) | staged|dense (cuda)
  --backend auto|kokkos|cuda    auto: cuda when built with it and a GPU is visible
  --dtype f32|bf16|f16  the tensors' element type (default f32; bf16 and f16 run Online):
                        every input (and dOut) is rounded to it (nearest even) and computed in
                        float32; the .npy outputs and gradients stay float32, holding its values
  --reference           also run the float64 reference (on the rounded inputs), print the max
                        relative error and fail (exit 1) when it exceeds 1e-4 (1e-3 for dbeta
                        and da; bf16 1e-2, f16 2e-3, gradients twice that)
  --reference-sample K  the same on a sample, for graphs too large for the whole reference:
                        K random rows and the row of most in-edges (with --grad-out also K
                        random sources), the reference run on the rows they depend on; it
                        checks no per-head parameter's gradient (da, dbeta), nor --dropout runs
  --grad-out G.npy      dLoss/dOut [N,H,D]: also run the training forward and the fused
                        backward (same backend) and write each gradient to PREFIX<name>.npy:
                        gt dQ dK dV | agnn dX dbeta | gat del der dV | gatv2 dXL dXR da;
                        with --edge-features also their gradient: gt, gatv2 dE | gat dee
  --grad-prefix PREFIX  where the gradients go (default "grad_")
  --dropout P           attention dropout rate of the training forward and backward (with
                        --grad-out; bench: --backward), in [0, 1); the mask is a hash of
                        (--seed, edge, head), as in the API, so --reference checks it too
  --reorder none|rcm|degree  run on the renumbered graph (reorder.hpp; rcm gathers nearby
                        rows): node inputs go into its order, the output and gradients come
                        back in the file's; edge values, edge features and the dropout mask
                        keep file order

spmm / sddmm (generalized message passing, docs/message_passing.md):
  spmm   out[v] = reduce over u -> v of message: --message copy_u | copy_e | u_OP_e | u_OP_v
         (OP add, sub, mul, div); operands --lhs F (on u, on e for copy_e), --rhs F (e or v)
  sddmm  out[e] = OP(x[u], y[v]) for every edge: --op add|sub|mul|div|dot, --x F --y F;
         out [E,H,D] ([E,H,1] for dot), edges in file order
  Operands: node tensors [N,..], edge tensors [E,..] in file order, each [R], [R,H], [R,H*D]
  or [R,1|H,1|D] (axes of 1 broadcast); missing ones are random [R,H,D] (--seed).
  --heads H (default 1)  --dim D (default: from the files, else 64)  --out F.npy
  --reference  --grad-out G.npy [--grad-prefix P]: writes P{dlhs,drhs}.npy | P{dx,dy}.npy
  --reorder none|rcm|degree   run on the renumbered graph (results in file order)
  --iters N [--warmup W]      time the kernels (median; bandwidth of the forward)
  --backend auto|kokkos|cuda  --json F (one JSON object per run, appended)

bench: times the forward per backend and strategy (CUDA events on cuda, the host clock after a
  fence on kokkos; median of --iters after --warmup; the plan is built and inputs uploaded
  beforehand), with bandwidth against the bytes it must move and, on CUDA, the device copy
  bandwidth measured in the same run (bytes of the --dtype elements). Inputs come from DIR/{q,k,v,x,el,er,xl,xr,a}.npy where
  present, else random. --check compares each output with the float64 reference. --backward
  also times, per backend and strategy, the training forward plus the fused backward
  ("fwd+bwd") and, on CUDA, the backward alone ("bwd", whose gradients --check compares with
  the reference). --json appends one JSON object per line (on CUDA with plan_mib, the device
  memory the plan holds: graph copy, CSC, workspaces). --reorder times the renumbered graph
  (the renumbering, a once-per-graph step, is not timed; --check runs on the same graph).
)";

using cli::Args;
using cli::load_graph;
using cli::parse_args;
using cli::random_tensor;
using cli::backend_name;
using cli::backend_option;
using cli::native_unavailable;

// The option of a model argument: its name in lower case (--q, --el, --xl, --beta, ...).
std::string option_of(const ArgSpec& arg) { return lower(arg.name); }

// The option of a model's scalar parameter (--scale, --slope: model_args' "GT::scale"), or "".
std::string param_option(ScoreKind kind) {
  const char* param = model_args(kind).param;
  if (!param) return "";
  const std::string p = param;
  return p.substr(p.find("::") + 2);
}

// Every model's options (its arguments and its parameter), each with the models that read it.
std::map<std::string, std::vector<ScoreKind>> model_options() {
  std::map<std::string, std::vector<ScoreKind>> readers;
  for (ScoreKind kind : kModels) {
    const ModelArgs& m = model_args(kind);
    for (int i = 0; i < m.count; ++i) readers[option_of(m.inputs[i])].push_back(kind);
    if (m.param) readers[param_option(kind)].push_back(kind);
  }
  return readers;
}

// Options that only some models read: given for another model they are a mistake, not a no-op.
void reject_foreign_options(const Args& a, ScoreKind kind) {
  for (const auto& [name, models] : model_options())
    if (a.has(name) && std::find(models.begin(), models.end(), kind) == models.end())
      throw Error("--" + name + " does not apply to --model " + to_string(kind));
}

// The model's scalar parameter: its option, else the model's default (GT's 0, the API's
// 1/sqrt(D); the GATs' slope 0.2). A zero --scale is refused: 0 itself is no scale.
float param_value(const Args& a, ScoreKind kind) {
  const std::string option = param_option(kind);
  const float fallback = visit_model(kind, [](auto model) { return model.param(); });
  if (option.empty() || !a.has(option)) return fallback;
  const float value = a.real(option, fallback);
  if (option == "scale" && value == 0.0f) throw Error("--scale must be nonzero (omit it for 1/sqrt(D))");
  return value;
}

// Feature width D from the first [rows,H,D] / [rows,H*D] file given (rows: in's NS or N), else --dim.
std::size_t feature_dim(const Args& a, const Inputs& in, std::map<std::string, io::Array>& files) {
  const std::size_t H = in.H;
  const ModelArgs& m = in.args();
  for (int i = 0; i < m.count; ++i) {
    const std::string name = option_of(m.inputs[i]);
    const Extent e = m.inputs[i].extent;
    if ((e != Extent::SrcFeatures && e != Extent::DstFeatures) || !a.has(name)) continue;
    const io::Array& t = files[name] = io::read_npy_f32(a.get(name));
    const std::string where = a.get(name) + ": ";
    const std::size_t rows = in.rows(e);
    const char* rows_name = source_rows(e) && in.NS != in.N ? "NS" : "N";
    std::size_t d = 0;
    if (t.shape.size() == 3 && std::size_t(t.shape[0]) == rows && std::size_t(t.shape[1]) == H && t.shape[2] > 0)
      d = std::size_t(t.shape[2]);
    else if (t.shape.size() == 2 && std::size_t(t.shape[0]) == rows && t.shape[1] > 0 && t.shape[1] % std::int64_t(H) == 0)
      d = std::size_t(t.shape[1]) / H;
    else
      throw Error(where + "expected shape [" + rows_name + ",H,D] or [" + rows_name + ",H*D] with " + rows_name +
                  " = " + std::to_string(rows) + ", H = " + std::to_string(H));
    if (a.has("dim") && std::size_t(a.integer("dim", 0)) != d)
      throw Error(where + "D = " + std::to_string(d) + " but --dim " + a.get("dim"));
    return d;
  }
  const long long d = a.integer("dim", 64);
  if (d < 1) throw Error("--dim must be >= 1");
  return std::size_t(d);
}

// The data of t if its shape is one of `shapes`.
std::vector<float> checked(const io::Array& t, const std::string& path,
                           const std::vector<std::vector<std::size_t>>& shapes) {
  const std::vector<std::size_t> got(t.shape.begin(), t.shape.end());
  if (std::find(shapes.begin(), shapes.end(), got) != shapes.end()) return t.data;
  auto str = [](const std::vector<std::size_t>& s) {
    std::string r = "[";
    for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
    return r + "]";
  };
  std::string expected;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    if (std::find(shapes.begin(), shapes.begin() + i, shapes[i]) == shapes.begin() + i)
      expected += (expected.empty() ? "" : " or ") + str(shapes[i]);
  throw Error(path + ": shape " + str(got) + ", expected " + expected);
}

Inputs load_inputs(const Args& a, const HostGraph& g) {
  Inputs in;
  in.kind = parse_score_kind(a.need("model"));
  in.NS = std::size_t(g.num_src_nodes);
  in.N = std::size_t(g.num_nodes);
  in.E = std::size_t(g.num_edges());
  in.weights = a.has("attention-out");
  const long long heads = a.integer("heads", 1);
  if (heads < 1) throw Error("--heads must be >= 1");
  in.H = std::size_t(heads);
  std::map<std::string, io::Array> files;
  in.D = feature_dim(a, in, files);
  in.param = param_value(a, in.kind);
  const std::uint64_t seed = a.seed();
  const std::size_t N = std::max(in.NS, in.N), H = in.H, D = in.D;
  const ModelArgs& m = in.args();
  const auto node_args =
      std::count_if(m.inputs, m.inputs + m.count, [](const ArgSpec& x) { return node_rows(x.extent); });
  // Every count below is at most max(NS, N)*H*D; the inputs, the output and as many gradients must fit.
  const std::uint64_t nhd = checked_product("nodes x heads x dim:", {N, H, D});
  check_host_bytes("attention over " + std::to_string(N) + " nodes x " + std::to_string(H) + " heads x " +
                       std::to_string(D) + " features",
                   checked_product("bytes of", {nhd, 4, 2 * std::uint64_t(node_args) + 2}));
  auto tensor = [&](const std::string& name, std::vector<std::size_t> want, std::vector<std::size_t> alt,
                    std::uint64_t salt) {
    std::size_t n = 1;
    for (std::size_t x : want) n *= x;
    if (!a.has(name)) return random_tensor(n, seed * 1000003 + salt);
    if (!files.count(name)) files[name] = io::read_npy_f32(a.get(name));
    return checked(files[name], a.get(name), {want, alt});
  };
  std::uint64_t salt = 0;
  for (int i = 0; i < m.count; ++i) {
    const std::string name = option_of(m.inputs[i]);
    const Extent e = m.inputs[i].extent;
    if (e == Extent::HeadVector) {  // a list of values, 1 (shared by the heads) or H
      std::vector<float> v = a.has(name) ? io::parse_float_list(a.get(name), "--" + name) : std::vector<float>{1.0f};
      if (v.size() != 1 && v.size() != H)
        throw Error("--" + name + ": " + std::to_string(v.size()) + " values, expected 1 or H = " + std::to_string(H));
      in.tensors.push_back(std::move(v));
      continue;
    }
    const std::vector<std::size_t> want = in.shape(e);  // a HeadVector's shape is its tensor's, above
    const bool features = e == Extent::SrcFeatures || e == Extent::DstFeatures;
    const std::vector<std::size_t> flat = e == Extent::HeadFeatures ? std::vector<std::size_t>{H * D}
                                          : features                ? std::vector<std::size_t>{want[0], H * D}
                                          : H == 1                  ? std::vector<std::size_t>{want[0]}
                                                                    : want;
    in.tensors.push_back(tensor(name, want, flat, ++salt));
  }
  if (a.has("edge-values")) {
    const std::string path = a.get("edge-values");
    if (a.flags.count("symmetrize"))
      throw Error("--edge-values cannot be combined with --symmetrize (it changes the edges and their order)");
    const io::Array w = io::read_npy_f32(path);
    const std::size_t E = std::size_t(g.num_edges());
    in.edge_values = checked(w, path, {{E}, {E, 1}, {E, H}});
    in.edge_value_heads = w.shape.size() == 2 ? int(w.shape[1]) : 1;
  }
  if (a.has("edge-features")) {
    const std::string path = a.get("edge-features");
    if (a.flags.count("symmetrize"))
      throw Error("--edge-features cannot be combined with --symmetrize (it changes the edges and their order)");
    if (!m.edge.name) throw Error("--edge-features: " + std::string(to_string(in.kind)) + " takes no edge features");
    const std::vector<std::size_t> want = in.shape(m.edge.extent);
    const std::vector<std::size_t> flat = m.edge.extent == Extent::EdgeFeatures ? std::vector<std::size_t>{in.E, H * D}
                                          : H == 1                              ? std::vector<std::size_t>{in.E}
                                                                                : want;
    check_host_bytes("--edge-features and its gradient",
                     checked_product("bytes of", {in.E, H, m.edge.extent == Extent::EdgeFeatures ? D : 1, 8}));
    in.edge_features = checked(io::read_npy_f32(path), path, {want, flat});
  }
  if (a.has("dropout")) {
    const float rate = a.real("dropout", 0.0f);
    if (!(rate >= 0.0f && rate < 1.0f)) throw Error("--dropout must be in [0, 1), got " + a.get("dropout"));
    in.dropout = {rate, seed};
  }
  in.dtype = parse_dtype(a.get("dtype", "f32"));
  for (auto* v : {&in.edge_values, &in.edge_features})
    for (float& x : *v) x = rounded(in.dtype, x);
  for (auto& t : in.tensors)
    for (float& x : t) x = rounded(in.dtype, x);
  return in;
}

// The distributed calls take float32 only so far.
void require_one_process(const Inputs& in) {
  if (in.dtype != DType::F32 && cli::ranks() > 1)
    throw Error(std::string("--dtype ") + to_string(in.dtype) + " runs in one process (mpirun runs float32)");
}

/// The file's graph and the one a run uses: its renumbering by an Ordering (reorder.hpp), or
/// for None the file's itself, not copied (a graph of billions of edges fits once), with empty
/// order and position (no rows move; a bipartite graph, whose two sides share no numbering,
/// has only this one).
struct Renumbered {
  HostGraph file;
  Reordered re;  ///< empty for None
  const HostGraph& run() const { return re.order.empty() ? file : re.graph; }
};

Renumbered renumbered(HostGraph g, Ordering o) {
  Renumbered r{std::move(g), {}};
  if (o != Ordering::None) r.re = reorder(r.file, o);
  return r;
}

/// x's rows moved by `index` (order or position of renumbered), or x itself when none moves.
std::vector<float> moved_rows(const std::vector<float>& x, const std::vector<node_t>& index) {
  return index.empty() ? x : gather_rows(x, index);
}

/// The inputs in a renumbered graph's order: node tensors (features, el, er) take rows `index`
/// (reorder.hpp's order to go there, position to come back); per-head ones (GATv2's a, AGNN's
/// beta), the edge values and the dropout seed stay, since the renumbered graph's edge ids are the file's.
Inputs in_order(const Inputs& in, const std::vector<node_t>& index) {
  Inputs r = in;
  for (int i = 0; i < in.args().count; ++i)
    if (node_rows(in.args().inputs[i].extent)) r.tensors[std::size_t(i)] = moved_rows(in.tensors[std::size_t(i)], index);
  return r;
}

// ---- running -------------------------------------------------------------------------------

// A forward on the default Kokkos execution space with the portable kernels (the CUDA-native
// ones are --backend cuda) through the generic entries, on tensors of element type T (float,
// bf16, f16: Inputs::dtype, whose values the inputs' floats hold): plan and inputs set up once,
// run repeatable.
template <class T>
class KokkosRun {
 public:
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;

  KokkosRun(const HostGraph& g, const Inputs& in, Strategy strategy, bool training = false)
      : in_(in), plan_(exec_, Graph<Mem>(g), in.kind, int(in.H), int(in.D), in.dtype, strategy, Backend::Portable),
        w_(upload("edge_values", in.edge_values)), out_("out", in.N, in.H, in.D) {
    for (const auto& x : in.tensors) t_.push_back(upload("input", x));
    if (in.edges()) t_.push_back(upload("edge_features", in.edge_features));
    if (in.edge_value_heads)
      options_.edge_values = decltype(options_.edge_values)(w_.data(), std::size_t(g.num_edges()),
                                                            std::size_t(in.edge_value_heads));
    if (training || in.weights) options_.logsumexp = decltype(options_.logsumexp)("logsumexp", in.N, in.H);
    if (training) options_.dropout = in.dropout;
    if (in.weights) options_.attention_weights = decltype(options_.attention_weights)("weights", in.E, in.H);
  }

  Strategy strategy() const { return plan_.strategy(); }

  void operator()() const {
    visit_model(in_.kind, [&](auto model) {
      attention(exec_, plan_, with_param<decltype(model)>(in_.param), tensors_of(t_), out_, options_);
    });
    exec_.fence();
  }

  std::vector<float> output() const { return to_host(out_); }
  std::vector<float> weights() const { return to_host(options_.attention_weights); }

  /// Sets dLoss/dOut and allocates the model's gradients, named in the API's order.
  void set_dout(const std::vector<float>& dout) {
    dout_ = upload("dout", dout);
    grads_.clear();
    for (const auto& [name, n] : gradient_sizes(in_)) grads_.emplace_back(name, Kokkos::View<T*, Mem>(name, n));
  }

  /// The fused backward after a training-mode forward, into the gradients of set_dout.
  void backward() const {
    using Rows = Kokkos::View<const T***, Kokkos::LayoutRight, Mem>;
    const Rows dout(dout_.data(), in_.N, in_.H, in_.D), out(out_.data(), in_.N, in_.H, in_.D);
    std::vector<Kokkos::View<T*, Mem>> grads;
    for (const auto& g : grads_) grads.push_back(g.second);
    visit_model(in_.kind, [&](auto model) {
      attention_backward(exec_, plan_, with_param<decltype(model)>(in_.param), tensors_of(t_), out, options_.logsumexp,
                         dout, tensors_of(grads), options_);
    });
    exec_.fence();
  }

  Gradients gradients() const {
    Gradients host;
    for (const auto& [name, view] : grads_) host.emplace_back(name, to_host(view));
    return host;
  }

 private:
  /// The floats of a View of T.
  template <class View>
  static std::vector<float> to_host(const View& v) {
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    std::vector<float> r(host.size());
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = to_float(host.data()[i]);
    return r;
  }
  /// floats holding T's values as a View of T.
  static Kokkos::View<T*, Mem> upload(const std::string& label, const std::vector<float>& host) {
    std::vector<T> x(host.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = from_float<T>(host[i]);
    return detail::upload<T, Mem>(label, x);
  }
  /// The model's arguments (or gradients), and its edge argument's last when given, on flat
  /// buffers, shaped as the plan's op says.
  Tensors tensors_of(const std::vector<Kokkos::View<T*, Mem>>& flat) const {
    Tensors r;
    r.count = int(flat.size());
    for (int i = 0; i < r.count; ++i)
      r.refs[i] = TensorRef::shaped(flat[std::size_t(i)].data(), plan_.op(), gradient_extent(in_, std::size_t(i)),
                                    in_.count());
    return r;
  }

  const Inputs& in_;
  Exec exec_;
  Plan<Exec> plan_;
  std::vector<Kokkos::View<T*, Mem>> t_;
  Kokkos::View<T*, Mem> w_;
  Kokkos::View<T***, Kokkos::LayoutRight, Mem> out_;
  Options<Mem, T> options_;
  Kokkos::View<T*, Mem> dout_;
  std::vector<std::pair<std::string, Kokkos::View<T*, Mem>>> grads_;
};

// f applied to this process's portable run of g (KokkosRun of the inputs' element type).
template <class F>
auto with_kokkos_run(const HostGraph& g, const Inputs& in, Strategy strategy, bool training, const F& f) {
  decltype(f(std::declval<KokkosRun<float>&>())) result;
  with_element(in.dtype, [&](auto element) {
    KokkosRun<decltype(element)> run(g, in, strategy, training);
    result = f(run);
  });
  return result;
}

// f applied to the portable kernels' run of g: this process's, or under mpirun the ranks'
// (cli::DistributedRun; rank 0 gets the whole outputs, the others empty ones).
template <class F>
auto with_portable_run(const HostGraph& g, const Inputs& in, Strategy strategy, bool training, const F& f) {
#ifdef DFGNN_ENABLE_MPI
  if (cli::ranks() > 1) return f(cli::DistributedRun(g, in, strategy, training));
#endif
  return with_kokkos_run(g, in, strategy, training, f);
}

std::vector<float> run_kokkos(const HostGraph& g, const Inputs& in, Strategy strategy, Strategy& used,
                              std::vector<float>* weights) {
  return with_portable_run(g, in, strategy, false, [&](auto&& run) {
    used = run.strategy();
    run();
    if (in.weights) *weights = run.weights();
    return run.output();
  });
}

/// The reference's options of a run: its edge values and edge features.
ReferenceOptions reference_options(const Inputs& in) {
  ReferenceOptions w(HostEdgeValues{in.edge_values.empty() ? nullptr : in.edge_values.data(), in.edge_value_heads});
  w.edge_features = in.edges() ? in.edge_features.data() : nullptr;
  return w;
}

std::vector<double> run_reference(const HostGraph& g, const Inputs& in, std::vector<double>* weights = nullptr) {
  ReferenceOptions w = reference_options(in);
  w.weights = weights;
  const int H = int(in.H), D = int(in.D);
  const auto& t = in.tensors;
  switch (in.kind) {
    case ScoreKind::GT: return reference_attention(g, H, D, GT{in.param}, t[0].data(), t[1].data(), t[2].data(), w);
    case ScoreKind::AGNN: return reference_attention(g, H, D, AGNN{}, t[0].data(), t[1].data(), int(t[1].size()), w);
    case ScoreKind::GAT: return reference_attention(g, H, D, GAT{in.param}, t[0].data(), t[1].data(), t[2].data(), w);
    case ScoreKind::GATv2:
      return reference_attention(g, H, D, GATv2{in.param}, t[0].data(), t[1].data(), t[2].data(), w);
  }
  return {};
}

// The float64 reference gradients, named and ordered as KokkosRun::backward returns them.
std::vector<std::vector<double>> run_reference_backward(const HostGraph& g, const Inputs& in,
                                                        const std::vector<float>& dout) {
  ReferenceOptions w = reference_options(in);
  w.dropout = in.dropout;
  // The edge argument's gradient last, when there are edge features.
  const auto with_edge = [&](std::vector<std::vector<double>> r, std::vector<double>& edge) {
    if (in.edges()) r.push_back(std::move(edge));
    return r;
  };
  const int H = int(in.H), D = int(in.D);
  const auto& t = in.tensors;
  switch (in.kind) {
    case ScoreKind::GT: {
      auto r = reference_attention_backward(g, H, D, GT{in.param}, t[0].data(), t[1].data(), t[2].data(), dout.data(), w);
      return with_edge({r.dQ, r.dK, r.dV}, r.dE);
    }
    case ScoreKind::AGNN: {
      auto r = reference_attention_backward(g, H, D, AGNN{}, t[0].data(), t[1].data(), int(t[1].size()), dout.data(), w);
      return {r.dX, r.dbeta};
    }
    case ScoreKind::GAT: {
      auto r = reference_attention_backward(g, H, D, GAT{in.param}, t[0].data(), t[1].data(), t[2].data(), dout.data(), w);
      return with_edge({r.del, r.der, r.dV}, r.dee);
    }
    case ScoreKind::GATv2: {
      auto r = reference_attention_backward(g, H, D, GATv2{in.param}, t[0].data(), t[1].data(), t[2].data(), dout.data(), w);
      return with_edge({r.dXL, r.dXR, r.da}, r.dE);
    }
  }
  return {};
}

// The largest relative error of out (and the attention weights) against the float64 reference
// on the same inputs: float32's rounding, or the accuracy contract of a two-byte type
// (docs/design.md, "Element types").
double output_tolerance(const Inputs& in) {
  switch (in.dtype) {
    case DType::BF16: return 1e-2;
    case DType::F16: return 2e-3;
    case DType::F32: break;
  }
  return 1e-4;
}

// The largest relative error the gradient of argument i may have against the float64
// reference: gradients of per-head parameters (AGNN's dbeta, GATv2's da) sum cancelling terms
// over all edges (docs/backward.md).
double gradient_tolerance(const Inputs& in, std::size_t i) {
  const Extent e = gradient_extent(in, i);
  if (in.dtype != DType::F32) return 2 * output_tolerance(in);
  return e == Extent::HeadFeatures || e == Extent::HeadVector ? 1e-3 : 1e-4;
}

// The part of a run that --reference checks against the float64 reference: the whole graph,
// or with --reference-sample K the part that K sampled nodes depend on (row_subgraph): K random
// rows and the row of most in-edges; with --grad-out also K random sources, which need every
// row they feed (and, on a square graph, their own). A row's output needs only its in-edges, so
// the reference on the part gives the whole graph's values there. Per-head parameters' gradients
// (da, dbeta) sum over every edge: a sample does not check them.
struct Reference {
  const HostGraph* graph;  // the reference's graph: the file's, or the part's
  Inputs in;               // its inputs
  std::optional<RowSubgraph> part;
  std::vector<node_t> sources;  // the part's sources whose gradients are checked
  std::vector<node_t> dst_nodes;  // the file's node of each of the part's destinations

  Reference(const Args& a, const HostGraph& g, const Inputs& file_in) : graph(&g), in(file_in) {
    if (!a.has("reference-sample")) return;
    const std::size_t k = std::size_t(a.integer("reference-sample", 0, 1));
    const bool grads = a.has("grad-out");
    if (grads && in.dropout.rate > 0)
      throw Error("--reference-sample cannot check --dropout (its mask is keyed on the whole graph's edge ids)");
    std::mt19937_64 rng(a.seed() ^ 0x5eed5a3b1eULL);
    std::vector<char> row(std::size_t(g.num_nodes), 0), source(std::size_t(g.num_src_nodes), 0);
    const auto draw = [&](std::vector<char>& taken) {
      if (taken.empty()) return;
      std::uniform_int_distribution<std::size_t> pick(0, taken.size() - 1);
      for (std::size_t i = 0; i < k; ++i) taken[pick(rng)] = 1;
    };
    draw(row);
    if (g.num_nodes > 0) {
      node_t heaviest = 0;
      for (node_t v = 1; v < g.num_nodes; ++v)
        if (g.row_ptr[v + 1] - g.row_ptr[v] > g.row_ptr[heaviest + 1] - g.row_ptr[heaviest]) heaviest = v;
      row[std::size_t(heaviest)] = 1;
    }
    if (grads) {
      draw(source);
      for (edge_t e = 0; e < g.num_edges(); ++e)
        if (source[std::size_t(g.src[e])]) row[std::size_t(g.dst[e])] = 1;
      if (!g.bipartite())
        for (node_t u = 0; u < g.num_src_nodes; ++u) row[std::size_t(u)] |= source[std::size_t(u)];
    }
    std::vector<node_t> rows;
    for (node_t v = 0; v < g.num_nodes; ++v)
      if (row[std::size_t(v)]) rows.push_back(v);
    part = row_subgraph(g, rows);
    graph = &part->graph;
    for (std::size_t j = 0; j < part->sources.size(); ++j)
      if (source[std::size_t(part->sources[j])]) sources.push_back(node_t(j));
    // The part's inputs: source-side rows by its sources, destination-side by its rows (on a
    // square graph, by its nodes: sources extends rows), edge tensors by its edges.
    in.NS = std::size_t(graph->num_src_nodes), in.N = std::size_t(graph->num_nodes), in.E = std::size_t(graph->num_edges());
    dst_nodes = g.bipartite() ? part->rows : part->sources;
    for (int i = 0; i < in.args().count; ++i) {
      const Extent e = in.args().inputs[i].extent;
      const bool src = source_rows(e);
      if (node_rows(e))
        in.tensors[std::size_t(i)] = rows_of(file_in.tensors[std::size_t(i)], file_in.rows(e), src ? part->sources : dst_nodes);
    }
    in.edge_values = rows_of(file_in.edge_values, file_in.E, part->edges);
    in.edge_features = rows_of(file_in.edge_features, file_in.E, part->edges);
    file_rows = file_in.N;
    std::printf("reference sample: %zu rows, %zu sources, %lld edges\n", part->rows.size(), sources.size(),
                (long long)graph->num_edges());
  }

  /// dOut of the part's destinations.
  std::vector<float> dout(const std::vector<float>& file_dout) const {
    return part ? rows_of(file_dout, file_rows, dst_nodes) : file_dout;
  }

  /// The entries of a result of extent e (in the file's order, `file`) and of the reference's
  /// (`ref`, the part's) that hold the same values: all of them, or the part's checked ones
  /// (its rows; its sampled sources; its edges; none of a per-head parameter's).
  std::pair<std::vector<float>, std::vector<double>> compared(const std::vector<float>& file, std::vector<double> ref,
                                                              Extent e) const {
    if (!part) return {file, std::move(ref)};
    std::vector<float> got;
    std::vector<double> want;
    const std::size_t w = row_entries(e, in.H, in.D);
    const auto take = [&](std::size_t at_file, std::size_t at_ref) {
      got.insert(got.end(), file.begin() + at_file * w, file.begin() + (at_file + 1) * w);
      want.insert(want.end(), ref.begin() + at_ref * w, ref.begin() + (at_ref + 1) * w);
    };
    if (edge_rows(e)) {
      for (std::size_t k = 0; k < part->edges.size(); ++k) take(std::size_t(part->edges[k]), k);
    } else if (source_rows(e)) {
      for (const node_t j : sources) take(std::size_t(part->sources[std::size_t(j)]), std::size_t(j));
    } else if (node_rows(e)) {
      for (std::size_t i = 0; i < part->rows.size(); ++i) take(std::size_t(part->rows[i]), i);
    }
    return {got, want};
  }

 private:
  std::size_t file_rows = 0;  // the file's destinations (dOut's rows)

  /// Rows `index` of x, a tensor of `count` rows (empty stays empty).
  template <class Index>
  static std::vector<float> rows_of(const std::vector<float>& x, std::size_t count, const std::vector<Index>& index) {
    if (x.empty() || count == 0) return {};
    const std::size_t w = x.size() / count;
    std::vector<float> r;
    r.reserve(index.size() * w);
    for (const auto i : index) r.insert(r.end(), x.begin() + std::size_t(i) * w, x.begin() + (std::size_t(i) + 1) * w);
    return r;
  }
};

// Compares `got` (extent e, the file's order) with the reference's `ref` on what `check` holds;
// prints the error of `what` and returns whether it is within `tol`. A sample that holds none of
// it (a per-head parameter's gradient) says so.
bool within(const Reference& check, const std::string& what, const std::vector<float>& got, std::vector<double> ref,
            Extent e, double tol) {
  const auto [x, y] = check.compared(got, std::move(ref), e);
  if (check.part && y.empty() && !got.empty()) {
    std::printf("%s: not checked by a sample (a sum over every edge)\n", what.c_str());
    return true;
  }
  const double err = max_relative_error(x.data(), y);
  std::printf("max relative error of %s vs float64 reference: %.3g\n", what.c_str(), err);
  if (err <= tol) return true;
  std::fprintf(stderr, "dfgnn: error: %s relative error %.3g exceeds %.0e\n", what.c_str(), err, tol);
  return false;
}

// Where --grad-out's gradient `name` goes: PREFIX<name>.npy.
std::string gradient_path(const Args& a, const std::string& name) { return a.get("grad-prefix", "grad_") + name + ".npy"; }

// Training forward + fused backward on `backend`, on the renumbered graph re.graph with the
// inputs in its order (`run_in`) and dLoss/dOut `dout` in the file's; writes each gradient to
// gradient_path in the file's order and, with `check` (--reference), checks each against the
// float64 reference. Returns the exit code.
int run_backward(const Args& a, const Renumbered& rn, const Inputs& in, const Inputs& run_in,
                 const std::vector<float>& dout, Backend backend, Strategy strategy, const Reference* check) {
  const Reordered& re = rn.re;
  const std::vector<float> run_dout = moved_rows(dout, re.order);
  Gradients grads;
  if (backend == Backend::Portable) {
    grads = with_portable_run(rn.run(), run_in, strategy, /*training=*/true, [&](auto&& run) {
      run.set_dout(run_dout);
      run();
      run.backward();
      return run.gradients();
    });
  } else {
#ifdef DFGNN_ENABLE_CUDA
    auto values = cli::run_cuda_backward(rn.run(), run_in, strategy, run_dout);
    const auto sizes = gradient_sizes(in);
    for (std::size_t i = 0; i < sizes.size(); ++i) grads.emplace_back(sizes[i].first, std::move(values[i]));
#endif
  }
  if (cli::rank() != 0) return 0;  // rank 0 writes and checks the whole gradients
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

int cmd_attention(int argc, char** argv) {
  std::set<std::string> accepted{"graph", "nodes", "src-nodes", "model", "heads", "dim", "edge-values", "edge-features",
                                 "out", "strategy", "backend", "seed", "grad-out", "grad-prefix", "dropout", "reorder",
                                 "attention-out", "dtype"};
  for (const auto& option : model_options()) accepted.insert(option.first);
  accepted.insert("reference-sample");
  const Args a = parse_args(argc, argv, 2, accepted, {"reference", "symmetrize"});
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
  if (a.flags.count("reference") || a.has("reference-sample")) reject_non_finite(a, in);
  const Backend backend = backend_option(a);
  require_one_process(in);
  if (cli::ranks() > 1 && backend != Backend::Portable)
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
  Strategy used = strategy;
  std::vector<float> out, weights;  // weights: in the file's edge order (a renumbering keeps the edge ids)
  const auto t0 = std::chrono::steady_clock::now();
  if (backend == Backend::Portable) {
    out = run_kokkos(rn.run(), run_in, strategy, used, &weights);
  } else {
#ifdef DFGNN_ENABLE_CUDA
    out = run_cuda(rn.run(), run_in, strategy, used, &weights);
#endif
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int status = 0;
  std::optional<Reference> check;
  if (cli::rank() == 0) {  // under mpirun rank 0 holds the whole output
    out = moved_rows(out, re.position);
    std::printf("%s N=%d E=%lld H=%zu D=%zu reorder=%s strategy=%s backend=%s%s time=%.3f ms (with transfers and "
                "planning)\n",
                to_string(in.kind), g.num_nodes, (long long)g.num_edges(), in.H, in.D, to_string(ordering),
                to_string(used), backend_name(backend),
                cli::ranks() > 1 ? (" ranks=" + std::to_string(cli::ranks())).c_str() : "", ms);
    if (a.has("out"))
      io::write_npy_f32(a.get("out"), {std::int64_t(in.N), std::int64_t(in.H), std::int64_t(in.D)}, out.data());
    if (in.weights) io::write_npy_f32(a.get("attention-out"), {std::int64_t(in.E), std::int64_t(in.H)}, weights.data());
    if (a.flags.count("reference") || a.has("reference-sample")) check.emplace(a, g, in);
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

int cmd_info(int argc, char** argv) {
  const Args a = parse_args(argc, argv, 2, {"graph", "nodes", "src-nodes", "model", "heads", "dim"}, {"symmetrize"});
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

int cmd_gen(int argc, char** argv) {
  if (argc < 3) throw Error("gen needs a generator: rmat, sbm or knn");
  const std::string what = argv[2];
  const std::map<std::string, std::set<std::string>> options{
      {"rmat", {"scale", "edge-factor"}}, {"sbm", {"kind", "graphs"}}, {"knn", {"graphs", "k"}}};
  if (!options.count(what)) throw Error("unknown generator '" + what + "' (expected rmat, sbm or knn)");
  std::set<std::string> accepted = options.at(what);
  accepted.insert({"seed", "out"});
  const Args a = parse_args(argc, argv, 3, accepted, {});
  const std::uint64_t seed = a.seed();
  const std::string out = a.need("out");
  HostGraph g;
  std::string params;
  if (what == "rmat") {
    const long long scale = a.integer("scale", 17), factor = a.integer("edge-factor", 64);
    g = gen::rmat(int(scale), int(factor), 0.57, 0.19, 0.19, seed);
    params = "rmat scale " + std::to_string(scale) + " edge-factor " + std::to_string(factor);
  } else if (what == "sbm") {
    const long long graphs = a.integer("graphs", 1024);
    if (graphs < 1) throw Error("sbm: --graphs must be >= 1");
    g = gen::sbm_batch(gen::parse_sbm_kind(a.get("kind", "pattern")), int(graphs), seed);
    params = "sbm " + a.get("kind", "pattern") + " graphs " + std::to_string(graphs);
  } else {  // knn
    const long long graphs = a.integer("graphs", 1024), k = a.integer("k", 8);
    if (graphs < 1 || k < 1) throw Error("knn: --graphs and --k must be >= 1");
    g = gen::knn_batch(int(graphs), int(k), seed);
    params = "knn graphs " + std::to_string(graphs) + " k " + std::to_string(k);
  }
  gen::write_edge_list(out, g, params + " seed " + std::to_string(seed));
  std::printf("%s: %d nodes, %lld edges, max in-degree %lld\n", out.c_str(), g.num_nodes,
              (long long)g.num_edges(), (long long)g.stats.max);
  return 0;
}

// Bytes a forward must move (anchors.md): each input read once, the output written once, the
// CSR graph; the gather model adds one row read per edge for each gathered tensor.
struct Traffic {
  double compulsory = 0, gather = 0;
};
Traffic forward_bytes(const HostGraph& g, const Inputs& in) {
  const double NS = double(in.NS), N = double(in.N), H = double(in.H), D = double(in.D), E = double(g.num_edges());
  const double es = double(size_of(in.dtype));  // bytes of an element
  // Feature rows at the sources and at the destinations, and one gathered row per edge.
  const double graph = (N + 1) * 8 + E * 4, src = NS * H * D * es, dst = N * H * D * es, row = E * H * D * es;
  switch (in.kind) {
    case ScoreKind::GT: return {graph + 2 * src + 2 * dst, graph + 2 * src + 2 * dst + 2 * row};  // Q K V; out
    case ScoreKind::AGNN: return {graph + 2 * dst, graph + 2 * dst + row};  // X; out (square)
    case ScoreKind::GAT: {  // el V; er; out
      const double c = graph + src + dst + (NS + N) * H * es;
      return {c, c + row};
    }
    case ScoreKind::GATv2: {  // XL; XR out; a
      const double c = graph + src + 2 * dst + H * D * es;
      return {c, c + row};
    }
  }
  return {};
}

// The backward's bytes: compulsory, every tensor it reads (inputs, out, dOut, the statistics)
// and every gradient it writes, with the CSR and the CSC; gather, also each row its two walks
// gather per edge and head (rows: the key and value rows of the source; columns: the
// destination's rows) and the per-edge workspace written and read back.
Traffic backward_bytes(const HostGraph& g, const Inputs& in) {
  const double NS = double(in.NS), N = double(in.N), H = double(in.H), D = double(in.D), E = double(g.num_edges());
  const double graphs = (N + 1) * 8 + (NS + 1) * 8 + 2 * E * 4 + E * 8;
  const double src = NS * H * D * 4, dst = N * H * D * 4, scalars = N * H * 4, src_scalars = NS * H * 4;
  const double row = E * H * D * 4, work = 2 * 2 * E * H * 4;
  double comp = graphs + scalars, gathered = 0;  // scalars: the logsumexp
  switch (in.kind) {
    case ScoreKind::GT: comp += 4 * src + 4 * dst, gathered = 4 * row; break;  // Q K V out dOut; dQ dK dV
    case ScoreKind::AGNN: comp += 4 * dst, gathered = 3 * row + work / 2; break;  // X out dOut; dX (+cos)
    case ScoreKind::GAT:  // V out dOut; dV; el er del der
      comp += 2 * src + 2 * dst + 2 * src_scalars + 2 * scalars, gathered = 2 * row;
      break;
    case ScoreKind::GATv2: comp += 2 * src + 4 * dst + 2 * H * D * 4, gathered = 3 * row; break;  // XL XR out dOut; dXL dXR; a da
  }
  return {comp, comp + gathered + work};
}

// Times the forward, or with `backward` the training forward plus the fused backward.
cli::Timing time_kokkos(const HostGraph& g, const Inputs& in, Strategy strategy, int warmup, int iters,
                        Strategy& used, std::vector<float>& out, bool backward = false) {
  return with_kokkos_run(g, in, strategy, backward, [&](auto&& run) {
    if (backward) {
      std::vector<float> dout = random_tensor(in.out_size(), 7);
      for (float& x : dout) x = rounded(in.dtype, x);
      run.set_dout(dout);
    }
    used = run.strategy();
    std::vector<double> ms;
    for (int i = 0; i < warmup + iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      run();
      if (backward) run.backward();
      if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    out = run.output();
    std::sort(ms.begin(), ms.end());
    return cli::Timing{ms[ms.size() / 2], ms.front()};
  });
}

int cmd_bench(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2,
                      {"graph", "nodes", "src-nodes", "model", "heads", "dim", "inputs", "backend", "strategy", "warmup", "iters",
                       "json", "name", "seed", "slope", "scale", "dropout", "reorder", "dtype"},
                      {"symmetrize", "check", "backward"});
  if (a.has("dropout") && !a.flags.count("backward")) throw Error("--dropout applies to training: it needs --backward");
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
  const int warmup = int(a.integer("warmup", 5, 0, cli::kMaxIters)), iters = int(a.integer("iters", 20, 1, cli::kMaxIters));
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
  std::string device = std::string("kokkos ") + Kokkos::DefaultExecutionSpace::name();
  double copy_gbs = 0;
#ifdef DFGNN_ENABLE_CUDA
  if (backends.front() == Backend::Native) device = cli::cuda_device_name(), copy_gbs = cli::cuda_copy_bandwidth();
#endif
  const Traffic bytes = forward_bytes(g, in);
  const std::vector<double> ref = a.flags.count("check") ? run_reference(g, in) : std::vector<double>{};
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
  auto report = [&](Backend b, Strategy s, Strategy used, const cli::Timing& t, const char* pass,
                    const Traffic& moved, double comp, double gath, double err) {
    std::printf("%-7s %-8s %-8s %10.4f %10.4f %11.1f%% %11.1f%% %10.2g  %s\n", backend_name(b), to_string(s),
                to_string(used), t.median_ms, t.min_ms, 100 * comp, 100 * gath, err, pass);
    if (json)
      std::fprintf(json,
                   "{\"name\": \"%s\", \"device\": \"%s\", \"commit\": \"%s\", \"model\": \"%s\", \"N\": %d, "
                   "\"E\": %lld, \"H\": %zu, \"D\": %zu, \"reorder\": \"%s\", \"reorder_ms\": %.1f, \"backend\": \"%s\", \"strategy\": \"%s\", "
                   "\"resolved\": \"%s\", \"pass\": \"%s\", \"ms\": %.6f, \"min_ms\": %.6f, "
                   "\"compulsory_bytes\": %.0f, \"gather_bytes\": %.0f, \"copy_gbs\": %.1f, "
                   "\"compulsory_frac\": %.4f, \"gather_frac\": %.4f, \"max_rel_err\": %.3g, \"plan_mib\": %.2f, "
                   "\"dropout\": %g, \"dtype\": \"%s\"}\n",
                   cli::json_escaped(a.get("name", a.get("graph"))).c_str(), cli::json_escaped(device).c_str(),
                   DFGNN_GIT_COMMIT, to_string(in.kind),
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
      cli::Timing t;
      try {
#ifdef DFGNN_ENABLE_CUDA
        if (b == Backend::Native) t = cli::time_cuda(g, in, s, warmup, iters, used, &out);
#endif
        if (b == Backend::Portable) t = time_kokkos(g, in, s, warmup, iters, used, out);
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
  if (a.flags.count("backward")) {
    const std::vector<float> dout = random_tensor(in.out_size(), 7);
    const auto ref_grads =
        a.flags.count("check") ? run_reference_backward(g, in, dout) : std::vector<std::vector<double>>{};
    const Traffic bwd = backward_bytes(g, in), both{bytes.compulsory + bwd.compulsory, bytes.gather + bwd.gather};
    const auto names = gradient_sizes(in);
    for (const Backend b : backends)
      for (Strategy s : strategies) {
        Strategy used = s;
        try {
          if (b == Backend::Portable) {
            std::vector<float> out;
            const cli::Timing t = time_kokkos(g, in, s, warmup, iters, used, out, true);
            report(b, s, used, t, "fwd+bwd", both, 0, 0, -1);
            continue;
          }
#ifdef DFGNN_ENABLE_CUDA
          std::vector<std::vector<float>> grads;
          const cli::TrainTiming t = cli::time_cuda_backward(g, in, s, dout, warmup, iters, used,
                                                             ref_grads.empty() ? nullptr : &grads);
          double err = -1;
          for (std::size_t i = 0; i < ref_grads.size(); ++i) {
            const double e = max_relative_error(grads[i].data(), ref_grads[i]);
            err = std::max(err, e);
            if (!(e <= gradient_tolerance(in, i))) {
              std::fprintf(stderr, "dfgnn: error: cuda %s differs from the reference (%.3g)\n",
                           names[i].first.c_str(), e);
              return 1;
            }
          }
          const auto [tc, tg] = fractions(both, t.total.median_ms);
          report(b, s, used, t.total, "fwd+bwd", both, tc, tg, -1);
          const auto [bc, bg] = fractions(bwd, t.backward.median_ms);
          report(b, s, used, t.backward, "bwd", bwd, bc, bg, err);
#endif
        } catch (const Error& e) {
          std::printf("%-7s %-8s n/a: %s\n", backend_name(b), to_string(s), e.what());
        }
      }
  }
  if (json) std::fclose(json);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  const bool help = std::any_of(argv + 1, argv + argc, [](const char* s) {
    return std::strcmp(s, "--help") == 0 || std::strcmp(s, "-h") == 0;
  });
  if (cmd.empty() || help || cmd == "help") {
    std::fputs(kUsage, cmd.empty() ? stderr : stdout);
    return cmd.empty() ? 2 : 0;
  }
  // Kokkos gets no arguments: its own options (--threads, --help, ...) would bypass dfgnn's
  // checks. Its environment variables (KOKKOS_NUM_THREADS, ...) still apply.
  cli::Ranks ranks(argc, argv);
  int kokkos_argc = 1;
  Kokkos::ScopeGuard kokkos(kokkos_argc, argv);
  // Under mpirun every rank reads the same options and files, so an error before the ranks'
  // collectives is every rank's: rank 0 reports it. One after may be one rank's alone, while the
  // others wait in a collective: that rank reports it and ends them all.
  const auto fail = [](int code, const char* what, const char* text) {
    if (cli::rank() == 0 || cli::collectives_begun()) std::fprintf(stderr, "dfgnn: %s: %s\n", what, text);
    if (cli::collectives_begun()) cli::abort_ranks(code);
    return code;
  };
  try {
    if (cli::ranks() > 1 && cmd != "attention") throw Error("only `dfgnn attention` runs on several ranks");
    if (cmd == "attention") return cmd_attention(argc, argv);
    if (cmd == "info") return cmd_info(argc, argv);
    if (cmd == "gen") return cmd_gen(argc, argv);
    if (cmd == "bench") return cmd_bench(argc, argv);
    if (cmd == "spmm") return cli::cmd_spmm(argc, argv);
    if (cmd == "sddmm") return cli::cmd_sddmm(argc, argv);
    throw Error("unknown command '" + cmd + "' (expected attention, spmm, sddmm, info, gen or bench; see dfgnn --help)");
  } catch (const Error& e) {
    return fail(2, "error", e.what());
  } catch (const std::bad_alloc&) {
    return fail(1, "error", "out of host memory (the graph or tensors are too large for this machine)");
  } catch (const std::exception& e) {
    return fail(1, "failure", e.what());
  }
}
