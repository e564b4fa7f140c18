// Real model inputs: bipartite graphs (NS sources, N destinations, NS != N; AGNN with its
// X_dst) and edge features (PyG's edge_dim: GT, GAT and GATv2), forward and backward through
// every strategy against the float64 reference; what a bipartite graph cannot run, and edge
// features of the wrong shape.

#include "expect_error.hpp"
#include "gradient_check.hpp"
#include "graphs.hpp"

#include <dfgnn/backward.hpp>
#include <dfgnn/reference_backward.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <exception>
#include <string>
#include <type_traits>
#include <tuple>

namespace {

using namespace dfgnn;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using View1 = Kokkos::View<float*, Mem>;

// Row 0 takes 20000 in-edges, beyond any team scratch and shared memory, and source 1 sends
// 3000 edges (a heavy column for the backward); the other rows 3 edges each.
HostGraph super_row(unsigned seed) {
  const node_t ns = 25000, n = 60;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<node_t> any(0, ns - 1), row(0, n - 1);
  std::vector<node_t> src, dst;
  for (int i = 0; i < 20000; ++i) src.push_back(any(rng)), dst.push_back(0);
  for (int i = 0; i < 3000; ++i) src.push_back(1), dst.push_back(row(rng));
  for (node_t v = 1; v < n; ++v)
    for (int k = 0; k < 3; ++k) src.push_back(any(rng)), dst.push_back(v);
  return graph_from_edges(ns, n, src, dst);
}

const std::vector<test::NamedGraph>& graphs() {
  static const std::vector<test::NamedGraph> gs{
      {"more_sources", test::random_bipartite(400, 150, 350, 120, 2400, 1)},
      {"fewer_sources", test::random_bipartite(40, 300, 40, 300, 2000, 2)},
      {"super_row", super_row(3)},
      {"one_edge", graph_from_edges(3, 2, {2}, {1})},
      {"no_destinations", graph_from_edges(5, 0, {}, {})},
      {"no_sources", graph_from_edges(0, 6, {}, {})},
  };
  return gs;
}

std::size_t entries(const TensorRef& t) { return t.entries(); }

// One model's random inputs on a bipartite graph, sized by side from its arguments' extents;
// the forward (training mode) and backward through a plan, and the float64 reference.
struct Case {
  ScoreKind kind;
  const HostGraph& g;
  int H, D;
  unsigned seed;
  int edge_value_heads = 0;
  Dropout dropout{};
  bool edge_features = false;  // the model's edge argument (types.hpp), and its gradient
  EdgeShape edge_shape{};      // GT's edge columns [E, heads, width]; 0: [E,H,D]

  // The model's inputs (GATv2's a scaled like an initialised layer so scores stay O(1); AGNN's
  // beta one per head), dOut and edge values.
  std::vector<std::vector<float>> inputs(const Op& op) const {
    std::vector<std::vector<float>> r;
    const ModelArgs& m = model_args(kind);
    for (int i = 0; i < m.count; ++i) {
      const TensorRef shape = TensorRef::shaped(nullptr, op, m.inputs[i].extent, std::size_t(H));
      auto x = test::random_values(entries(shape), seed * 31 + unsigned(i));
      if (m.inputs[i].extent == Extent::HeadFeatures)
        for (float& v : x) v /= std::sqrt(float(D));
      r.push_back(std::move(x));
    }
    return r;
  }
  std::vector<float> dout(const Op& op) const {
    return test::random_values(entries(TensorRef::shaped(nullptr, op, Extent::DstFeatures)), seed * 31 + 7);
  }
  TensorRef edge_ref(const void* data, const Op& op) const {
    TensorRef t = TensorRef::shaped(data, op, model_args(kind).edge.extent);
    if (edge_shape.heads) t.extents[1] = std::size_t(edge_shape.heads), t.extents[2] = std::size_t(edge_shape.width);
    return t;
  }
  std::vector<float> edges(const Op& op) const {
    if (!edge_features) return {};
    return test::random_values(entries(edge_ref(nullptr, op)), seed * 31 + 9);
  }
  std::vector<float> edge_values() const {
    return test::random_values(std::size_t(g.num_edges()) * std::size_t(edge_value_heads), seed + 8, 0.1f, 2.0f);
  }
  Op op() const { return Op{kind, DType::F32, H, D, g.num_src_nodes, g.num_nodes, g.num_edges()}; }

  ReferenceOptions options(const std::vector<float>& w, const std::vector<float>& e) const {
    ReferenceOptions o(HostEdgeValues{edge_value_heads ? w.data() : nullptr, edge_value_heads});
    o.dropout = dropout;
    o.edge_features = edge_features ? e.data() : nullptr;
    o.edge_heads = edge_shape.heads, o.edge_width = edge_shape.width;
    return o;
  }

  // out, then the gradients in model_args order (and the edge argument's), all in float64.
  std::vector<std::vector<double>> reference() const {
    const auto in = inputs(op());
    const auto dy = dout(op()), w = edge_values(), e = edges(op());
    const ReferenceOptions o = options(w, e);
    return visit_model(kind, [&](auto model) -> std::vector<std::vector<double>> {
      using Model = decltype(model);
      if constexpr (Model::kind == ScoreKind::AGNN) {  // beta's count after it; no edge argument
        std::vector<std::vector<double>> all = by_position(
            reference_attention_backward(g, H, D, model, in[0].data(), in[1].data(), H, in[2].data(), dy.data(), o));
        all.insert(all.begin(), reference_attention(g, H, D, model, in[0].data(), in[1].data(), H, in[2].data(), o));
        return all;
      } else {
        const Model m{};
        const auto out = reference_attention(g, H, D, m, in[0].data(), in[1].data(), in[2].data(), o);
        const auto r = reference_attention_backward(g, H, D, m, in[0].data(), in[1].data(), in[2].data(), dy.data(), o);
        std::vector<std::vector<double>> all = by_position(r);
        all.insert(all.begin(), out);
        if (!edge_features) all.pop_back();
        return all;
      }
    });
  }

  // The same through the library (outputs and gradients poisoned with NaN first).
  std::vector<std::vector<float>> run(Strategy strategy, Backend backend) const {
    Exec exec;
    const Plan<Exec> plan(exec, Graph<Mem>(g), kind, H, D, strategy, backend);
    const Op& op = plan.op();
    const ModelArgs& m = model_args(kind);
    const auto host = inputs(op);
    std::vector<View1> in, grads;
    Tensors x, dx;
    x.count = dx.count = m.count;
    for (int i = 0; i < m.count; ++i) {
      in.push_back(detail::upload<float, Mem>("input", host[std::size_t(i)]));
      grads.emplace_back("grad", host[std::size_t(i)].size());
      Kokkos::deep_copy(grads.back(), std::numeric_limits<float>::quiet_NaN());
      x.refs[i] = TensorRef::shaped(in.back().data(), op, m.inputs[i].extent, std::size_t(H));
      dx.refs[i] = TensorRef::shaped(grads.back().data(), op, m.inputs[i].extent, std::size_t(H));
    }
    if (edge_features) {  // last in both lists
      const auto host_edges = edges(op);
      in.push_back(detail::upload<float, Mem>("edges", host_edges));
      grads.emplace_back("edge_grad", host_edges.size());
      Kokkos::deep_copy(grads.back(), std::numeric_limits<float>::quiet_NaN());
      x.refs[x.count++] = edge_ref(in.back().data(), op);
      dx.refs[dx.count++] = edge_ref(grads.back().data(), op);
    }
    const std::size_t n = std::size_t(g.num_nodes), h = std::size_t(H), d = std::size_t(D);
    const auto w = detail::upload<float, Mem>("w", edge_values());
    const auto dy = detail::upload<float, Mem>("dout", dout(op));
    Options<Mem> opt;
    if (edge_value_heads)
      opt.edge_values = EdgeValues<Mem>(w.data(), std::size_t(g.num_edges()), std::size_t(edge_value_heads));
    opt.dropout = dropout;
    opt.logsumexp = decltype(opt.logsumexp)("lse", n, h);
    NodeOutput<Mem> out("out", n, h, d);
    Kokkos::deep_copy(out, std::numeric_limits<float>::quiet_NaN());
    visit_model(kind, [&](auto model) {
      attention(exec, plan, model, x, out, opt);
      attention_backward(exec, plan, model, x, out, opt.logsumexp, NodeFeatures<Mem>(dy.data(), n, h, d), dx, opt);
    });
    exec.fence();
    const auto to_host = [](const auto& v) {
      const auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
      return std::vector<float>(m.data(), m.data() + m.size());
    };
    std::vector<std::vector<float>> r{to_host(out)};
    for (const View1& v : grads) r.push_back(to_host(v));
    return r;
  }
};

// What runs here: Auto, and where Auto picks the CUDA-native kernels the portable ones too.
std::vector<Backend> backends() {
#ifdef DFGNN_NATIVE_CUDA
  if (std::is_same_v<Exec, Kokkos::Cuda>) return {Backend::Auto, Backend::Portable};
#endif
  return {Backend::Auto};
}

// Whether Auto runs the CUDA-native kernels, which take edge features on Online alone (Auto picks
// it): with another strategy they refuse them by name, where the portable kernels take them.
bool native_refuses_edges(const Case& c, Strategy strategy, Backend backend) {
#ifdef DFGNN_NATIVE_CUDA
  return std::is_same_v<Exec, Kokkos::Cuda> && backend == Backend::Auto && c.edge_features &&
         strategy != Strategy::Online && strategy != Strategy::Auto;
#else
  (void)c, (void)strategy, (void)backend;
  return false;
#endif
}

void expect_matches(const Case& c, Strategy strategy, const std::string& label) {
  const auto ref = c.reference();
  auto names = test::gradient_names(c.kind);
  if (c.edge_features) names.push_back(model_args(c.kind).edge_gradient);
  for (Backend backend : backends()) {
    const std::string where = label + (backend == Backend::Portable ? " portable" : " auto");
    if (native_refuses_edges(c, strategy, backend)) {
      try {
        c.run(strategy, backend);
        ADD_FAILURE() << where << ": the CUDA-native kernels took edge features on " << to_string(strategy);
      } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("takes no edge features"), std::string::npos) << where << ": " << e.what();
      }
      continue;
    }
    const auto got = c.run(strategy, backend);
    EXPECT_LT(max_relative_error(got[0].data(), ref[0]), 1e-5) << where << " out";
    for (std::size_t i = 1; i < ref.size(); ++i)
      EXPECT_LT(test::gradient_error(got[i], ref[i]), test::gradient_tolerance(c.kind, i - 1))
          << where << " " << names[i - 1];
  }
}

using Param = std::tuple<ScoreKind, Strategy, std::pair<int, int>, int>;

class Bipartite : public ::testing::TestWithParam<Param> {};

TEST_P(Bipartite, MatchesFloat64Reference) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = graphs()[std::size_t(graph)];
  expect_matches(Case{kind, g, hd.first, hd.second, unsigned(graph) + 3}, strategy, name);
}

TEST_P(Bipartite, EdgeValuesAndDropout) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = graphs()[std::size_t(graph)];
  expect_matches(Case{kind, g, hd.first, hd.second, unsigned(graph) + 5, hd.first, Dropout{0.3f, 42}}, strategy,
                 name + " edge values and dropout");
}

// The models `Kinds`, every portable strategy, three H x D, the graphs of the list `Graphs`; a
// case is named by its parameters and graph.
template <const std::vector<test::NamedGraph>& (*Graphs)(), class Kinds>
auto all_shapes(const Kinds& kinds) {
  return ::testing::Combine(kinds,
                            ::testing::Values(Strategy::SMMF, Strategy::PMF, Strategy::Unfused, Strategy::Online,
                                              Strategy::Auto),
                            ::testing::Values(std::pair{1, 128}, std::pair{4, 32}, std::pair{3, 7}),
                            ::testing::Range(0, int(Graphs().size())));
}

template <const std::vector<test::NamedGraph>& (*Graphs)()>
std::string name_of(const ::testing::TestParamInfo<Param>& info) {
  const auto [kind, strategy, hd, graph] = info.param;
  return std::string(to_string(kind)) + "_" + to_string(strategy) + "_H" + std::to_string(hd.first) + "D" +
         std::to_string(hd.second) + "_" + Graphs()[std::size_t(graph)].name;
}

// Every model (AGNN with its X_dst).
INSTANTIATE_TEST_SUITE_P(AllShapes, Bipartite,
                         all_shapes<graphs>(::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT,
                                                              ScoreKind::GATv2)),
                         name_of<graphs>);

// ---- edge features ------------------------------------------------------------------------------

// Self loops on every node besides random edges.
HostGraph self_loops(node_t n, std::size_t m, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<node_t> any(0, n - 1);
  std::vector<node_t> src, dst;
  for (node_t v = 0; v < n; ++v) src.push_back(v), dst.push_back(v);
  for (std::size_t i = 0; i < m; ++i) src.push_back(any(rng)), dst.push_back(any(rng));
  return graph_from_edges(n, src, dst);
}

// Square graphs of every shape the kernels treat apart (empty rows, a super node beyond the
// scratch, a batch, one node, none), and a bipartite one.
const std::vector<test::NamedGraph>& edge_graphs() {
  static const std::vector<test::NamedGraph> gs{
      {"random", test::random_graph(300, 2400, 11)},
      {"self_loops", self_loops(60, 300, 12)},
      {"super_node", test::super_node_graph(200, 20000, 13)},
      {"batch", test::batch_of_small_graphs(20, 14)},
      {"one_node", graph_from_edges(1, {0}, {0})},
      {"empty", graph_from_edges(0, {}, {})},
      {"bipartite", test::random_bipartite(400, 150, 350, 120, 2400, 15)},
  };
  return gs;
}

class EdgeFeatures : public ::testing::TestWithParam<Param> {};

TEST_P(EdgeFeatures, MatchesFloat64Reference) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = edge_graphs()[std::size_t(graph)];
  Case c{kind, g, hd.first, hd.second, unsigned(graph) + 21};
  c.edge_features = true;
  expect_matches(c, strategy, name + " edge features");
}

TEST_P(EdgeFeatures, WithEdgeValuesAndDropout) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = edge_graphs()[std::size_t(graph)];
  Case c{kind, g, hd.first, hd.second, unsigned(graph) + 23, 1, Dropout{0.3f, 43}};
  c.edge_features = true;
  expect_matches(c, strategy, name + " edge features, edge values and dropout");
}

// Every model with an edge argument.
INSTANTIATE_TEST_SUITE_P(AllShapes, EdgeFeatures,
                         all_shapes<edge_graphs>(::testing::Values(ScoreKind::GT, ScoreKind::GAT, ScoreKind::GATv2)),
                         name_of<edge_graphs>);

// AGNN with its own X_dst on square graphs of every shape (and a bipartite one).
class AgnnDestinations : public ::testing::TestWithParam<Param> {};

TEST_P(AgnnDestinations, MatchesFloat64Reference) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = edge_graphs()[std::size_t(graph)];
  expect_matches(Case{kind, g, hd.first, hd.second, unsigned(graph) + 29}, strategy, name + " X_dst");
  expect_matches(Case{kind, g, hd.first, hd.second, unsigned(graph) + 31, hd.first, Dropout{0.3f, 45}}, strategy,
                 name + " X_dst, edge values and dropout");
}

INSTANTIATE_TEST_SUITE_P(AllShapes, AgnnDestinations, all_shapes<edge_graphs>(::testing::Values(ScoreKind::AGNN)),
                         name_of<edge_graphs>);

// GT's edge columns (types.hpp): [E, heads, F] on each head's last F columns, heads 1 (one row
// for every head: dE sums the heads, SharedEdgeGrad) or H; F a multiple of 4 or not (W = 1).
struct ColumnShape {
  int H, D, heads, F;
};
using ColumnParam = std::tuple<Strategy, ColumnShape, int>;

class EdgeColumns : public ::testing::TestWithParam<ColumnParam> {};

TEST_P(EdgeColumns, MatchesFloat64Reference) {
  const auto [strategy, s, graph] = GetParam();
  const auto& [name, g] = edge_graphs()[std::size_t(graph)];
  Case c{ScoreKind::GT, g, s.H, s.D, unsigned(graph) + 25};
  c.edge_features = true;
  c.edge_shape = {s.heads, s.F};
  expect_matches(c, strategy, name + " edge columns");
  Case d{ScoreKind::GT, g, s.H, s.D, unsigned(graph) + 27, s.H, Dropout{0.3f, 44}};
  d.edge_features = true;
  d.edge_shape = {s.heads, s.F};
  expect_matches(d, strategy, name + " edge columns, edge values and dropout");
}

std::string column_name(const ::testing::TestParamInfo<ColumnParam>& info) {
  const auto [strategy, s, graph] = info.param;
  return std::string(to_string(strategy)) + "_H" + std::to_string(s.H) + "D" + std::to_string(s.D) + "_E" +
         std::to_string(s.heads) + "x" + std::to_string(s.F) + "_" + edge_graphs()[std::size_t(graph)].name;
}

INSTANTIATE_TEST_SUITE_P(
    AllShapes, EdgeColumns,
    ::testing::Combine(::testing::Values(Strategy::SMMF, Strategy::PMF, Strategy::Unfused, Strategy::Online,
                                         Strategy::Auto),
                       ::testing::Values(ColumnShape{1, 144, 1, 16}, ColumnShape{4, 40, 1, 8}, ColumnShape{4, 32, 4, 12},
                                         ColumnShape{3, 7, 1, 3}, ColumnShape{2, 8, 1, 8}),
                       ::testing::Range(0, int(edge_graphs().size()))),
    column_name);

TEST(EdgeFeatureErrors, EdgeColumns) {
  Exec exec;
  const Graph<Mem> g(graph_from_edges(4, 3, {0, 3}, {1, 2}));
  const Plan<Exec> plan(exec, g, ScoreKind::GT, 2, 5), gatv2(exec, g, ScoreKind::GATv2, 2, 5);
  const View1 q("q", 3 * 10), k("k", 4 * 10), e("e", 2 * 10), de("de", 2 * 10), a("a", 10);
  const NodeFeatures<Mem> Q(q.data(), 3, 2, 5), K(k.data(), 4, 2, 5);
  NodeOutput<Mem> out("out", 3, 2, 5), dq("dq", 3, 2, 5), dk("dk", 4, 2, 5), dv("dv", 4, 2, 5);
  Options<Mem> opt;
  opt.logsumexp = decltype(opt.logsumexp)("lse", 3, 2);
  const auto columns = [&](int heads, int F) { return NodeFeatures<Mem>(e.data(), 2, std::size_t(heads), std::size_t(F)); };
  test::expect_error([&] { attention(exec, plan, GT{}, tensors(Q, K, K, columns(1, 6)), out); },
                     {"attention: E has shape [2,1,6], expected [E,H,D] = [2,2,5] or edge columns [E,1 or H,F] with F <= D = 5"});
  test::expect_error([&] { attention(exec, plan, GT{}, tensors(Q, K, K, NodeFeatures<Mem>(e.data(), 2, 3, 2)), out); },
                     {"attention: E has shape [2,3,2], expected [E,H,D] = [2,2,5] or edge columns"});
  attention(exec, plan, GT{}, tensors(Q, K, K, columns(1, 3)), out, opt);
  test::expect_error([&] {
    attention_backward(exec, plan, GT{}, tensors(Q, K, K, columns(1, 3)), out, opt.logsumexp, Q,
                       tensors(dq, dk, dv, NodeOutput<Mem>(de.data(), 2, 2, 3)), opt);
  }, {"attention_backward: dE has shape [2,2,3], expected [E,1 or H,F] as E = [2,1,3]"});
  // GATv2's edge features sit inside its LeakyReLU: no factored form, [E,H,D] only.
  const HeadFeatures<Mem> A(a.data(), 2, 5);
  test::expect_error([&] { attention(exec, gatv2, GATv2{}, tensors(K, Q, A, columns(1, 3)), out); },
                     {"attention: E has shape [2,1,3], expected [E,H,D] = [2,2,5]"});
}

TEST(EdgeFeatureErrors, ShapesAndModels) {
  Exec exec;
  const Graph<Mem> g(graph_from_edges(4, 3, {0, 3}, {1, 2}));
  const Plan<Exec> plan(exec, g, ScoreKind::GT, 2, 5);
  const View1 q("q", 3 * 10), k("k", 4 * 10), v("v", 4 * 10), e("e", 5 * 10), de("de", 2 * 10);
  const NodeFeatures<Mem> Q(q.data(), 3, 2, 5), K(k.data(), 4, 2, 5), V(v.data(), 4, 2, 5);
  NodeOutput<Mem> out("out", 3, 2, 5), dq("dq", 3, 2, 5), dk("dk", 4, 2, 5), dv("dv", 4, 2, 5);
  Options<Mem> opt;
  opt.logsumexp = decltype(opt.logsumexp)("lse", 3, 2);
  test::expect_error([&] { attention(exec, plan, GT{}, tensors(Q, K, V, NodeFeatures<Mem>(e.data(), 5, 2, 5)), out); },
                     {"attention: E has shape [5,2,5], expected [E,H,D] = [2,2,5]"});
  test::expect_error([&] { attention(exec, plan, GT{}, tensors(Q, K, V, NodeFeatures<Mem>(e.data(), 2, 5, 1)), out); },
                     {"attention: E has shape [2,5,1], expected [E,H,D] = [2,2,5]"});
  const NodeFeatures<Mem> E(e.data(), 2, 2, 5);
  attention(exec, plan, GT{}, tensors(Q, K, V, E), out, opt);
  const NodeFeatures<Mem> dOut(q.data(), 3, 2, 5);
  test::expect_error([&] {
    attention_backward(exec, plan, GT{}, tensors(Q, K, V, E), out, opt.logsumexp, dOut, tensors(dq, dk, dv), opt);
  }, {"attention_backward: dE has shape [], expected [E,H,D] = [2,2,5]"});
  test::expect_error([&] {
    attention_backward(exec, plan, GT{}, tensors(Q, K, V), out, opt.logsumexp, dOut,
                       tensors(dq, dk, dv, NodeOutput<Mem>(de.data(), 2, 2, 5)), opt);
  }, {"attention_backward: an edge-feature gradient was passed without edge features"});
  test::expect_error([&] {
    attention_backward(exec, plan, GT{}, tensors(Q, K, V, E), out, opt.logsumexp, dOut,
                       tensors(dq, dk, dv, NodeOutput<Mem>(e.data(), 2, 2, 5)), opt);
  }, {"attention_backward: dE overlaps E"});
  // AGNN has no edge argument; GAT's is a scalar per (edge, head).
  const Graph<Mem> square(graph_from_edges(3, {0, 2}, {1, 2}));
  const Plan<Exec> agnn(exec, square, ScoreKind::AGNN, 2, 5), gat(exec, square, ScoreKind::GAT, 2, 5);
  const HeadScalars<Mem> beta(q.data(), 2);
  test::expect_error([&] { attention(exec, agnn, AGNN{}, tensors(Q, beta, Q, E), out); },
                     {"attention: 4 tensors, the model takes 3 and no edge argument"});
  Call c = detail::pointer_call(agnn.op(), ScoreKind::AGNN, std::vector<const void*>{q.data(), q.data(), nullptr}.data(),
                                2, nullptr, 0, Dropout{}, e.data());
  detail::set_outputs(c, agnn.op(), out.data(), nullptr);
  test::expect_error([&] { detail::check_forward("cuda::attention", agnn.op(), ScoreKind::AGNN, c); },
                     {"cuda::attention: agnn takes no edge features"});
  const NodeScalars<Mem> el(q.data(), 3, 2), er(k.data(), 3, 2);
  test::expect_error([&] { attention(exec, gat, GAT{}, tensors(el, er, Q, E), out); },
                     {"attention: ee has shape [2,2,5], expected [E,H] = [2,2]"});
}

// ---- what a bipartite graph cannot run ---------------------------------------------------------

// X stands in for AGNN's X_dst on a square graph only; X_dst and its gradient come together.
TEST(BipartiteErrors, AgnnXDst) {
  Exec exec;
  const Graph<Mem> g(graph_from_edges(4, 3, {0, 3}, {1, 2}));
  const Plan<Exec> plan(exec, g, ScoreKind::AGNN, 2, 5);
  const View1 x("x", 4 * 10), y("y", 4 * 10), b("b", 2), dx("dx", 4 * 10), dy("dy", 4 * 10), db("db", 2);
  Kokkos::deep_copy(x, 1.0f), Kokkos::deep_copy(y, 1.0f), Kokkos::deep_copy(b, 1.0f);
  const NodeFeatures<Mem> X(x.data(), 4, 2, 5), Y(y.data(), 3, 2, 5);
  const HeadScalars<Mem> beta(b.data(), 2);
  NodeOutput<Mem> out("out", 3, 2, 5), dX(dx.data(), 4, 2, 5), dY(dy.data(), 3, 2, 5);
  const HeadScalarsOutput<Mem> dbeta(db.data(), 2);
  Options<Mem> opt;
  opt.logsumexp = decltype(opt.logsumexp)("lse", 3, 2);
  test::expect_error([&] { attention(exec, plan, AGNN{}, X, beta, out); },
                     {"attention: X_dst is missing: X stands in for it on a square graph only; pass X_dst [N,H,D] = "
                      "[3,2,5]"});
  test::expect_error([&] { attention(exec, plan, AGNN{}, X, beta, NodeFeatures<Mem>(y.data(), 4, 2, 5), out); },
                     {"attention: X_dst has shape [4,2,5], expected [N,H,D] = [3,2,5]"});
  attention(exec, plan, AGNN{}, X, beta, Y, out, opt);
  test::expect_error([&] {
    attention_backward(exec, plan, AGNN{}, tensors(X, beta, Y), out, opt.logsumexp, out, tensors(dX, dbeta), opt);
  }, {"attention_backward: dX_dst has shape [], expected [N,H,D] = [3,2,5]"});
  test::expect_error([&] {
    attention_backward(exec, plan, AGNN{}, X, beta, Y, out, opt.logsumexp, out, dX, dbeta, dX, opt);
  }, {"attention_backward: dX_dst has shape [4,2,5], expected [N,H,D] = [3,2,5]"});
  test::expect_error([&] {
    attention_backward(exec, plan, AGNN{}, X, beta, Y, out, opt.logsumexp, out, dX, dbeta,
                       NodeOutput<Mem>(y.data(), 3, 2, 5), opt);
  }, {"attention_backward: dX_dst overlaps X_dst"});
  // On a square graph X stands in; a gradient of the X_dst left out is a mistake.
  const Graph<Mem> square(graph_from_edges(3, {0, 2}, {1, 2}));
  const Plan<Exec> agnn(exec, square, ScoreKind::AGNN, 2, 5);
  attention(exec, agnn, AGNN{}, Y, beta, out, opt);
  test::expect_error([&] {
    attention_backward(exec, agnn, AGNN{}, tensors(Y, beta), out, opt.logsumexp, out, tensors(dY, dbeta, dX), opt);
  }, {"attention_backward: dX_dst was passed without X_dst"});
  test::expect_error([&] {
    const std::vector<float> x(40, 1.0f), beta{1.0f};
    reference_attention(g.host(), 2, 5, AGNN{}, x.data(), beta.data(), 1);
  }, {"reference_attention", "AGNN", "bipartite", "X_dst"});
}

TEST(BipartiteErrors, ShapesNameEachSide) {
  Exec exec;
  const Graph<Mem> g(graph_from_edges(4, 3, {0, 3}, {1, 2}));
  const Plan<Exec> plan(exec, g, ScoreKind::GT, 2, 5);
  const View1 q("q", 3 * 10), k("k", 4 * 10), v("v", 4 * 10);
  NodeOutput<Mem> out("out", 3, 2, 5);
  // K with the destinations' rows, then out with the sources'.
  test::expect_error([&] {
    attention(exec, plan, GT{}, NodeFeatures<Mem>(q.data(), 3, 2, 5), NodeFeatures<Mem>(k.data(), 3, 2, 5),
              NodeFeatures<Mem>(v.data(), 4, 2, 5), out);
  }, {"attention: K has shape [3,2,5], expected [NS,H,D] = [4,2,5]"});
  test::expect_error([&] {
    attention(exec, plan, GT{}, NodeFeatures<Mem>(q.data(), 3, 2, 5), NodeFeatures<Mem>(k.data(), 4, 2, 5),
              NodeFeatures<Mem>(v.data(), 4, 2, 5), NodeOutput<Mem>("out", 4, 2, 5));
  }, {"attention: out has shape [4,2,5], expected [N,H,D] = [3,2,5]"});
}

TEST(BipartiteErrors, GraphIdsAndBatches) {
  test::expect_error([] { graph_from_edges(2, 5, {2}, {0}); }, {"source id 2 of edge 0 is outside [0, 2)"});
  test::expect_error([] { graph_from_edges(5, 2, {0}, {2}); }, {"destination id 2 of edge 0 is outside [0, 2)"});
  test::expect_error([] { graph_from_csr(2, 1, {0, 1}, {3}); }, {"source id 3 of edge 0 is outside [0, 2)"});
  const HostGraph b = graph_from_edges(4, 3, {0, 3}, {1, 2});
  test::expect_error([&] { batch_graphs({b}); }, {"graph 0 of the batch is bipartite"});
  HostGraph batched = b;
  batched.graph_ptr = {0, 3};
  test::expect_error([&] { validate(batched); }, {"square graph"});
  EXPECT_EQ(independent_blocks(b), (std::vector<node_t>{0, 3}));
}

TEST(BipartiteErrors, PortableHasNoBatchedStrategies) {
  const Graph<Mem> g(graph_from_edges(4, 3, {0, 3}, {1, 2}));
  for (Strategy s : {Strategy::Staged, Strategy::Dense})
    test::expect_error([&] { (void)Plan<Exec>(Exec(), g, ScoreKind::GT, 1, 32, s, Backend::Portable); },
                       {"CUDA-native only"});
}

// The element type is part of the op: the one check names a tensor of another type than the
// plan's (the logsumexp is float32 whatever the type), whichever entry made the call.
TEST(ElementTypes, MixedTypesNameTheArgument) {
  const Op op{ScoreKind::GT, DType::BF16, 2, 4, 3, 3, 2};
  std::vector<std::vector<float>> b(12, std::vector<float>(64));  // distinct buffers, large enough
  Call c = detail::pointer_call(op, ScoreKind::GT, std::vector<const void*>{b[0].data(), b[1].data(), b[2].data()}.data(),
                                0, b[3].data(), 1, Dropout{});
  detail::set_outputs(c, op, b[4].data(), b[5].data(), b[6].data());
  detail::check_forward("f", op, ScoreKind::GT, c);  // every tensor bf16, the logsumexp f32
  const auto expect = [&](TensorRef& t, DType wrong, const std::string& message) {
    const DType right = t.dtype;
    t.dtype = wrong;
    test::expect_error([&] { detail::check_forward("f", op, ScoreKind::GT, c); }, {message});
    t.dtype = right;
  };
  expect(c.inputs[1], DType::F32, "f: K is f32, expected bf16 (the plan's element type)");
  expect(c.out, DType::F16, "f: out is f16, expected bf16 (the plan's element type)");
  expect(c.logsumexp, DType::BF16, "f: logsumexp is bf16, expected f32 (always)");
  expect(c.edge_values, DType::F32, "f: edge_values is f32, expected bf16 (the plan's element type)");
  expect(c.weights, DType::F16, "f: weights is f16, expected bf16 (the plan's element type)");
  std::vector<void*> grads{b[7].data(), b[8].data(), b[9].data()};
  Call back = detail::pointer_call(op, ScoreKind::GT, std::vector<const void*>{b[0].data(), b[1].data(), b[2].data()}.data(),
                                   0, nullptr, 0, Dropout{});
  detail::set_upstream(back, op, ScoreKind::GT, b[4].data(), b[5].data(), b[10].data(), grads.data());
  detail::check_backward("b", op, ScoreKind::GT, back);
  back.grads[2].dtype = DType::F32;
  test::expect_error([&] { detail::check_backward("b", op, ScoreKind::GT, back); },
                     {"b: dV is f32, expected bf16 (the plan's element type)"});
  // AGNN's beta (a per-head vector) and its gradient have the op's type too.
  const Op agnn{ScoreKind::AGNN, DType::F16, 2, 4, 3, 3, 2};
  Call a = detail::pointer_call(agnn, ScoreKind::AGNN, std::vector<const void*>{b[0].data(), b[1].data(), nullptr}.data(),
                                2, nullptr, 0, Dropout{});
  detail::set_outputs(a, agnn, b[4].data(), nullptr);
  detail::check_forward("a", agnn, ScoreKind::AGNN, a);
  a.inputs[1].dtype = DType::F32;
  test::expect_error([&] { detail::check_forward("a", agnn, ScoreKind::AGNN, a); },
                     {"a: beta is f32, expected f16 (the plan's element type)"});
  a = detail::pointer_call(agnn, ScoreKind::AGNN,
                           std::vector<const void*>{b[0].data(), b[1].data(), b[2].data()}.data(), 2, nullptr, 0,
                           Dropout{});
  detail::set_outputs(a, agnn, b[4].data(), nullptr);
  detail::check_forward("a", agnn, ScoreKind::AGNN, a);
  a.inputs[2].dtype = DType::BF16;
  test::expect_error([&] { detail::check_forward("a", agnn, ScoreKind::AGNN, a); },
                     {"a: X_dst is bf16, expected f16 (the plan's element type)"});
  EXPECT_EQ(parse_dtype("bf16"), DType::BF16);
  EXPECT_EQ(size_of(DType::F16), 2u);
  test::expect_error([] { parse_dtype("f64"); }, {"unknown element type 'f64' (expected f32, bf16 or f16)"});
}

TEST(BipartiteGraph, TransposeHasAColumnPerSource) {
  const HostGraph g = graph_from_edges(5, 2, {4, 0, 4}, {1, 1, 0});
  EXPECT_TRUE(g.bipartite());
  const HostCsc t = transpose(g);
  EXPECT_EQ(t.col_ptr, (std::vector<edge_t>{0, 1, 1, 1, 1, 3}));
  EXPECT_EQ(Graph<Mem>(g).transposed().col_ptr.extent(0), 6u);
}

}  // namespace
