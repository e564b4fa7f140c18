// Real model inputs on the CUDA-native kernels: bipartite graphs (NS sources, N destinations,
// NS != N; AGNN with its X_dst, also on square graphs) and edge features (PyG's edge_dim: GT,
// GAT and GATv2): forward, attention weights and backward through every strategy that runs them
// against the float64 reference (the weights on a square graph too); Staged and Dense refuse
// bipartite graphs, the strategies other than Online edge features. Needs a CUDA device; skips
// otherwise.

#include "../expect_error.hpp"
#include "../gradient_check.hpp"
#include "../graphs.hpp"

#include <dfgnn/cuda.hpp>
#include <dfgnn/generate.hpp>
#include <dfgnn/reference_backward.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace dfgnn;

void ok(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }

// A device buffer of n floats: a copy of `host`, or NaN (all-ones bits) to be overwritten.
struct Buf {
  float* p = nullptr;
  std::size_t n = 0;
  explicit Buf(std::size_t count) : n(count) {
    if (n) ok(cudaMalloc(&p, n * sizeof(float))), ok(cudaMemset(p, 0xff, n * sizeof(float)));
  }
  explicit Buf(const std::vector<float>& host) : Buf(host.size()) {
    if (n) ok(cudaMemcpy(p, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  std::vector<float> host() const {
    std::vector<float> h(n);
    if (n) ok(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }
};

// Row 0 takes 20500 in-edges (beyond shared memory, split for the backward) and source 1 sends
// 20500 (a split column); the other rows one edge each.
HostGraph hubs() {
  const node_t ns = 3000, n = 700;
  std::mt19937 rng(9);
  std::uniform_int_distribution<node_t> s(0, ns - 1), r(0, n - 1);
  std::vector<node_t> src, dst;
  for (int i = 0; i < 20500; ++i) src.push_back(s(rng)), dst.push_back(0), src.push_back(1), dst.push_back(r(rng));
  for (node_t v = 1; v < n; ++v) src.push_back(s(rng)), dst.push_back(v);
  return graph_from_edges(ns, n, src, dst);
}

const std::vector<test::NamedGraph>& graphs() {
  static const std::vector<test::NamedGraph> gs{
      {"more_sources", test::random_bipartite(4000, 1500, 3500, 1200, 30000, 1)},
      {"fewer_sources", test::random_bipartite(40, 3000, 40, 3000, 20000, 2)},
      {"hubs", hubs()},
      {"one_edge", graph_from_edges(3, 2, {2}, {1})},
      {"no_destinations", graph_from_edges(5, 0, {}, {})},
      {"no_sources", graph_from_edges(0, 6, {}, {})},
      {"square", test::random_bipartite(2000, 2000, 2000, 1900, 30000, 3)},
  };
  return gs;
}

// The float64 reference: out, then the gradients in model_args order (AGNN's beta one per head).
std::vector<std::vector<double>> reference(ScoreKind kind, const HostGraph& g, int H, int D,
                                           const std::vector<std::vector<float>>& in, const std::vector<float>& dout,
                                           ReferenceOptions& o, std::vector<double>& weights) {
  o.weights = &weights;
  return visit_model(kind, [&](auto model) -> std::vector<std::vector<double>> {
    using Model = decltype(model);
    if constexpr (Model::kind == ScoreKind::AGNN) {
      const auto out = reference_attention(g, H, D, model, in[0].data(), in[1].data(), H, in[2].data(), o);
      o.weights = nullptr;
      const auto r = reference_attention_backward(g, H, D, model, in[0].data(), in[1].data(), H, in[2].data(),
                                                  dout.data(), o);
      return {out, r.dX, r.dbeta, r.dX_dst};
    } else {
      const auto out = reference_attention(g, H, D, model, in[0].data(), in[1].data(), in[2].data(), o);
      o.weights = nullptr;
      const auto r =
          reference_attention_backward(g, H, D, model, in[0].data(), in[1].data(), in[2].data(), dout.data(), o);
      std::vector<std::vector<double>> all;
      if constexpr (Model::kind == ScoreKind::GT) all = {out, r.dQ, r.dK, r.dV, r.dE};
      if constexpr (Model::kind == ScoreKind::GAT) all = {out, r.del, r.der, r.dV, r.dee};
      if constexpr (Model::kind == ScoreKind::GATv2) all = {out, r.dXL, r.dXR, r.da, r.dE};
      if (o.edge_features == nullptr) all.pop_back();
      return all;
    }
  });
}

// Forward (training mode), attention weights and backward of `kind` on `g`, inputs sized by side
// from the model's extents; with `options`, per-head edge values and dropout; with `edges`, the
// model's edge argument (and its gradient), GT's as edge columns of shape `columns` where given.
// Strategies other than Online refuse edge features.
void expect_matches(ScoreKind kind, Strategy strategy, int H, int D, const test::NamedGraph& named, unsigned seed,
                    bool options, bool edges, EdgeShape columns = {}) {
  const auto& [name, g] = named;
  const cuda::Plan plan(g, kind, H, D, strategy);
  const Op op{kind, DType::F32, H, D, g.num_src_nodes, g.num_nodes, g.num_edges()};
  const ModelArgs& m = model_args(kind);
  std::vector<std::vector<float>> host;
  std::vector<std::unique_ptr<Buf>> in, grads;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  for (int i = 0; i < m.count; ++i) {
    const TensorRef shape = TensorRef::shaped(nullptr, op, m.inputs[i].extent, std::size_t(H));
    auto x = test::random_values(shape.entries(), seed * 10 + unsigned(i));
    if (m.inputs[i].extent == Extent::HeadFeatures)
      for (float& v : x) v /= std::sqrt(float(D));
    in.push_back(std::make_unique<Buf>(x));
    grads.push_back(std::make_unique<Buf>(x.size()));
    inputs.push_back(in.back()->p), outputs.push_back(grads.back()->p);
    host.push_back(std::move(x));
  }
  const std::size_t rows = std::size_t(g.num_nodes) * H;
  const auto dout = test::random_values(rows * D, 77);
  const auto w = test::random_values(std::size_t(g.num_edges()) * H, 78);
  const std::size_t edge_entries = columns.heads ? std::size_t(g.num_edges()) * columns.heads * columns.width
                                                 : TensorRef::shaped(nullptr, op, m.edge.extent).entries();
  const auto e = edges ? test::random_values(edge_entries, seed + 79) : std::vector<float>();
  Buf out(rows * D), lse(rows), dy(dout), dw(w), weights(std::size_t(g.num_edges()) * H), de(e), dde(e.size());
  cuda::Options o(cuda::DeviceEdgeValues{options ? dw.p : nullptr, options ? H : 0});
  o.logsumexp = lse.p;
  o.attention_weights = weights.p;
  if (options) o.dropout = Dropout{0.3f, 42};
  if (edges) o.edge_features = de.p, o.edge_grad = dde.p, o.edge_shape = columns;
  ReferenceOptions ro(HostEdgeValues{options ? w.data() : nullptr, options ? H : 0});
  ro.dropout = o.dropout;
  ro.edge_features = edges ? e.data() : nullptr;
  ro.edge_heads = columns.heads, ro.edge_width = columns.width;
  const float param = visit_model(kind, [](auto model) { return model.param(); });
  const auto forward = [&] {
    cuda::detail::attention(nullptr, plan, kind, param, DType::F32, inputs.data(), std::size_t(H), out.p, o);
  };
  // An empty edge tensor (no edges) is no edge features: every strategy runs such a call.
  if (edges && g.num_edges() > 0 && plan.strategy() != Strategy::Online && strategy != Strategy::Auto) {
    test::expect_error(forward, {"cuda::attention: the", "strategy takes no edge features; Online does"});
    return;
  }
  forward();
  cuda::detail::attention_backward(nullptr, plan, kind, param, DType::F32, inputs.data(), std::size_t(H), out.p, lse.p,
                                   dy.p, outputs.data(), o);
  ok(cudaDeviceSynchronize());
  std::vector<double> ref_weights;
  const auto ref = reference(kind, g, H, D, host, dout, ro, ref_weights);
  auto names = test::gradient_names(kind);
  if (edges) names.push_back(m.edge_gradient), grads.push_back(std::make_unique<Buf>(0));
  const std::string where = name + " " + to_string(plan.strategy());
  EXPECT_LT(max_relative_error(out.host().data(), ref[0]), 1e-5) << where << " out";
  EXPECT_LT(max_relative_error(weights.host().data(), ref_weights), 1e-5) << where << " attention weights";
  for (std::size_t i = 1; i < ref.size(); ++i)
    EXPECT_LT(test::gradient_error(edges && i == ref.size() - 1 ? dde.host() : grads[i - 1]->host(), ref[i]),
              test::gradient_tolerance(kind, i - 1))
        << where << " " << names[i - 1];
}

bool no_device() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0;
}

using Param = std::tuple<ScoreKind, Strategy, std::pair<int, int>, int, bool>;

class BipartiteCuda : public ::testing::TestWithParam<Param> {};

TEST_P(BipartiteCuda, MatchesFloat64Reference) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  const auto [kind, strategy, hd, index, options] = GetParam();
  expect_matches(kind, strategy, hd.first, hd.second, graphs()[std::size_t(index)], unsigned(index), options, false);
}

// A case's name: its parameters and the name of its graph in the list `Graphs`.
template <const std::vector<test::NamedGraph>& (*Graphs)()>
std::string name_of(const ::testing::TestParamInfo<Param>& info) {
  const auto [kind, strategy, hd, graph, options] = info.param;
  return std::string(to_string(kind)) + "_" + to_string(strategy) + "_H" + std::to_string(hd.first) + "D" +
         std::to_string(hd.second) + "_" + Graphs()[std::size_t(graph)].name + (options ? "_options" : "");
}

INSTANTIATE_TEST_SUITE_P(
    AllShapes, BipartiteCuda,
    ::testing::Combine(::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Strategy::Auto, Strategy::SMMF, Strategy::PMF, Strategy::Unfused,
                                         Strategy::Online),
                       ::testing::Values(std::pair{1, 128}, std::pair{4, 32}, std::pair{2, 64}, std::pair{3, 7}),
                       ::testing::Range(0, int(graphs().size())), ::testing::Bool()),
    name_of<graphs>);

// g's edges renumbered in CSR order: the plan then keeps no edge ids (docs/cuda.md, "Device memory").
HostGraph in_csr_order(const HostGraph& g) { return graph_from_csr(g.num_src_nodes, g.num_nodes, g.row_ptr, g.src); }

// Square graphs of the shapes the kernels treat apart (a super node split into pieces, mean
// in-degree 80 where GT's backward would run columns first, a PATTERN-like batch on which Auto
// picks Dense, one node, none) and bipartite ones with split rows and columns.
const std::vector<test::NamedGraph>& edge_graphs() {
  static const std::vector<test::NamedGraph> gs{
      {"random", test::random_graph(3000, 30000, 21)},
      {"super_node", test::super_node_graph(2000, 40000, 22)},
      {"dense_rows", test::random_graph(600, 48000, 23)},
      {"pattern", gen::sbm_batch(gen::SbmKind::Pattern, 16)},
      {"one_node", graph_from_edges(1, {0}, {0})},
      {"empty", graph_from_edges(0, {}, {})},
      {"hubs", hubs()},
      {"more_sources", graphs()[0].graph},
      {"more_sources_in_csr_order", in_csr_order(graphs()[0].graph)},
  };
  return gs;
}

class EdgeFeaturesCuda : public ::testing::TestWithParam<Param> {};

TEST_P(EdgeFeaturesCuda, MatchesFloat64Reference) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  const auto [kind, strategy, hd, index, options] = GetParam();
  expect_matches(kind, strategy, hd.first, hd.second, edge_graphs()[std::size_t(index)], unsigned(index) + 40,
                 options, true);
}

INSTANTIATE_TEST_SUITE_P(
    AllShapes, EdgeFeaturesCuda,
    ::testing::Combine(::testing::Values(ScoreKind::GT, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Strategy::Auto, Strategy::Online, Strategy::PMF),
                       ::testing::Values(std::pair{1, 128}, std::pair{4, 32}, std::pair{2, 64}, std::pair{3, 7}),
                       ::testing::Range(0, int(edge_graphs().size())), ::testing::Bool()),
    name_of<edge_graphs>);

// AGNN with its own X_dst on the square graphs (Auto's Dense runs it Online on the batch) and
// the bipartite ones.
class AgnnDestinationsCuda : public ::testing::TestWithParam<Param> {};

TEST_P(AgnnDestinationsCuda, MatchesFloat64Reference) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  const auto [kind, strategy, hd, index, options] = GetParam();
  expect_matches(kind, strategy, hd.first, hd.second, edge_graphs()[std::size_t(index)], unsigned(index) + 80,
                 options, false);
}

INSTANTIATE_TEST_SUITE_P(
    AllShapes, AgnnDestinationsCuda,
    ::testing::Combine(::testing::Values(ScoreKind::AGNN),
                       ::testing::Values(Strategy::Auto, Strategy::SMMF, Strategy::PMF, Strategy::Unfused,
                                         Strategy::Online),
                       ::testing::Values(std::pair{1, 128}, std::pair{4, 32}, std::pair{2, 64}, std::pair{3, 7}),
                       ::testing::Range(0, int(edge_graphs().size())), ::testing::Bool()),
    name_of<edge_graphs>);

// The batched strategies on a batch, explicit: Staged reads X_dst at its rows, Dense runs the
// call Online (its cosine divides by the staged rows' norms).
TEST(AgnnDestinationsCudaBatched, StagedAndDense) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  const test::NamedGraph pattern{"pattern", gen::sbm_batch(gen::SbmKind::Pattern, 16)};
  for (const Strategy s : {Strategy::Staged, Strategy::Dense})
    for (const bool options : {false, true}) expect_matches(ScoreKind::AGNN, s, 2, 64, pattern, 90, options, false);
}

// GT's edge columns (types.hpp) [E, heads, F]: one row for every head (dE summed by
// shared_edge_grad) or one per head; F in whole 16-byte chunks (vector tiles) or not (scalar).
struct ColumnShape {
  int H, D, heads, F;
};
using ColumnParam = std::tuple<Strategy, ColumnShape, int, bool>;

class EdgeColumnsCuda : public ::testing::TestWithParam<ColumnParam> {};

TEST_P(EdgeColumnsCuda, MatchesFloat64Reference) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  const auto [strategy, s, index, options] = GetParam();
  expect_matches(ScoreKind::GT, strategy, s.H, s.D, edge_graphs()[std::size_t(index)], unsigned(index) + 60, options,
                 true, EdgeShape{s.heads, s.F});
}

std::string column_name(const ::testing::TestParamInfo<ColumnParam>& info) {
  const auto [strategy, s, graph, options] = info.param;
  return std::string(to_string(strategy)) + "_H" + std::to_string(s.H) + "D" + std::to_string(s.D) + "_E" +
         std::to_string(s.heads) + "x" + std::to_string(s.F) + "_" + edge_graphs()[std::size_t(graph)].name +
         (options ? "_options" : "");
}

INSTANTIATE_TEST_SUITE_P(
    AllShapes, EdgeColumnsCuda,
    ::testing::Combine(::testing::Values(Strategy::Auto, Strategy::Online),
                       ::testing::Values(ColumnShape{1, 144, 1, 16}, ColumnShape{4, 40, 1, 8}, ColumnShape{4, 32, 4, 12},
                                         ColumnShape{3, 7, 1, 3}, ColumnShape{2, 64, 1, 16}, ColumnShape{1, 36, 1, 6}),
                       ::testing::Range(0, int(edge_graphs().size())), ::testing::Bool()),
    column_name);

TEST(EdgeFeaturesCudaErrors, ColumnsFirstAndAgnn) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  const HostGraph g = graph_from_edges(3, {0, 1, 2}, {1, 2, 2});
  const cuda::Plan gt(g, ScoreKind::GT, 1, 4), agnn(g, ScoreKind::AGNN, 1, 4);
  Buf x(12), e(12), out(12), lse(3), grad(12), ge(12), grad2(12), grad3(12), beta(1);
  cuda::Options o;
  o.logsumexp = lse.p, o.edge_features = e.p, o.edge_grad = ge.p;
  o.backward_order = BackwardOrder::ColumnsFirst;
  test::expect_error([&] {
    cuda::attention_backward(nullptr, gt, GT{}, x.p, x.p, x.p, out.p, lse.p, x.p, grad.p, grad2.p, grad3.p, o);
  }, {"cuda::attention_backward(gt): no columns-first order for this score with edge features"});
  test::expect_error([&] { cuda::attention(nullptr, agnn, AGNN{}, x.p, beta.p, 1, out.p, o); },
                     {"cuda::attention: agnn takes no edge features"});
}

// A plan keeps no edge ids where the caller's edges are in CSR order, and the destinations
// only from the first call that asks for attention weights; its answers are those of a plan
// that keeps them, edge for edge.
TEST(PlanMemory, HoldsOnlyWhatItsPassesRead) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  const HostGraph& shuffled = graphs()[0].graph;
  const HostGraph ordered = in_csr_order(shuffled);
  const std::size_t E = std::size_t(shuffled.num_edges()), H = 2, D = 32;
  const std::size_t NS = std::size_t(shuffled.num_src_nodes), N = std::size_t(shuffled.num_nodes);
  ASSERT_FALSE(dfgnn::detail::edges_in_csr_order(shuffled));
  const auto values = test::random_values(E, 5, 0.5f, 2.0f);
  std::vector<float> values_in_order(E);  // the same value on the same edge
  for (std::size_t e = 0; e < E; ++e) values_in_order[e] = values[std::size_t(shuffled.edge_id[e])];
  const Buf q(test::random_values(N * H * D, 1)), k(test::random_values(NS * H * D, 2)),
      v(test::random_values(NS * H * D, 3)), w(values), w_in_order(values_in_order);
  struct Run {
    std::vector<float> out, weights;
    std::size_t bytes_before, bytes_after;
  };
  const auto run = [&](const HostGraph& g, const Buf& edge_values) {
    const cuda::Plan plan(g, ScoreKind::GT, int(H), int(D), Strategy::Online);
    Buf out(N * H * D), lse(N * H), weights(E * H);
    cuda::Options o(cuda::DeviceEdgeValues{edge_values.p, 1});
    o.logsumexp = lse.p, o.attention_weights = weights.p;
    const std::size_t before = plan.device_bytes();
    cuda::attention(nullptr, plan, GT{}, q.p, k.p, v.p, out.p, o);
    ok(cudaDeviceSynchronize());
    return Run{out.host(), weights.host(), before, plan.device_bytes()};
  };
  const Run a = run(shuffled, w), b = run(ordered, w_in_order);
  EXPECT_EQ(a.bytes_before - b.bytes_before, 8 * E);  // no edge ids
  EXPECT_EQ(a.bytes_after - a.bytes_before, 4 * E);  // the destinations, for the weights
  EXPECT_EQ(b.bytes_after - b.bytes_before, 4 * E);
  EXPECT_EQ(a.out, b.out);
  for (std::size_t e = 0; e < E; ++e)
    for (std::size_t h = 0; h < H; ++h)
      ASSERT_EQ(b.weights[e * H + h], a.weights[std::size_t(shuffled.edge_id[e]) * H + h]) << e;
}

TEST(BipartiteCudaErrors, BatchedStrategiesAndAgnnWithoutXDst) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  const HostGraph g = graph_from_edges(4, 3, {0, 3, 1}, {1, 2, 2});
  test::expect_error([&] { (void)cuda::Plan(g, ScoreKind::GT, 1, 32, Strategy::Staged); },
                     {"cuda::Plan: Staged needs a batch of square graphs"});
  test::expect_error([&] { (void)cuda::Plan(g, ScoreKind::GT, 1, 32, Strategy::Dense); },
                     {"cuda::Plan: Dense needs a batch of square graphs, not a bipartite graph"});
  const cuda::Plan agnn(g, ScoreKind::AGNN, 1, 32);
  Buf x(4 * 32), y(3 * 32), beta(1), out(3 * 32);
  test::expect_error([&] { cuda::attention(nullptr, agnn, AGNN{}, x.p, beta.p, 1, out.p); },
                     {"cuda::attention: X_dst is missing: X stands in for it on a square graph only; pass X_dst "
                      "[N,H,D] = [3,1,32]"});
  cuda::attention(nullptr, agnn, AGNN{}, x.p, beta.p, 1, y.p, out.p);
  ok(cudaDeviceSynchronize());
  // Auto never picks them: a tiny dense bipartite "batch" runs a general strategy.
  const cuda::Plan plan(g, ScoreKind::GT, 1, 32);
  EXPECT_NE(plan.strategy(), Strategy::Dense);
  EXPECT_NE(plan.strategy(), Strategy::Staged);
}

}  // namespace
