// GPU tests of the CUDA-native forward: every score kind x strategy x (H, D) x edge values on
// graphs with empty rows, a single node, no edges, self loops, duplicates, a super node, a
// batch and a power-law graph, against the float64 reference; training mode (logsumexp,
// dropout) on a subset; plus reproducibility and the argument checks. Needs a CUDA device;
// skips otherwise.

#include <dfgnn/cuda.hpp>
#include <dfgnn/generate.hpp>
#include <dfgnn/reference.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace dfgnn;

void ok(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }

/// A device copy of a float vector, or an output of n floats.
class Buf {
 public:
  explicit Buf(std::size_t n) : n_(n) {
    if (n) ok(cudaMalloc(&p_, n * sizeof(float)));
  }
  explicit Buf(const std::vector<float>& h) : Buf(h.size()) {
    if (n_) ok(cudaMemcpy(p_, h.data(), n_ * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~Buf() { cudaFree(p_); }
  Buf(const Buf&) = delete;
  float* get() const { return p_; }
  void poison() {
    if (n_) ok(cudaMemset(p_, 0xff, n_ * sizeof(float)));  // all-ones bits: NaN
  }
  std::vector<float> host() const {
    std::vector<float> h(n_);
    if (n_) ok(cudaMemcpy(h.data(), p_, n_ * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  float* p_ = nullptr;
  std::size_t n_;
};

std::vector<float> uniform(std::size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) {
    do x = d(rng);
    while (x == 0.f);
  }
  return v;
}

HostGraph random_graph(node_t n, edge_t e, node_t dst_nodes, std::mt19937& rng) {
  std::uniform_int_distribution<node_t> s(0, n - 1), d(0, dst_nodes - 1);
  std::vector<node_t> src(e), dst(e);
  for (edge_t i = 0; i < e; ++i) src[i] = s(rng), dst[i] = d(rng);
  return graph_from_edges(n, src, dst);
}

/// The test graphs, built once.
const std::map<std::string, HostGraph>& graphs() {
  static const std::map<std::string, HostGraph> g = [] {
    std::mt19937 rng(7);
    std::map<std::string, HostGraph> m;
    // Rows 40..49 receive nothing; 300 random edges over 50 nodes give self loops and
    // duplicates; add explicit ones too.
    {
      HostGraph r = random_graph(50, 300, 40, rng);
      std::vector<node_t> src(r.src), dst(r.dst);
      for (node_t v : {0, 1, 2}) src.push_back(v), dst.push_back(v), src.push_back(5), dst.push_back(v);
      m["empty_rows"] = graph_from_edges(50, src, dst);
    }
    m["one_node"] = graph_from_edges(1, {0, 0, 0}, {0, 0, 0});
    m["no_edges"] = graph_from_edges(10, {}, {});
    {
      // Node 7 receives 20000 edges, beyond one block's shared memory; 6000 others around it.
      std::vector<node_t> src, dst;
      std::uniform_int_distribution<node_t> s(0, 2999);
      for (int i = 0; i < 20000; ++i) src.push_back(s(rng)), dst.push_back(7);
      for (int i = 0; i < 6000; ++i) src.push_back(s(rng)), dst.push_back(s(rng));
      m["super_node"] = graph_from_edges(3000, src, dst);
    }
    {
      std::vector<HostGraph> parts;
      std::uniform_int_distribution<node_t> nodes(1, 40);
      for (int i = 0; i < 64; ++i) {
        const node_t n = nodes(rng);
        parts.push_back(random_graph(n, edge_t(n) * (i % 7), n, rng));
      }
      m["batch64"] = batch_graphs(parts);
    }
    m["power_law"] = gen::rmat(12, 8);
    return m;
  }();
  return g;
}

struct Shape {
  int H, D;
};

constexpr Strategy kStrategies[] = {Strategy::Auto, Strategy::SMMF,   Strategy::PMF,
                                    Strategy::Unfused, Strategy::Staged, Strategy::Online};

/// The plan of strategy s, or null where only Staged may refuse a graph (one that is not a
/// batch of graphs that fit).
std::unique_ptr<cuda::Plan> make_plan(const HostGraph& g, ScoreKind kind, Shape shape, Strategy s) {
  try {
    auto plan = std::make_unique<cuda::Plan>(g, kind, shape.H, shape.D, s);
    EXPECT_NE(plan->strategy(), Strategy::Auto);
    return plan;
  } catch (const Error& e) {
    EXPECT_EQ(s, Strategy::Staged) << e.what();
    return nullptr;
  }
}

/// Inputs of one score kind, the reference, and a runner through a plan.
struct Case {
  ScoreKind kind;
  const HostGraph* g;
  int H, D;
  std::vector<std::vector<float>> in;  // per kind: GT q,k,v; AGNN x,beta; GAT el,er,v; GATv2 xl,xr,a
  std::vector<float> w;                // [E, ew]
  int ew = 0;
  Dropout dropout;
  bool training = false;  // also compute the logsumexp

  Case(ScoreKind k, const HostGraph& graph, Shape s, int edge_heads, unsigned seed)
      : kind(k), g(&graph), H(s.H), D(s.D), ew(edge_heads) {
    std::mt19937 rng(seed);
    const std::size_t nf = std::size_t(g->num_nodes) * H * D, ns = std::size_t(g->num_nodes) * H;
    switch (k) {
      case ScoreKind::GT: in = {uniform(nf, rng), uniform(nf, rng), uniform(nf, rng)}; break;
      case ScoreKind::AGNN: in = {uniform(nf, rng), uniform(std::size_t(H), rng, 0.5f, 3.f)}; break;
      case ScoreKind::GAT: in = {uniform(ns, rng), uniform(ns, rng), uniform(nf, rng)}; break;
      case ScoreKind::GATv2: in = {uniform(nf, rng), uniform(nf, rng), uniform(std::size_t(H) * D, rng)}; break;
    }
    if (ew) w = uniform(std::size_t(g->num_edges()) * ew, rng, 0.5f, 1.5f);
  }

  HostEdgeValues host_w() const { return {ew ? w.data() : nullptr, ew}; }

  /// The float64 output, and the logsumexp into `lse` when training.
  std::vector<double> reference(std::vector<double>* lse = nullptr) const {
    ReferenceOptions o(host_w());
    o.dropout = dropout;
    o.logsumexp = lse;
    switch (kind) {
      case ScoreKind::GT: return reference_attention(*g, H, D, GT{}, in[0].data(), in[1].data(), in[2].data(), o);
      case ScoreKind::AGNN: return reference_attention(*g, H, D, AGNN{}, in[0].data(), in[1].data(), H, o);
      case ScoreKind::GAT: return reference_attention(*g, H, D, GAT{}, in[0].data(), in[1].data(), in[2].data(), o);
      case ScoreKind::GATv2:
        return reference_attention(*g, H, D, GATv2{}, in[0].data(), in[1].data(), in[2].data(), o);
    }
    return {};
  }

  /// One run's output and (training) logsumexp.
  struct Result {
    std::vector<float> out, lse;
  };

  /// Runs through `plan` twice into NaN-poisoned outputs; returns both results.
  std::pair<Result, Result> run(const cuda::Plan& plan) const {
    std::vector<std::unique_ptr<Buf>> d;
    for (const auto& v : in) d.push_back(std::make_unique<Buf>(v));
    Buf dw(w);
    Buf out(std::size_t(g->num_nodes) * H * D), lse(training ? std::size_t(g->num_nodes) * H : 0);
    cuda::Options o(cuda::DeviceEdgeValues{ew ? dw.get() : nullptr, ew});
    o.logsumexp = training ? lse.get() : nullptr;
    o.dropout = dropout;
    Result r[2];
    for (auto& res : r) {
      out.poison();
      lse.poison();
      switch (kind) {
        case ScoreKind::GT: cuda::attention(nullptr, plan, GT{}, d[0]->get(), d[1]->get(), d[2]->get(), out.get(), o); break;
        case ScoreKind::AGNN: cuda::attention(nullptr, plan, AGNN{}, d[0]->get(), d[1]->get(), H, out.get(), o); break;
        case ScoreKind::GAT: cuda::attention(nullptr, plan, GAT{}, d[0]->get(), d[1]->get(), d[2]->get(), out.get(), o); break;
        case ScoreKind::GATv2:
          cuda::attention(nullptr, plan, GATv2{}, d[0]->get(), d[1]->get(), d[2]->get(), out.get(), o);
          break;
      }
      ok(cudaDeviceSynchronize());
      res = {out.host(), lse.host()};
    }
    return {r[0], r[1]};
  }
};

void expect_same(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "two runs differ";
}

using Param = std::tuple<std::string, ScoreKind, Shape>;

class Forward : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(Forward, MatchesReference) {
  const auto& [name, kind, shape] = GetParam();
  const HostGraph& g = graphs().at(name);
  for (int ew : {0, 1, shape.H}) {
    const Case c(kind, g, shape, ew, 1000u + unsigned(ew));
    const std::vector<double> ref = c.reference();
    for (Strategy s : kStrategies) {
      SCOPED_TRACE(std::string("strategy ") + to_string(s) + ", ew " + std::to_string(ew));
      const auto plan = make_plan(g, kind, shape, s);
      if (!plan) continue;
      const auto [a, b] = c.run(*plan);
      if (!g.num_nodes) continue;
      EXPECT_LT(max_relative_error(a.out.data(), ref), 1e-5);
      expect_same(a.out, b.out);
    }
  }
}

// Training mode: the logsumexp with and without dropout (and edge values), every strategy.
class Training : public Forward {};

TEST_P(Training, MatchesReference) {
  const auto& [name, kind, shape] = GetParam();
  const HostGraph& g = graphs().at(name);
  for (float rate : {0.f, 0.3f}) {
    Case c(kind, g, shape, rate > 0 ? 1 : shape.H, 2000u + unsigned(rate * 10));
    c.training = true;
    c.dropout = {rate, 0x5eed + std::uint64_t(shape.D)};
    std::vector<double> ref_lse;
    const std::vector<double> ref = c.reference(&ref_lse);
    for (Strategy s : kStrategies) {
      SCOPED_TRACE(std::string("strategy ") + to_string(s) + ", dropout " + std::to_string(rate));
      const auto plan = make_plan(g, kind, shape, s);
      if (!plan) continue;
      const auto [a, b] = c.run(*plan);
      EXPECT_LT(max_relative_error(a.out.data(), ref), 1e-5);
      EXPECT_LT(max_relative_error(a.lse.data(), ref_lse), 1e-5);
      expect_same(a.out, b.out);
      expect_same(a.lse, b.lse);
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [name, kind, shape] = info.param;
  return name + "_" + to_string(kind) + "_" + std::to_string(shape.H) + "x" + std::to_string(shape.D);
}

INSTANTIATE_TEST_SUITE_P(
    All, Forward,
    ::testing::Combine(::testing::Values("empty_rows", "one_node", "no_edges", "super_node", "batch64", "power_law"),
                       ::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Shape{1, 128}, Shape{4, 32}, Shape{2, 16}, Shape{3, 7}, Shape{1, 256},
                                         Shape{1, 50})),
    param_name);

INSTANTIATE_TEST_SUITE_P(
    Subset, Training,
    ::testing::Combine(::testing::Values("empty_rows", "super_node", "batch64", "power_law"),
                       ::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Shape{1, 128}, Shape{4, 32}, Shape{2, 16}, Shape{3, 7})),
    param_name);

// A misaligned feature pointer takes the scalar tile and must give the same answer.
TEST(ForwardMisc, UnalignedPointersUseScalarPath) {
  if (!cuda::device_available()) GTEST_SKIP();
  const HostGraph& g = graphs().at("power_law");
  const int H = 2, D = 16;
  const Case c(ScoreKind::GT, g, {H, D}, 0, 3);
  const std::size_t nf = std::size_t(g.num_nodes) * H * D;
  Buf q(nf + 1), k(nf + 1), v(nf + 1), out(nf);
  ok(cudaMemcpy(q.get() + 1, c.in[0].data(), nf * 4, cudaMemcpyHostToDevice));
  ok(cudaMemcpy(k.get() + 1, c.in[1].data(), nf * 4, cudaMemcpyHostToDevice));
  ok(cudaMemcpy(v.get() + 1, c.in[2].data(), nf * 4, cudaMemcpyHostToDevice));
  for (Strategy s : {Strategy::SMMF, Strategy::Online}) {
    const cuda::Plan plan(g, ScoreKind::GT, H, D, s);
    out.poison();
    cuda::attention(nullptr, plan, GT{}, q.get() + 1, k.get() + 1, v.get() + 1, out.get());
    ok(cudaDeviceSynchronize());
    EXPECT_LT(max_relative_error(out.host().data(), c.reference()), 1e-5) << to_string(s);
  }
}

TEST(ForwardArgs, RejectsBadArguments) {
  if (!cuda::device_available()) GTEST_SKIP();
  const HostGraph& g = graphs().at("empty_rows");
  const int H = 4, D = 32;
  const std::size_t nf = std::size_t(g.num_nodes) * H * D;
  Buf x(nf), y(nf), z(nf), out(nf), beta{std::size_t(H)}, w{std::size_t(g.num_edges()) * H};
  const cuda::Plan gt(g, ScoreKind::GT, H, D, Strategy::SMMF);
  const cuda::Plan agnn(g, ScoreKind::AGNN, H, D);
  EXPECT_THROW(cuda::attention(nullptr, gt, GT{}, nullptr, y.get(), z.get(), out.get()), Error);
  EXPECT_THROW(cuda::attention(nullptr, gt, GT{}, x.get(), y.get(), z.get(), nullptr), Error);
  EXPECT_THROW(cuda::attention(nullptr, gt, GT{}, x.get(), y.get(), z.get(), x.get()), Error);  // out aliases Q
  EXPECT_THROW(cuda::attention(nullptr, gt, GT{}, x.get(), y.get(), z.get(), y.get() + 5), Error);  // overlaps K
  EXPECT_THROW(cuda::attention(nullptr, gt, GT{}, x.get(), y.get(), z.get(), out.get(), cuda::DeviceEdgeValues{w.get(), 2}),
               Error);
  cuda::Options bad;
  bad.dropout.rate = 1.f;
  EXPECT_THROW(cuda::attention(nullptr, gt, GT{}, x.get(), y.get(), z.get(), out.get(), bad), Error);
  bad = {};
  bad.logsumexp = out.get() + 3;  // overlaps out
  EXPECT_THROW(cuda::attention(nullptr, gt, GT{}, x.get(), y.get(), z.get(), out.get(), bad), Error);
  bad.logsumexp = x.get();  // overlaps Q
  EXPECT_THROW(cuda::attention(nullptr, gt, GT{}, x.get(), y.get(), z.get(), out.get(), bad), Error);
  EXPECT_THROW(cuda::attention(nullptr, gt, GAT{}, x.get(), y.get(), z.get(), out.get()), Error);  // wrong kind
  EXPECT_THROW(cuda::attention(nullptr, agnn, AGNN{}, x.get(), beta.get(), 2, out.get()), Error);
  EXPECT_THROW(cuda::attention(nullptr, agnn, AGNN{}, x.get(), nullptr, 1, out.get()), Error);
  EXPECT_THROW(cuda::check_shape(gt, H, D + 1), Error);
  EXPECT_NO_THROW(cuda::check_shape(gt, H, D));
  EXPECT_THROW(cuda::Plan(g, ScoreKind::GT, 0, D), Error);
  EXPECT_THROW(cuda::Plan(g, ScoreKind::GT, H, 0), Error);
  EXPECT_THROW(cuda::Plan(g, ScoreKind::GT, 1, 1000), Error);
  EXPECT_THROW(cuda::Plan(graphs().at("power_law"), ScoreKind::GT, 1, 128, Strategy::Staged), Error);
  EXPECT_NO_THROW(cuda::attention(nullptr, gt, GT{}, x.get(), y.get(), z.get(), out.get(), cuda::DeviceEdgeValues{w.get(), H}));
  ok(cudaDeviceSynchronize());
}

// Online was measured fastest on batches and single graphs alike (docs/cuda.md).
TEST(ForwardPlan, AutoPicksOnline) {
  if (!cuda::device_available()) GTEST_SKIP();
  EXPECT_EQ(cuda::Plan(gen::sbm_batch(gen::SbmKind::Pattern, 16), ScoreKind::GT, 1, 128).strategy(), Strategy::Online);
  EXPECT_EQ(cuda::Plan(graphs().at("power_law"), ScoreKind::GAT, 4, 32).strategy(), Strategy::Online);
  EXPECT_EQ(cuda::Plan(graphs().at("super_node"), ScoreKind::AGNN, 1, 512).strategy(), Strategy::Online);
}

}  // namespace
