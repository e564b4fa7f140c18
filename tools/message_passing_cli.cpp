// `dfgnn spmm` / `dfgnn sddmm`: g-SpMM and g-SDDMM on a graph file with the conventions of
// `dfgnn attention` (.npy inputs or random ones, --out, --reference, --grad-out), optional
// reordering (results always in the file's node order) and timing.

#include "bytes.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "run.hpp"

#include <dfgnn/reference.hpp>
#include <dfgnn/reference_message_passing.hpp>
#include <dfgnn/reorder.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace dfgnn::cli {

namespace {

std::string shape_string(const std::vector<std::int64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

/// The feature width an operand file suggests: dim of [rows,h,d], D of [rows,H*D], else 1.
int suggested_dim(const io::Array& t, int H) {
  if (t.shape.size() == 3) return int(t.shape[2]);
  if (t.shape.size() == 2 && t.shape[1] != H && t.shape[1] % H == 0) return int(t.shape[1] / H);
  return 1;
}

/// An operand file as [rows, h, d]: [rows] is [rows,1,1], [rows,H] is [rows,H,1] (DGL's edge
/// shapes), [rows,H*D] is [rows,H,D]; rank 3 as is, with h in {1,H} and d in {1,D}.
HostTensor interpret(const io::Array& t, const std::string& path, std::size_t rows, const char* what, int H, int D) {
  const auto& s = t.shape;
  HostTensor r{t.data, rows, 0, 0};
  if (!s.empty() && std::size_t(s[0]) == rows) {
    if (s.size() == 1) r.heads = 1, r.dim = 1;
    if (s.size() == 2 && s[1] == std::int64_t(H) * D) r.heads = H, r.dim = D;
    if (s.size() == 2 && s[1] == H && !r.heads) r.heads = H, r.dim = 1;
    if (s.size() == 2 && s[1] == 1 && !r.heads) r.heads = 1, r.dim = 1;
    if (s.size() == 3 && (s[1] == 1 || s[1] == H) && (s[2] == 1 || s[2] == D)) r.heads = int(s[1]), r.dim = int(s[2]);
  }
  if (!r.heads)
    throw Error(path + ": shape " + shape_string(s) + ", expected [R], [R,H], [R,H*D] or [R,1|H,1|D] with R = " +
                std::to_string(rows) + " (" + what + "), H = " + std::to_string(H) + ", D = " + std::to_string(D));
  return r;
}

/// One operand of the command: its option and where it lives (U, E or V).
struct Slot {
  const char* option;
  Target target;
};

std::size_t rows_of(Target t, const HostGraph& g) {
  return t == Target::E ? std::size_t(g.num_edges()) : std::size_t(g.num_nodes);
}

/// The forward's bytes (bytes.hpp): compulsory, each input read once, the output written once
/// and the graph; gather, also one row read per edge for each tensor gathered by edge (sources;
/// both ends for g-SDDMM).
Traffic traffic(const HostGraph& g, const MessageJob& job, const std::vector<Slot>& slots, std::size_t out_floats,
                bool arg) {
  const double E = double(g.num_edges());
  Traffic t;
  t.compulsory = job.sddmm ? E * 16 : (double(g.num_nodes) + 1) * 8 + E * 4;  // sddmm: src, dst, edge_id
  t.compulsory += double(out_floats) * (arg ? 12 : 4);
  double gathered = 0;
  bool edge_ids = false;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const HostTensor& x = i == 0 ? job.lhs : job.rhs;
    const double row = double(x.heads) * x.dim * 4;
    t.compulsory += double(x.rows) * row;
    if (slots[i].target == Target::U || (job.sddmm && slots[i].target == Target::V)) gathered += E * row;
    edge_ids = edge_ids || slots[i].target == Target::E;
  }
  if (edge_ids && !job.sddmm) t.compulsory += E * 8;
  t.gather = t.compulsory + gathered;
  return t;
}

int run_command(const Args& a, bool sddmm) {
  const HostGraph g = load_graph(a);
  MessageJob job;
  job.sddmm = sddmm;
  std::vector<Slot> slots;
  if (sddmm) {
    job.op = parse_binary_op(a.need("op"));
    slots = {{"x", Target::U}, {"y", Target::V}};
  } else {
    job.message = parse_message(a.need("message"));
    job.reduce = parse_reduce(a.need("reduce"));
    slots = {{"lhs", job.message.lhs}};
    if (!job.message.is_copy()) slots.push_back({"rhs", job.message.rhs});
    if (job.message.is_copy() && a.has("rhs"))
      throw Error("--rhs: " + to_string(job.message) + " takes one operand (--lhs)");
  }
  const long long heads = a.integer("heads", 1);
  if (heads < 1) throw Error("--heads must be >= 1");
  job.H = int(heads);
  std::vector<io::Array> files(slots.size());
  int width = 0;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (!a.has(slots[i].option)) continue;
    if (slots[i].target == Target::E && a.flag("symmetrize"))
      throw Error(std::string("--") + slots[i].option +
                  " holds edge values, which cannot be combined with --symmetrize (it changes the edges and their order)");
    files[i] = io::read_npy_f32(a.get(slots[i].option));
    width = std::max(width, suggested_dim(files[i], job.H));
  }
  const long long dim = a.integer("dim", width ? width : 64);
  if (dim < 1) throw Error("--dim must be >= 1");
  job.D = int(dim);
  const std::uint64_t seed = a.seed();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const std::size_t rows = rows_of(slots[i].target, g);
    HostTensor& t = i == 0 ? job.lhs : job.rhs;
    t = a.has(slots[i].option)
            ? interpret(files[i], a.get(slots[i].option), rows, slots[i].target == Target::E ? "edges" : "nodes", job.H,
                        job.D)
            : HostTensor{random_tensor(rows * job.H * job.D, seed * 1000003 + i + 1), rows, job.H, job.D};
  }
  const std::size_t N = std::size_t(g.num_nodes), E = std::size_t(g.num_edges());
  const int out_dim = sddmm && job.op == BinaryOp::Dot ? 1 : job.D;
  const std::vector<std::int64_t> out_shape{std::int64_t(sddmm ? E : N), job.H, out_dim};
  std::vector<float> dout;
  if (a.has("grad-out")) {
    const std::string path = a.get("grad-out");
    const io::Array t = io::read_npy_f32(path);
    const std::vector<std::int64_t> flat{out_shape[0], std::int64_t(job.H) * out_dim};
    if (t.shape != out_shape && t.shape != flat)
      throw Error(path + ": shape " + shape_string(t.shape) + ", expected " + shape_string(out_shape) + " or " +
                  shape_string(flat));
    dout = t.data;
  } else if (a.has("grad-prefix")) {
    throw Error("--grad-prefix needs --grad-out");
  }
  const std::string prefix = a.get("grad-prefix", "grad_");
  const std::vector<std::pair<std::string, const HostTensor*>> grads{{sddmm ? "dx" : "dlhs", &job.lhs},
                                                                     {sddmm ? "dy" : "drhs", &job.rhs}};
  auto grad_path = [&](std::size_t i) { return prefix + grads[i].first + ".npy"; };
  // The output paths before any compute: a typo fails now, not after the run.
  for (const char* k : {"out", "json"})
    if (a.has(k)) io::check_writable(a.get(k));
  for (std::size_t i = 0; i < slots.size() && !dout.empty(); ++i) io::check_writable(grad_path(i));
  const int warmup = int(a.integer("warmup", 3, 0, kMaxIters)), iters = int(a.integer("iters", 0, 0, kMaxIters));
  job.warmup = warmup, job.iters = iters;

  // Reordering: node tensors into the new order, results back; edge tensors keep the file's.
  const Ordering ordering = parse_ordering(a.get("reorder", "none"));
  const auto t0 = std::chrono::steady_clock::now();
  const Reordered re = reorder(g, ordering);
  const double reorder_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto to_new = [&](const std::vector<float>& x) { return gather_rows(x, re.order); };
  auto back = [&](const auto& x) { return gather_rows(x, re.position); };
  MessageJob run = job;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].target != Target::E) (i == 0 ? run.lhs : run.rhs).data = to_new((i == 0 ? job.lhs : job.rhs).data);
  run.dout = sddmm ? dout : to_new(dout);

  const Backend backend = backend_option(a);
  const auto t1 = std::chrono::steady_clock::now();
  MessageResult r = run_message(re.graph, run, backend);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  if (!sddmm) r.out = back(r.out), r.arg = back(r.arg);
  if (slots[0].target != Target::E) r.dlhs = back(r.dlhs);
  if (slots.size() > 1 && slots[1].target != Target::E) r.drhs = back(r.drhs);

  const std::string what = sddmm ? std::string(to_string(job.op)) : to_string(job.message) + " " + to_string(job.reduce);
  std::printf("%s %s N=%zu E=%zu H=%d D=%d reorder=%s (%.1f ms) backend=%s time=%.3f ms (with transfers)\n",
              sddmm ? "sddmm" : "spmm", what.c_str(), N, E, job.H, job.D, to_string(ordering), reorder_ms,
              backend_name(backend), ms);
  const Traffic bytes = traffic(g, job, slots, r.out.size(), !r.arg.empty());
  if (iters > 0) {
    std::printf("forward: median %.4f ms, min %.4f ms over %d runs (%.1f GB/s compulsory, %.1f GB/s gather model)\n",
                r.forward.median_ms, r.forward.min_ms, iters, bytes.compulsory / (r.forward.median_ms * 1e6),
                bytes.gather / (r.forward.median_ms * 1e6));
    if (!dout.empty()) std::printf("backward: median %.4f ms, min %.4f ms\n", r.backward.median_ms, r.backward.min_ms);
  }
  if (a.has("json")) {
    std::FILE* json = std::fopen(a.get("json").c_str(), "a");
    if (!json) throw Error(a.get("json") + ": cannot open for writing");
    std::fprintf(json,
                 "{\"name\": \"%s\", \"kernel\": \"%s\", \"op\": \"%s\", \"N\": %zu, \"E\": %zu, \"H\": %d, \"D\": %d, "
                 "\"reorder\": \"%s\", \"reorder_ms\": %.3f, \"backend\": \"%s\", \"ms\": %.6f, \"min_ms\": %.6f, "
                 "\"bwd_ms\": %.6f, \"extra_mib\": %.2f, \"compulsory_bytes\": %.0f, \"gather_bytes\": %.0f}\n",
                 json_escaped(a.get("name", a.get("graph"))).c_str(), sddmm ? "sddmm" : "spmm", what.c_str(), N, E, job.H, job.D,
                 to_string(ordering), reorder_ms, backend_name(backend), r.forward.median_ms, r.forward.min_ms,
                 r.backward.median_ms, r.extra_mib, bytes.compulsory, bytes.gather);
    std::fclose(json);
  }
  if (a.has("out")) io::write_npy_f32(a.get("out"), out_shape, r.out.data());
  if (!dout.empty()) {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const HostTensor& t = *grads[i].second;
      io::write_npy_f32(grad_path(i), {std::int64_t(t.rows), t.heads, t.dim},
                        (i == 0 ? r.dlhs : r.drhs).data());
    }
    std::printf("backward: wrote %zu gradients to %s*.npy\n", slots.size(), prefix.c_str());
  }
  if (!a.flag("reference")) return 0;
  // The float64 reference on the file's graph and order: checks the reordering too.
  const Operand x{job.lhs.data.data(), job.lhs.heads, job.lhs.dim};
  const Operand y{job.rhs.data.data(), job.rhs.heads, job.rhs.dim};
  const int D = sddmm && job.op == BinaryOp::Dot ? std::max(job.lhs.dim, job.rhs.dim) : job.D;
  std::vector<std::pair<std::string, double>> errors{
      {"out", max_relative_error(r.out.data(), sddmm ? reference_gsddmm(g, job.op, job.H, D, x, y)
                                                     : reference_gspmm(g, job.message, job.reduce, job.H, job.D, x, y))}};
  if (!dout.empty()) {
    std::vector<double> ref_l, ref_r;
    if (sddmm) {
      GsddmmGradients ref = reference_gsddmm_backward(g, job.op, job.H, D, x, y, dout.data());
      ref_l = std::move(ref.dx), ref_r = std::move(ref.dy);
    } else {  // with the kernel's winners: a near-tie may go either way in float32
      GspmmGradients ref = reference_gspmm_backward(g, job.message, job.reduce, job.H, job.D, x, y, r.arg.data(),
                                                    dout.data());
      ref_l = std::move(ref.dlhs), ref_r = std::move(ref.drhs);
    }
    errors.emplace_back(grads[0].first, max_relative_error(r.dlhs.data(), ref_l));
    if (slots.size() > 1) errors.emplace_back(grads[1].first, max_relative_error(r.drhs.data(), ref_r));
  }
  int status = 0;
  for (const auto& [name, err] : errors) {
    std::printf("max relative error of %s vs float64 reference: %.3g\n", name.c_str(), err);
    if (!(err <= 1e-4)) {
      std::fprintf(stderr, "dfgnn: error: %s relative error %.3g exceeds 1e-4\n", name.c_str(), err);
      status = 1;
    }
  }
  return status;
}

int spmm(const Args& a) { return run_command(a, false); }
int sddmm(const Args& a) { return run_command(a, true); }

// What spmm and sddmm share besides their operands.
const Section& message_section() {
  static const Section s{
      "spmm, sddmm",
      {{"heads", "H", "heads (default 1)"},
       {"dim", "D", "features per head (default: from the operand files, else 64)"},
       {"seed", "S", "seed of the random operands (default 1)"},
       {"out", "F.npy", "the output"},
       {"reference", "", "also run the float64 reference and fail (exit 1) beyond 1e-4"},
       {"grad-out", "G.npy", "dLoss/dout: also run the backward and write PREFIX{dlhs,drhs}.npy |\nPREFIX{dx,dy}.npy"},
       {"grad-prefix", "PREFIX", "where the gradients go (default \"grad_\")"},
       {"reorder", "none|rcm|degree", "run on the renumbered graph (results in file order)"},
       {"iters", "N", "time the kernels: the median of N runs (bandwidth of the forward)"},
       {"warmup", "W", "untimed runs before them (default 3)"},
       {"backend", "B", "auto|kokkos|cuda"},
       {"json", "F", "append one JSON object per run to F"},
       {"name", "NAME", "the record's name (default: the graph)"}},
      "Operands: node tensors [N,..], edge tensors [E,..] in file order, each [R], [R,H], [R,H*D]\n"
      "or [R,1|H,1|D] (axes of 1 broadcast); missing ones are random [R,H,D] (--seed).\n"
      "docs/message_passing.md has the semantics."};
  return s;
}

}  // namespace

const Command& spmm_command() {
  static const Section own{
      "spmm (out[v] = reduce over u -> v of the message)",
      {{"message", "M", "copy_u | copy_e | u_OP_e | u_OP_v (OP add, sub, mul, div)"},
       {"reduce", "R", "sum|mean|max|min"},
       {"lhs", "F", "the message's left operand (on u; on e for copy_e)"},
       {"rhs", "F", "its right operand (on e or v)"}},
      ""};
  static const Command c{"spmm", "--graph FILE --message M --reduce sum|mean|max|min [options]",
                         {&graph_section(), &own, &message_section()}, spmm};
  return c;
}

const Command& sddmm_command() {
  static const Section own{"sddmm (out[e] = OP(x[u], y[v]) for every edge u -> v, in file order)",
                           {{"op", "OP", "add|sub|mul|div|dot: out [E,H,D] ([E,H,1] for dot)"},
                            {"x", "F", "the source operand"},
                            {"y", "F", "the destination operand"}},
                           ""};
  static const Command c{"sddmm", "--graph FILE --op add|sub|mul|div|dot [options]",
                         {&graph_section(), &own, &message_section()}, sddmm};
  return c;
}

}  // namespace dfgnn::cli
