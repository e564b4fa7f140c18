// GPU tests of the CUDA-native forward and backward: every score kind x strategy x (H, D) x
// edge values on graphs with empty rows, a single node, no edges, self loops, duplicates, a
// super node, hubs (a heavy row and a heavy column), a batch and a power-law graph, against
// the float64 reference; training mode (logsumexp, dropout) on a subset; the backward of every
// kind x (H, D) with and without edge values and dropout; Dense on its own batches (bucket
// limits, duplicates); plus reproducibility, Auto's picks and the argument checks. Needs a CUDA
// device; skips otherwise.

#include "../expect_error.hpp"
#include "../gradient_check.hpp"
#include "../graphs.hpp"

#include <dfgnn/cuda.hpp>
#include <dfgnn/generate.hpp>
#include <dfgnn/reference.hpp>
#include <dfgnn/reference_backward.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
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
    m["knn16"] = gen::knn_batch(16);  // even degrees: GAT's paired rows (docs/cuda.md)
    {
      // Node 0 receives 20500 edges and node 1 sends 20500: both split for the backward.
      std::vector<node_t> src, dst;
      std::uniform_int_distribution<node_t> any(0, 1999);
      for (int i = 0; i < 20500; ++i) src.push_back(any(rng)), dst.push_back(0), src.push_back(1), dst.push_back(any(rng));
      for (node_t v = 2; v < 2000; ++v) src.push_back(any(rng)), dst.push_back(v);
      m["hubs"] = graph_from_edges(2000, src, dst);
    }
    return m;
  }();
  return g;
}

struct Shape {
  int H, D;
};

constexpr Strategy kStrategies[] = {Strategy::Auto,   Strategy::SMMF,   Strategy::PMF,  Strategy::Unfused,
                                    Strategy::Staged, Strategy::Online, Strategy::Dense};

/// The plan of strategy s, or null where Staged or Dense refuses a graph (Staged: not a batch
/// of graphs that fit; Dense: that, GATv2, or D % 32 != 0; DenseForward checks that it
/// takes what it should).
std::unique_ptr<cuda::Plan> make_plan(const HostGraph& g, ScoreKind kind, Shape shape, Strategy s) {
  try {
    auto plan = std::make_unique<cuda::Plan>(g, kind, shape.H, shape.D, s);
    EXPECT_NE(plan->strategy(), Strategy::Auto);
    return plan;
  } catch (const Error& e) {
    EXPECT_TRUE(s == Strategy::Staged || s == Strategy::Dense) << e.what();
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

/// The backward of one Case: the forward in training mode, then the backward with dOut, twice
/// into NaN-poisoned gradients (gradient_names order), and the float64 reference.
struct BackwardCase : Case {
  std::vector<float> dout;
  cuda::BackwardOrder order = cuda::BackwardOrder::Auto;

  BackwardCase(ScoreKind k, const HostGraph& graph, Shape s, int edge_heads, Dropout drop, unsigned seed)
      : Case(k, graph, s, edge_heads, seed) {
    std::mt19937 rng(seed + 1);
    dout = uniform(std::size_t(g->num_nodes) * H * D, rng);
    dropout = drop;
  }

  std::vector<std::vector<double>> reference_gradients() const {
    ReferenceOptions o(host_w());
    o.dropout = dropout;
    const float* d = dout.data();
    switch (kind) {
      case ScoreKind::GT: {
        auto r = reference_attention_backward(*g, H, D, GT{}, in[0].data(), in[1].data(), in[2].data(), d, o);
        return {r.dQ, r.dK, r.dV};
      }
      case ScoreKind::AGNN: {
        auto r = reference_attention_backward(*g, H, D, AGNN{}, in[0].data(), in[1].data(), H, d, o);
        return {r.dX, r.dbeta};
      }
      case ScoreKind::GAT: {
        auto r = reference_attention_backward(*g, H, D, GAT{}, in[0].data(), in[1].data(), in[2].data(), d, o);
        return {r.del, r.der, r.dV};
      }
      case ScoreKind::GATv2: {
        auto r = reference_attention_backward(*g, H, D, GATv2{}, in[0].data(), in[1].data(), in[2].data(), d, o);
        return {r.dXL, r.dXR, r.da};
      }
    }
    return {};
  }

  std::vector<std::vector<std::vector<float>>> gradients(const cuda::Plan& plan) const {
    std::vector<std::unique_ptr<Buf>> d, grad;
    for (const auto& v : in) d.push_back(std::make_unique<Buf>(v)), grad.push_back(std::make_unique<Buf>(v.size()));
    const std::size_t ns = std::size_t(g->num_nodes) * H;
    Buf dw(w), dO(dout), out(ns * D), lse(ns);
    cuda::Options o(cuda::DeviceEdgeValues{ew ? dw.get() : nullptr, ew});
    o.logsumexp = lse.get();
    o.dropout = dropout;
    o.backward_order = order;
    auto p = [&](int i) { return d[std::size_t(i)]->get(); };
    auto dp = [&](int i) { return grad[std::size_t(i)]->get(); };
    switch (kind) {
      case ScoreKind::GT: cuda::attention(nullptr, plan, GT{}, p(0), p(1), p(2), out.get(), o); break;
      case ScoreKind::AGNN: cuda::attention(nullptr, plan, AGNN{}, p(0), p(1), H, out.get(), o); break;
      case ScoreKind::GAT: cuda::attention(nullptr, plan, GAT{}, p(0), p(1), p(2), out.get(), o); break;
      case ScoreKind::GATv2: cuda::attention(nullptr, plan, GATv2{}, p(0), p(1), p(2), out.get(), o); break;
    }
    std::vector<std::vector<std::vector<float>>> runs;
    for (int run = 0; run < 2; ++run) {
      for (auto& b : grad) b->poison();
      switch (kind) {
        case ScoreKind::GT:
          cuda::attention_backward(nullptr, plan, GT{}, p(0), p(1), p(2), out.get(), lse.get(), dO.get(), dp(0),
                                   dp(1), dp(2), o);
          break;
        case ScoreKind::AGNN:
          cuda::attention_backward(nullptr, plan, AGNN{}, p(0), p(1), H, out.get(), lse.get(), dO.get(), dp(0), dp(1),
                                   o);
          break;
        case ScoreKind::GAT:
          cuda::attention_backward(nullptr, plan, GAT{}, p(0), p(1), p(2), out.get(), lse.get(), dO.get(), dp(0),
                                   dp(1), dp(2), o);
          break;
        case ScoreKind::GATv2:
          cuda::attention_backward(nullptr, plan, GATv2{}, p(0), p(1), p(2), out.get(), lse.get(), dO.get(), dp(0),
                                   dp(1), dp(2), o);
          break;
      }
      ok(cudaDeviceSynchronize());
      auto& r = runs.emplace_back();
      for (auto& b : grad) r.push_back(b->host());
    }
    return runs;
  }
};

void expect_same(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "two runs differ";
}

/// A training forward of `plan` (c.training set): output and logsumexp within 1e-5 of the
/// reference's, and a second run bitwise the same.
void expect_training_matches(const Case& c, const cuda::Plan& plan, const std::vector<double>& ref,
                             const std::vector<double>& ref_lse) {
  const auto [a, b] = c.run(plan);
  EXPECT_LT(max_relative_error(a.out.data(), ref), 1e-5);
  EXPECT_LT(max_relative_error(a.lse.data(), ref_lse), 1e-5);
  expect_same(a.out, b.out);
  expect_same(a.lse, b.lse);
}

/// The same against c's own reference, for a case run through one plan.
void expect_training_matches(const Case& c, const cuda::Plan& plan) {
  std::vector<double> ref_lse;
  const std::vector<double> ref = c.reference(&ref_lse);
  expect_training_matches(c, plan, ref, ref_lse);
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
      if (plan) expect_training_matches(c, *plan, ref, ref_lse);
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [name, kind, shape] = info.param;
  return name + "_" + to_string(kind) + "_" + std::to_string(shape.H) + "x" + std::to_string(shape.D);
}

INSTANTIATE_TEST_SUITE_P(
    All, Forward,
    ::testing::Combine(::testing::Values("empty_rows", "one_node", "no_edges", "super_node", "batch64", "power_law",
                                         "knn16"),
                       ::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Shape{1, 128}, Shape{4, 32}, Shape{2, 16}, Shape{3, 7}, Shape{1, 256},
                                         Shape{1, 50}, Shape{3, 96})),
    param_name);

INSTANTIATE_TEST_SUITE_P(
    Subset, Training,
    ::testing::Combine(::testing::Values("empty_rows", "super_node", "batch64", "power_law"),
                       ::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Shape{1, 128}, Shape{4, 32}, Shape{2, 16}, Shape{3, 7})),
    param_name);

// The backward after the Auto forward: plain, then with edge values (per edge or per head) and
// dropout, in each order the score kind has (GT both); gradients against the float64 reference
// and bitwise equal over two runs.
class Backward : public Forward {};

TEST_P(Backward, MatchesReference) {
  const auto& [name, kind, shape] = GetParam();
  const HostGraph& g = graphs().at(name);
  const cuda::Plan plan(g, kind, shape.H, shape.D);
  const auto names = test::gradient_names(kind);
  using Order = cuda::BackwardOrder;
  const std::vector<Order> orders = kind == ScoreKind::GT    ? std::vector{Order::RowsFirst, Order::ColumnsFirst}
                                    : kind == ScoreKind::GAT ? std::vector{Order::ColumnsFirst}
                                                             : std::vector{Order::RowsFirst};
  for (const Order order : orders)
    for (const auto& [ew, rate] : {std::pair{0, 0.f}, std::pair{1, 0.3f}, std::pair{shape.H, 0.3f}}) {
      SCOPED_TRACE("order " + std::to_string(int(order)) + ", ew " + std::to_string(ew) + ", dropout " +
                   std::to_string(rate));
      BackwardCase c(kind, g, shape, ew, Dropout{rate, 77}, 5000u + unsigned(ew));
      c.order = order;
      const auto runs = c.gradients(plan);
      const auto ref = c.reference_gradients();
      for (std::size_t i = 0; i < ref.size(); ++i) {
        EXPECT_LT(test::gradient_error(runs[0][i], ref[i]), test::gradient_tolerance(kind, i)) << names[i];
        expect_same(runs[0][i], runs[1][i]);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(
    All, Backward,
    ::testing::Combine(::testing::Values("empty_rows", "one_node", "no_edges", "super_node", "hubs", "batch64",
                                         "power_law", "knn16"),
                       ::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Shape{1, 128}, Shape{4, 32}, Shape{2, 16}, Shape{3, 7}, Shape{1, 256},
                                         Shape{1, 50}, Shape{3, 96})),
    param_name);

TEST(BackwardArgs, RejectsBadArguments) {
  if (!cuda::device_available()) GTEST_SKIP();
  const HostGraph& g = graphs().at("empty_rows");
  const int H = 2, D = 16;
  const std::size_t nf = std::size_t(g.num_nodes) * H * D, ns = std::size_t(g.num_nodes) * H;
  Buf q(nf), k(nf), v(nf), out(nf), lse(ns), dout(nf), dq(nf), dk(nf), dv(nf), beta{std::size_t(H)};
  const cuda::Plan gt(g, ScoreKind::GT, H, D), agnn(g, ScoreKind::AGNN, H, D);
  const auto call = [&](float* a, float* b, float* c, const cuda::Options& o = {}) {
    return [&, a, b, c, o] {
      cuda::attention_backward(nullptr, gt, GT{}, q.get(), k.get(), v.get(), out.get(), lse.get(), dout.get(), a,
                               b, c, o);
    };
  };
  test::expect_error(call(nullptr, dk.get(), dv.get()), {"attention_backward", "dQ is null"});
  test::expect_error(call(dq.get(), q.get(), dv.get()), {"cuda::attention_backward: dK overlaps Q"});
  test::expect_error(call(dq.get(), dk.get(), dout.get() + 4), {"dV overlaps dOut"});
  test::expect_error(call(dq.get(), dk.get(), dq.get() + 8), {"dQ overlaps dV"});
  cuda::Options bad;
  bad.dropout.rate = -0.5f;
  test::expect_error(call(dq.get(), dk.get(), dv.get(), bad), {"dropout rate"});
  test::expect_error(
      [&] {
        cuda::attention_backward(nullptr, gt, AGNN{}, q.get(), beta.get(), H, out.get(), lse.get(), dout.get(),
                                 dq.get(), dk.get());
      },
      {"the plan was made for gt, not agnn"});
  test::expect_error(
      [&] {
        cuda::attention_backward(nullptr, agnn, AGNN{}, q.get(), beta.get(), 3, out.get(), lse.get(), dout.get(),
                                 dq.get(), dk.get());
      },
      {"beta has 3 entries, expected 1 or H = 2"});
  test::expect_error(
      [&] {
        cuda::attention_backward(nullptr, gt, GT{}, q.get(), k.get(), v.get(), out.get(), nullptr, dout.get(),
                                 dq.get(), dk.get(), dv.get());
      },
      {"logsumexp is null"});
  // The orders a score kind does not have.
  const cuda::Plan gat(g, ScoreKind::GAT, H, D);
  cuda::Options rows_first, cols_first;
  rows_first.backward_order = cuda::BackwardOrder::RowsFirst;
  cols_first.backward_order = cuda::BackwardOrder::ColumnsFirst;
  test::expect_error(
      [&] {
        cuda::attention_backward(nullptr, agnn, AGNN{}, q.get(), beta.get(), H, out.get(), lse.get(), dout.get(),
                                 dq.get(), dk.get(), cols_first);
      },
      {"attention_backward(agnn)", "no columns-first order"});
  test::expect_error(
      [&] {
        cuda::attention_backward(nullptr, gat, GAT{}, lse.get(), lse.get(), v.get(), out.get(), lse.get(), dout.get(),
                                 dq.get(), dk.get(), dv.get(), rows_first);
      },
      {"attention_backward(gat)", "no rows-first order"});
}

/// Dense's own batches (graphs.hpp) and this file's batch64.
const std::map<std::string, HostGraph>& dense_graphs() {
  static const std::map<std::string, HostGraph> g = [] {
    std::map<std::string, HostGraph> m;
    m["batch64"] = graphs().at("batch64");
    for (test::NamedGraph& named : test::dense_batches()) m[named.name] = std::move(named.graph);
    return m;
  }();
  return g;
}

// Dense on the batches it is for: every score it computes, every shape, edge values, training
// mode; the plan must take them (the Forward suites skip a refusing Dense). 8x32: GAT's key
// chunks over 8 heads' V, each staged in turn into one region.
using DenseParam = std::tuple<std::string, Shape>;

constexpr ScoreKind kDenseKinds[] = {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT};

class DenseForward : public ::testing::TestWithParam<DenseParam> {
 protected:
  void SetUp() override {
    if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(DenseForward, MatchesReference) {
  const auto& [name, shape] = GetParam();
  const HostGraph& g = dense_graphs().at(name);
  for (ScoreKind kind : kDenseKinds) {
    const cuda::Plan plan(g, kind, shape.H, shape.D, Strategy::Dense);
    for (int ew : {0, 1, shape.H}) {
      SCOPED_TRACE(std::string(to_string(kind)) + ", ew " + std::to_string(ew));
      Case c(kind, g, shape, ew, 3000u + unsigned(ew));
      if (kind == ScoreKind::AGNN)  // zero vectors (head 0 of every 5th node) score 0, as keys and as rows
        for (node_t v = 0; v < g.num_nodes; v += 5)
          std::fill_n(c.in[0].begin() + std::size_t(v) * shape.H * shape.D, shape.D, 0.f);
      const auto [a, b] = c.run(plan);
      EXPECT_LT(max_relative_error(a.out.data(), c.reference()), 1e-5);
      expect_same(a.out, b.out);
    }
  }
}

// The logsumexp from the plain kernel (no edge values, no dropout) and the edge-wise one.
TEST_P(DenseForward, TrainingMatchesReference) {
  const auto& [name, shape] = GetParam();
  const HostGraph& g = dense_graphs().at(name);
  for (ScoreKind kind : kDenseKinds) {
    const cuda::Plan plan(g, kind, shape.H, shape.D, Strategy::Dense);
    for (const auto& [rate, ew] : {std::pair{0.f, 0}, std::pair{0.3f, 0}, std::pair{0.3f, 1}}) {
      SCOPED_TRACE(std::string(to_string(kind)) + ", dropout " + std::to_string(rate) + ", ew " + std::to_string(ew));
      Case c(kind, g, shape, ew, 4000u + unsigned(ew));
      c.training = true;
      c.dropout = {rate, 0x5eed + std::uint64_t(shape.D)};
      expect_training_matches(c, plan);
    }
  }
}

// Auto's Dense runs calls with edge values or dropout through Online on whole rows.
TEST(ForwardPlan, AutoDenseWithDropoutMatchesReference) {
  if (!cuda::device_available()) GTEST_SKIP();
  const HostGraph& g = dense_graphs().at("pattern");
  for (ScoreKind kind : kDenseKinds) {
    SCOPED_TRACE(to_string(kind));
    const cuda::Plan plan(g, kind, 1, 128);
    ASSERT_EQ(plan.strategy(), Strategy::Dense);
    Case c(kind, g, {1, 128}, 1, 4100u);
    c.training = true;
    c.dropout = {0.3f, 0x5eed};
    expect_training_matches(c, plan);
  }
}

std::string dense_param_name(const ::testing::TestParamInfo<DenseParam>& info) {
  const auto& [name, shape] = info.param;
  return name + "_" + std::to_string(shape.H) + "x" + std::to_string(shape.D);
}

INSTANTIATE_TEST_SUITE_P(Batches, DenseForward,
                         ::testing::Combine(::testing::Values("batch64", "pattern", "pattern_dup", "sizes", "late_edges"),
                                            ::testing::Values(Shape{1, 128}, Shape{4, 32}, Shape{1, 32}, Shape{8, 32}, Shape{2, 64},
                                                              Shape{3, 64})),
                         dense_param_name);

// Explicit Dense on what it cannot take throws, naming the reason.
TEST(DensePlan, RejectsIneligiblePlans) {
  if (!cuda::device_available()) GTEST_SKIP();
  const HostGraph& pattern = dense_graphs().at("pattern");
  auto plan = [](const HostGraph& g, ScoreKind kind, int H, int D) {
    return [&g, kind, H, D] { cuda::Plan(g, kind, H, D, Strategy::Dense); };
  };
  test::expect_error(plan(pattern, ScoreKind::GATv2, 1, 128), {"Dense", "not GATv2"});
  test::expect_error(plan(graphs().at("empty_rows"), ScoreKind::AGNN, 1, 512), {"Dense", "AGNN", "D <= 256"});
  test::expect_error(plan(pattern, ScoreKind::GT, 1, 48), {"Dense", "multiple of 32"});
  test::expect_error(plan(pattern, ScoreKind::GT, 4, 16), {"Dense", "multiple of 32"});
  test::expect_error(plan(graphs().at("power_law"), ScoreKind::GT, 1, 128), {"at most 192 nodes"});
  std::vector<node_t> src, dst;
  for (node_t v = 0; v < 193; ++v) src.push_back((v + 1) % 193), dst.push_back(v);
  test::expect_error(plan(graph_from_edges(193, src, dst), ScoreKind::GT, 1, 32), {"at most 192 nodes", "has 193"});
  HostGraph crossing = graph_from_edges(6, {0, 1, 4}, {1, 4, 5});  // 1 -> 4 joins the two graphs
  crossing.graph_ptr = {0, 3, 6};
  test::expect_error(plan(crossing, ScoreKind::GT, 1, 32), {"graph: edge 1 joins graph 1"});  // validate
  // At D = 512 one region of a 128-node graph needs 272384 bytes (the H100 allows 232448).
  test::expect_error(plan(dense_graphs().at("sizes"), ScoreKind::GT, 1, 512), {"shared memory", "128 nodes"});
  const HostGraph heavy = graph_from_edges(2, std::vector<node_t>(70000, 0), std::vector<node_t>(70000, 1));
  test::expect_error(plan(heavy, ScoreKind::GT, 1, 32), {"at most 65535 edges", "the largest has 70000"});
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

// Dense on batches of dense-ish graphs of 64 nodes or more (GT, AGNN, GAT; D % 32 == 0), by a
// density bar per score and D; elsewhere Online, measured fastest on batches and single graphs
// alike (docs/cuda.md).
TEST(ForwardPlan, AutoPicksDenseOrOnline) {
  if (!cuda::device_available()) GTEST_SKIP();
  const HostGraph pattern = gen::sbm_batch(gen::SbmKind::Pattern, 16);
  EXPECT_EQ(cuda::Plan(pattern, ScoreKind::GT, 1, 128).strategy(), Strategy::Dense);
  EXPECT_EQ(cuda::Plan(pattern, ScoreKind::GT, 4, 32).strategy(), Strategy::Dense);
  // CLUSTER-like (30% dense): Dense measured faster for GT at every D.
  const HostGraph cluster = gen::sbm_batch(gen::SbmKind::Cluster, 16);
  EXPECT_EQ(cuda::Plan(cluster, ScoreKind::GT, 1, 128).strategy(), Strategy::Dense);
  EXPECT_EQ(cuda::Plan(cluster, ScoreKind::GT, 2, 64).strategy(), Strategy::Dense);
  EXPECT_EQ(cuda::Plan(cluster, ScoreKind::GT, 4, 32).strategy(), Strategy::Dense);
  EXPECT_EQ(cuda::Plan(pattern, ScoreKind::GT, 1, 48).strategy(), Strategy::Online);     // D % 32 != 0: not Staged either
  // AGNN and GAT measured as GT, with their own bars (GAT's highest: its Online is the cheapest).
  EXPECT_EQ(cuda::Plan(pattern, ScoreKind::AGNN, 1, 128).strategy(), Strategy::Dense);
  EXPECT_EQ(cuda::Plan(cluster, ScoreKind::AGNN, 2, 64).strategy(), Strategy::Dense);
  EXPECT_EQ(cuda::Plan(pattern, ScoreKind::GAT, 1, 128).strategy(), Strategy::Dense);
  EXPECT_EQ(cuda::Plan(cluster, ScoreKind::GAT, 2, 64).strategy(), Strategy::Dense);
  EXPECT_EQ(cuda::Plan(pattern, ScoreKind::GAT, 4, 32).strategy(), Strategy::Dense);
  EXPECT_EQ(cuda::Plan(cluster, ScoreKind::GAT, 4, 32).strategy(), Strategy::Online);  // Dense 1.17x Online
  EXPECT_EQ(cuda::Plan(pattern, ScoreKind::GATv2, 1, 128).strategy(), Strategy::Online);  // not Dense's
  const HostGraph knn = gen::knn_batch(16);  // MNIST-like: 57 nodes, 13%
  EXPECT_EQ(cuda::Plan(knn, ScoreKind::GT, 1, 128).strategy(), Strategy::Online);
  EXPECT_EQ(cuda::Plan(knn, ScoreKind::GT, 2, 64).strategy(), Strategy::Online);  // Dense 1.17x Online
  EXPECT_EQ(cuda::Plan(graphs().at("batch64"), ScoreKind::GT, 1, 128).strategy(), Strategy::Online);
  EXPECT_EQ(cuda::Plan(graphs().at("power_law"), ScoreKind::GAT, 4, 32).strategy(), Strategy::Online);
  EXPECT_EQ(cuda::Plan(graphs().at("super_node"), ScoreKind::AGNN, 1, 512).strategy(), Strategy::Online);
  EXPECT_EQ(parse_strategy("Dense"), Strategy::Dense);
}

/// The edges of g as given (edge_id order), as device int64 arrays, optionally with g's batch
/// offsets, built into a graph on the device.
struct DeviceEdges {
  std::int64_t *src = nullptr, *dst = nullptr, *batch = nullptr;
  edge_t E = 0;
  std::int64_t graphs = 0;
  explicit DeviceEdges(const HostGraph& g, bool with_batch = true) : E(g.num_edges()) {
    std::vector<std::int64_t> s(static_cast<std::size_t>(E)), d(static_cast<std::size_t>(E));
    for (edge_t e = 0; e < E; ++e) s[std::size_t(g.edge_id[e])] = g.src[e], d[std::size_t(g.edge_id[e])] = g.dst[e];
    src = upload(s), dst = upload(d);
    if (with_batch && !g.graph_ptr.empty()) {
      batch = upload(std::vector<std::int64_t>(g.graph_ptr.begin(), g.graph_ptr.end()));
      graphs = std::int64_t(g.graph_ptr.size()) - 1;
    }
  }
  ~DeviceEdges() {
    cudaFree(src), cudaFree(dst), cudaFree(batch);
  }
  DeviceEdges(const DeviceEdges&) = delete;
  static std::int64_t* upload(const std::vector<std::int64_t>& h) {
    std::int64_t* p = nullptr;
    ok(cudaMalloc(&p, std::max<std::size_t>(1, h.size()) * sizeof(std::int64_t)));
    if (!h.empty()) ok(cudaMemcpy(p, h.data(), h.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice));
    return p;
  }
  cuda::Graph build(const HostGraph& g, cudaStream_t stream = nullptr) const {
    return cuda::Graph(stream, g.num_src_nodes, g.num_nodes, E, src, dst, batch, graphs);
  }
};

void expect_same_graph(const HostGraph& a, const HostGraph& b) {
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_EQ(a.num_src_nodes, b.num_src_nodes);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.src, b.src);
  EXPECT_EQ(a.dst, b.dst);
  EXPECT_EQ(a.edge_id, b.edge_id);
  EXPECT_EQ(a.graph_ptr, b.graph_ptr);
  EXPECT_EQ(a.stats.max, b.stats.max);
  EXPECT_EQ(a.stats.mean, b.stats.mean);
  EXPECT_EQ(a.stats.above_threshold, b.stats.above_threshold);
  EXPECT_EQ(a.stats.empty_rows, b.stats.empty_rows);
}

/// Every test graph, a bipartite one, and each with its edges shuffled (so the device sorts them).
std::vector<std::pair<std::string, HostGraph>> device_build_graphs() {
  std::vector<std::pair<std::string, HostGraph>> out;
  for (const auto* set : {&graphs(), &dense_graphs()})
    for (const auto& [name, g] : *set) out.emplace_back(name, g);
  std::mt19937 rng(5);
  {
    std::uniform_int_distribution<node_t> s(0, 299), d(0, 99);
    std::vector<node_t> src(4000), dst(4000);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = s(rng), dst[i] = d(rng);
    out.emplace_back("bipartite", graph_from_edges(300, 100, src, dst));
  }
  const std::size_t listed = out.size();
  for (std::size_t i = 0; i < listed; ++i) {
    const HostGraph& g = out[i].second;
    std::vector<node_t> src(g.src), dst(g.dst);
    std::vector<std::size_t> perm(src.size());
    for (std::size_t e = 0; e < perm.size(); ++e) perm[e] = e;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<node_t> s2, d2;
    for (std::size_t e : perm) s2.push_back(src[e]), d2.push_back(dst[e]);
    HostGraph shuffled = graph_from_edges(g.num_src_nodes, g.num_nodes, s2, d2);
    shuffled.graph_ptr = g.graph_ptr;
    out.emplace_back(out[i].first + "_shuffled", std::move(shuffled));
  }
  return out;
}

// A graph built on the device is the one graph_from_edges builds on the host: same CSR, edge
// ids, batch and statistics, whether the edges come sorted by destination or not, on any stream.
TEST(DeviceGraph, BuildsWhatTheHostBuilds) {
  if (!cuda::device_available()) GTEST_SKIP();
  cudaStream_t stream;
  ok(cudaStreamCreate(&stream));
  for (const auto& [name, g] : device_build_graphs()) {
    SCOPED_TRACE(name);
    const DeviceEdges edges(g);
    const cuda::Graph dg = edges.build(g, stream);
    EXPECT_EQ(dg.num_edges(), g.num_edges());
    EXPECT_EQ(dg.device().edge_id == nullptr, detail::edges_in_csr_order(g));  // no ids when sorted
    expect_same_graph(dg.host(stream), g);
  }
  ok(cudaStreamDestroy(stream));
}

// Plans over a graph built on the device pick what plans over its host copy pick, and their
// outputs, logsumexps and gradients are bitwise the same, for every strategy that runs the graph
// (Auto's with its backward's data prepared ahead).
TEST(DeviceGraph, PlansAsOverTheHostGraph) {
  if (!cuda::device_available()) GTEST_SKIP();
  cudaStream_t stream;
  ok(cudaStreamCreate(&stream));
  for (const auto& [name, g] : device_build_graphs()) {
    // Shuffled edges (edge ids kept) of a few graphs: a row graph, a batch, duplicates.
    if (name.find("_shuffled") != std::string::npos && name != "empty_rows_shuffled" &&
        name != "batch64_shuffled" && name != "pattern_dup_shuffled")
      continue;
    const DeviceEdges edges(g);
    const cuda::Graph dg = edges.build(g);
    for (const ScoreKind kind : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2}) {
      for (const Shape shape : {Shape{1, 128}, Shape{4, 32}, Shape{3, 7}})
        for (const Strategy s : kStrategies) {
          SCOPED_TRACE(name + " " + to_string(kind) + " " + std::to_string(shape.H) + "x" + std::to_string(shape.D) +
                       " " + to_string(s));
          const std::unique_ptr<cuda::Plan> host = make_plan(g, kind, shape, s);
          std::unique_ptr<cuda::Plan> device;
          try {
            device = std::make_unique<cuda::Plan>(dg, kind, shape.H, shape.D, s);
          } catch (const Error& e) {
            EXPECT_EQ(host, nullptr) << e.what();
          }
          ASSERT_EQ(host == nullptr, device == nullptr);
          if (!host) continue;
          EXPECT_EQ(host->strategy(), device->strategy());
          // The host plan holds its own copy of the graph (edge ids only out of CSR order) and batch.
          const bool in_order = detail::edges_in_csr_order(g);
          EXPECT_EQ(host->device_bytes(),
                    device->device_bytes() + std::size_t(g.num_nodes + 1) * sizeof(edge_t) +
                        std::size_t(g.num_edges()) * (sizeof(node_t) + (in_order ? 0 : sizeof(edge_t))) +
                        g.graph_ptr.size() * sizeof(node_t));
          // Case sizes every input by the destinations: runs on square graphs (bipartite ones:
          // test_model_inputs_cuda.cpp); every strategy at two shapes, Auto at three.
          if (g.bipartite() || (shape.H == 3 && s != Strategy::Auto)) continue;
          BackwardCase c(kind, g, shape, s == Strategy::Auto ? 0 : 1, Dropout{}, 3);
          c.training = true;
          const auto a = c.run(*host).first, b = c.run(*device).first;
          expect_same(a.out, b.out);
          expect_same(a.lse, b.lse);
          if (s != Strategy::Auto && s != Strategy::Online) continue;
          // Auto's device plan builds its backward's data ahead, on a stream of its own.
          if (s == Strategy::Auto) {
            const std::size_t before = device->device_bytes();
            device->prepare_backward(stream);
            if (g.num_edges() > 0) EXPECT_GT(device->device_bytes(), before);
          }
          const auto ga = c.gradients(*host), gb = c.gradients(*device);
          for (std::size_t i = 0; i < ga[0].size(); ++i) expect_same(ga[0][i], gb[0][i]);
        }
    }
  }
  ok(cudaStreamDestroy(stream));
}

// Bad edges and offsets: an Error naming the first one, as the host's checks do.
TEST(DeviceGraph, RejectsBadInput) {
  if (!cuda::device_available()) GTEST_SKIP();
  const auto build = [](node_t ns, node_t n, std::vector<std::int64_t> src, std::vector<std::int64_t> dst,
                        std::vector<std::int64_t> batch = {}) {
    return [=] {
      std::int64_t* s = DeviceEdges::upload(src);
      std::int64_t* d = DeviceEdges::upload(dst);
      std::int64_t* b = batch.empty() ? nullptr : DeviceEdges::upload(batch);
      try {
        cuda::Graph(nullptr, ns, n, edge_t(src.size()), s, d, b, std::int64_t(batch.size()) - 1);
      } catch (...) {
        cudaFree(s), cudaFree(d), cudaFree(b);
        throw;
      }
      cudaFree(s), cudaFree(d), cudaFree(b);
    };
  };
  test::expect_error(build(4, 4, {0, 1, 4, 5}, {1, 2, 3, 0}), {"graph: source 4 of edge 2 is outside [0, 4)"});
  test::expect_error(build(4, 4, {0, 1, 2}, {1, -1, 3}), {"graph: destination -1 of edge 1 is outside [0, 4)"});
  test::expect_error(build(5, 3, {0, 4}, {2, 3}), {"destination 3 of edge 1", "[0, 3)"});  // bipartite
  test::expect_error(build(6, 6, {0, 1, 4}, {1, 0, 5}, {1, 3, 6}), {"graph offsets", "offset 0 is 1"});
  test::expect_error(build(6, 6, {0, 1, 4}, {1, 0, 5}, {0, 4, 3, 6}), {"graph offsets", "offset 2 is 3"});
  test::expect_error(build(6, 6, {0, 1, 4}, {1, 0, 5}, {0, 3, 5}), {"graph offsets", "offset 2 is 5"});
  test::expect_error(build(6, 6, {0, 1, 4}, {1, 4, 5}, {0, 3, 6}), {"graph: edge 1 joins two graphs", "(1 -> 4)"});
  test::expect_error(build(6, 5, {0}, {1}, {0, 5}), {"need a square graph"});
  EXPECT_NO_THROW(build(6, 6, {0, 1, 4}, {1, 0, 5}, {0, 3, 6})());
  EXPECT_NO_THROW(build(0, 0, {}, {}, {0})());
  EXPECT_NO_THROW(build(3, 3, {}, {})());
}

// Dense names the first graph of a batch too large for it, whether the batch's sums come from
// the graph's construction on the device or from the plan's.
TEST(DeviceGraph, DenseNamesTheFirstGraphTooLarge) {
  if (!cuda::device_available()) GTEST_SKIP();
  const std::vector<node_t> bounds{0, 10, 210, 410, 415};  // graphs 1 and 2 exceed 192 nodes
  std::vector<node_t> src, dst;
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i)
    for (node_t v = bounds[i]; v < bounds[i + 1]; ++v)
      src.push_back(v + 1 < bounds[i + 1] ? v + 1 : bounds[i]), dst.push_back(v);  // a ring per graph
  HostGraph g = graph_from_edges(bounds.back(), src, dst);
  g.graph_ptr = bounds;
  const DeviceEdges edges(g);
  const cuda::Graph dg = edges.build(g);
  test::expect_error([&] { cuda::Plan(g, ScoreKind::GT, 1, 32, Strategy::Dense); }, {"at most 192 nodes", "graph 1 has 200"});
  test::expect_error([&] { cuda::Plan(dg, ScoreKind::GT, 1, 32, Strategy::Dense); }, {"at most 192 nodes", "graph 1 has 200"});
}

}  // namespace
