// The CLI's --reference (reference_check.hpp).

#include "reference_check.hpp"

#include <dfgnn/reference.hpp>
#include <dfgnn/reference_backward.hpp>

#include <cstdio>
#include <random>
#include <tuple>
#include <utility>

namespace dfgnn::cli {

namespace {

// The reference's options of a run: its edge values and edge features.
ReferenceOptions reference_options(const Inputs& in) {
  ReferenceOptions w(HostEdgeValues{in.edge_values.empty() ? nullptr : in.edge_values.data(), in.edge_value_heads});
  w.edge_features = in.edges() ? in.edge_features.data() : nullptr;
  return w;
}

// Rows `index` of x, a tensor of `count` rows (empty stays empty).
template <class Index>
std::vector<float> rows_of(const std::vector<float>& x, std::size_t count, const std::vector<Index>& index) {
  if (x.empty() || count == 0) return {};
  const std::size_t w = x.size() / count;
  std::vector<float> r;
  r.reserve(index.size() * w);
  for (const auto i : index) r.insert(r.end(), x.begin() + std::size_t(i) * w, x.begin() + (std::size_t(i) + 1) * w);
  return r;
}

// The reference's arguments of the inputs of the run's model (reference.hpp), in its order: each
// input's data (null for one left out, as the reference takes it), a head vector's (AGNN's beta)
// followed by its count.
template <class Model, std::size_t... I>
auto reference_inputs(const Inputs& in, std::index_sequence<I...>) {
  const auto input = [&](auto i) {
    const float* data = in.given(int(i)) ? in.tensors[i].data() : nullptr;
    if constexpr (Model::args.inputs[decltype(i)::value].extent == Extent::HeadVector)
      return std::tuple(data, int(in.count()));
    else
      return std::tuple(data);
  };
  return std::tuple_cat(input(std::integral_constant<std::size_t, I>{})...);
}

// f(model, arguments...): the run's model with its parameter (--scale, --slope) and the
// reference's arguments of its inputs.
template <class F>
auto with_reference_inputs(const Inputs& in, const F& f) {
  return visit_model(in.kind, [&](auto model) {
    using Model = decltype(model);
    return std::apply(f, std::tuple_cat(std::tuple(with_param<Model>(in.param)),
                                        reference_inputs<Model>(in, std::make_index_sequence<Model::args.count>{})));
  });
}

}  // namespace

std::vector<double> run_reference(const HostGraph& g, const Inputs& in, std::vector<double>* weights) {
  ReferenceOptions w = reference_options(in);
  w.weights = weights;
  return with_reference_inputs(in, [&](const auto& model, auto... x) {
    return reference_attention(g, int(in.H), int(in.D), model, x..., w);
  });
}

std::vector<std::vector<double>> run_reference_backward(const HostGraph& g, const Inputs& in,
                                                        const std::vector<float>& dout) {
  ReferenceOptions w = reference_options(in);
  w.dropout = in.dropout;
  std::vector<std::vector<double>> all = with_reference_inputs(in, [&](const auto& model, auto... x) {
    return by_position(reference_attention_backward(g, int(in.H), int(in.D), model, x..., dout.data(), w));
  });
  std::vector<std::vector<double>> r;  // those of the gradients the run writes
  for (const int i : gradient_arguments(in)) r.push_back(std::move(all[std::size_t(i)]));
  return r;
}

double output_tolerance(const Inputs& in) {
  switch (in.dtype) {
    case DType::BF16: return 1e-2;
    case DType::F16: return 2e-3;
    case DType::F32: break;
  }
  return 1e-4;
}

double gradient_tolerance(const Inputs& in, std::size_t i) {
  const Extent e = gradient_extent(in, i);
  if (in.dtype != DType::F32) return 2 * output_tolerance(in);
  return head_argument(e) ? 1e-3 : 1e-4;
}

Reference::Reference(const Args& a, const HostGraph& g, const Inputs& file_in) : graph(&g), in(file_in) {
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
std::vector<float> Reference::dout(const std::vector<float>& file_dout) const {
  return part ? rows_of(file_dout, file_rows, dst_nodes) : file_dout;
}
std::pair<std::vector<float>, std::vector<double>> Reference::compared(const std::vector<float>& file,
                                                                      std::vector<double> ref, Extent e) const {
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


}  // namespace dfgnn::cli
