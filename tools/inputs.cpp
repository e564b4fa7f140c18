// The inputs of a model run from the command line (inputs.hpp).

#include "inputs.hpp"

#include "cli_common.hpp"

#include <dfgnn/io.hpp>

#include <algorithm>
#include <cstdio>
#include <map>

namespace dfgnn::cli {

std::string option_of(const ArgSpec& arg) {
  std::string option = lower(arg.name);
  std::replace(option.begin(), option.end(), '_', '-');
  return option;
}

namespace {

// The option of a model's scalar parameter (--scale, --slope: model_args' "GT::scale"), or "".
std::string param_option(ScoreKind kind) {
  const char* param = model_args(kind).param;
  if (!param) return "";
  const std::string p = param;
  return p.substr(p.find("::") + 2);
}

// An option of a model argument or parameter, with the models that read it.
struct ModelOption {
  std::string name;
  const ArgSpec* arg;  // null: the parameter
  std::vector<ScoreKind> readers;
};

// Adds model `kind` to the readers of `name` in r (a new entry where r has none of that name).
void add_reader(std::vector<ModelOption>& r, const std::string& name, const ArgSpec* arg, ScoreKind kind) {
  auto it = std::find_if(r.begin(), r.end(), [&](const ModelOption& o) { return o.name == name; });
  if (it == r.end()) it = r.insert(r.end(), {name, arg, {}});
  it->readers.push_back(kind);
}

// Every model's options (its arguments, then its parameter), in the models' order.
std::vector<ModelOption> model_options() {
  std::vector<ModelOption> r;
  for (ScoreKind kind : kModels) {
    const ModelArgs& m = model_args(kind);
    for (int i = 0; i < m.count; ++i) add_reader(r, option_of(m.inputs[i]), &m.inputs[i], kind);
    if (m.param) add_reader(r, param_option(kind), nullptr, kind);
  }
  return r;
}

// The models' edge arguments (--edge-features), each name once, with the models that take it.
std::vector<ModelOption> edge_arguments() {
  std::vector<ModelOption> r;
  for (ScoreKind kind : kModels)
    if (model_args(kind).edge.name) add_reader(r, model_args(kind).edge.name, &model_args(kind).edge, kind);
  return r;
}

// The usage of an argument of extent e.
std::string shape_text(Extent e) {
  switch (e) {
    case Extent::SrcFeatures: return "[NS,H,D] or [NS,H*D]";
    case Extent::DstFeatures: return "[N,H,D] or [N,H*D]";
    case Extent::SrcScalars: return "[NS,H], or [NS] when H = 1";
    case Extent::DstScalars: return "[N,H], or [N] when H = 1";
    case Extent::HeadFeatures: return "[H,D] or [H*D]";
    case Extent::HeadVector: return "one value, or one per head";
    case Extent::EdgeFeatures: return "[E,H,D] or [E,H*D]";
    case Extent::EdgeScalars: return "[E,H], or [E] when H = 1";
  }
  return "";
}

// "a", "a and b", "a, b and c".
std::string listed(const std::vector<std::string>& words) {
  std::string r;
  for (std::size_t i = 0; i < words.size(); ++i)
    r += std::string(i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
  return r;
}

// "gt's", "gat's and gatv2's": the models that read an option.
std::string readers_text(const ModelOption& o) {
  std::vector<std::string> r;
  for (const ScoreKind kind : o.readers) r.push_back(std::string(to_string(kind)) + "'s");
  return listed(r);
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

}  // namespace

std::string gradients_help() {
  std::string all, edge;
  std::vector<ModelOption> edge_gradients;
  for (const ScoreKind kind : kModels) {
    const ModelArgs& m = model_args(kind);
    all += std::string(all.empty() ? "" : " | ") + to_string(kind);
    for (int i = 0; i < m.count; ++i)  // an optional argument's in brackets: written where it is given
      all += m.inputs[i].stand_in < 0 ? std::string(" ") + m.gradients[i] : std::string(" [") + m.gradients[i] + "]";
    if (m.edge_gradient) add_reader(edge_gradients, m.edge_gradient, &m.edge, kind);
  }
  for (const ModelOption& o : edge_gradients) {
    edge += edge.empty() ? "" : " | ";
    for (std::size_t i = 0; i < o.readers.size(); ++i) edge += std::string(i == 0 ? "" : ", ") + to_string(o.readers[i]);
    edge += " " + o.name;
  }
  return all + ";\nwith --edge-features also their gradient: " + edge;
}

std::string head_gradients_help() {
  std::vector<std::string> r;
  for (const ScoreKind kind : kModels) {
    const ModelArgs& m = model_args(kind);
    for (int i = 0; i < m.count; ++i)
      if (head_argument(m.inputs[i].extent))
        r.push_back(m.gradients[i]);
  }
  return listed(r);
}

void reject_foreign_options(const Args& a, ScoreKind kind) {
  for (const ModelOption& o : model_options())
    if (a.has(o.name) && std::find(o.readers.begin(), o.readers.end(), kind) == o.readers.end())
      throw Error("--" + o.name + " does not apply to --model " + to_string(kind));
}

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
  const Op op{in.kind, DType::F32, int(H), int(D), node_t(in.NS), node_t(in.N), edge_t(in.E)};
  std::uint64_t salt = 0;
  for (int i = 0; i < m.count; ++i) {
    const std::string name = option_of(m.inputs[i]);
    const Extent e = m.inputs[i].extent;
    if (!a.has(name) && may_leave_out(op, i)) {
      in.tensors.emplace_back();  // left out: its stand-in serves
      continue;
    }
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
    if (a.flag("symmetrize"))
      throw Error("--edge-values cannot be combined with --symmetrize (it changes the edges and their order)");
    const io::Array w = io::read_npy_f32(path);
    const std::size_t E = std::size_t(g.num_edges());
    in.edge_values = checked(w, path, {{E}, {E, 1}, {E, H}});
    in.edge_value_heads = w.shape.size() == 2 ? int(w.shape[1]) : 1;
  }
  if (a.has("edge-features")) {
    const std::string path = a.get("edge-features");
    if (a.flag("symmetrize"))
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

Renumbered renumbered(HostGraph g, Ordering o) {
  Renumbered r{std::move(g), {}};
  if (o != Ordering::None) r.re = reorder(r.file, o);
  return r;
}

std::vector<float> moved_rows(const std::vector<float>& x, const std::vector<node_t>& index) {
  return index.empty() || x.empty() ? x : gather_rows(x, index);  // empty: an argument left out
}

Inputs in_order(const Inputs& in, const std::vector<node_t>& index) {
  Inputs r = in;
  for (int i = 0; i < in.args().count; ++i)
    if (node_rows(in.args().inputs[i].extent)) r.tensors[std::size_t(i)] = moved_rows(in.tensors[std::size_t(i)], index);
  return r;
}

const Section& run_section() {
  static const Section s = [] {
    Section r{"model run (attention, bench)",
              {{"model", "M", model_names("|")},
               {"heads", "H", "heads (default 1)"},
               {"dim", "D", "features per head (default: the input files', else 64)"}},
              "Sources are NS, destinations N (NS = N unless bipartite), edges E, in file order."};
    for (const ModelOption& o : model_options()) {
      if (o.arg) continue;
      // The default (the model's param()): GT's 0 is the API's 1/sqrt(D).
      const float fallback = visit_model(o.readers[0], [](auto model) { return model.param(); });
      char value[32];
      std::snprintf(value, sizeof value, "%g", double(fallback));
      r.options.push_back({o.name, "S", readers_text(o) + " " + o.name + " (default " +
                                            (fallback == 0.0f ? "1/sqrt(D)" : value) + ")"});
    }
    r.options.insert(
        r.options.end(),
        {{"seed", "S", "seed of the random inputs and the dropout mask (default 1)"},
         {"dtype", "f32|bf16|f16",
          "the tensors' element type (default f32; bf16 and f16 run Online): every\n"
          "input (and dOut) is rounded to it (nearest even) and computed in float32;\n"
          "the .npy outputs and gradients stay float32, holding its values"},
         {"dropout", "P",
          "attention dropout rate of the training forward and backward (attention:\n"
          "with --grad-out; bench: --backward), in [0, 1); the mask is a hash of\n"
          "(--seed, edge, head), as in the API, so --reference checks it too"},
         {"reorder", "none|rcm|degree",
          "run on the renumbered graph (reorder.hpp; rcm gathers nearby rows): node\n"
          "inputs go into its order, the output and gradients come back in the file's;\n"
          "edge values, edge features and the dropout mask keep file order"}});
    return r;
  }();
  return s;
}

const Section& input_section() {
  static const Section s = [] {
    Section r{"attention inputs (.npy float32/float64, C order)", {}, ""};
    for (const ModelOption& o : model_options()) {
      if (!o.arg) continue;
      // An optional argument's stand-in (of its model: an option's readers share its arguments).
      const std::string left_out =
          o.arg->stand_in < 0 ? ""
                              : std::string(";\nleft out, ") + model_args(o.readers[0]).inputs[o.arg->stand_in].name +
                                    " (square graphs; a bipartite one draws it)";
      r.options.push_back({o.name, o.arg->extent == Extent::HeadVector ? "B|B1,..,BH" : "F",
                           readers_text(o) + " " + o.arg->name + ": " + shape_text(o.arg->extent) + left_out});
    }
    std::string edges;
    for (const ModelOption& o : edge_arguments())
      edges += (edges.empty() ? "" : ";\n") + readers_text(o) + " " + o.name + ": " + shape_text(o.arg->extent);
    r.options.insert(r.options.end(),
                     {{"edge-values", "F.npy", "per-edge score multipliers [E] or [E,H]"},
                      {"edge-features", "F.npy",
                       "the model's edge features (PyG's edge_dim, projected), inside its\n"
                       "score (gt's also added to the value):\n" + edges}});
    r.notes = "Inputs not given are drawn uniformly from [-1,1] (--seed; --dim).";
    return r;
  }();
  return s;
}

}  // namespace dfgnn::cli
