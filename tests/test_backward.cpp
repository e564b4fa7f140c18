// The attention backward: the float64 reference against central finite differences of the
// forward reference; the Kokkos kernels against that reference for every model x forward
// strategy x (H,D) x graph shape; bitwise reproducibility; argument checks.

#include "call_fixture.hpp"
#include "../backends/kokkos/executor.hpp"
#include "expect_error.hpp"
#include "gradient_check.hpp"
#include "graphs.hpp"

#include <dfgnn/backward.hpp>
#include <dfgnn/reference_backward.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>

namespace {

using namespace dfgnn;
using test::expect_error;
using test::gradient_error;
using test::gradient_names;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using View1 = Kokkos::View<float*, Kokkos::LayoutRight, Mem>;

// ---- (a) the reference backward against finite differences ---------------------------------

// Values m / 2^12 in (-1, 1) with m odd or even: x +- 2^-20 is exact in float, and an odd plus
// an even value is an odd multiple of 2^-12, so a step never crosses LeakyReLU's kink.
std::vector<float> grid_values(std::size_t n, unsigned seed, bool odd) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> m(-2047, 2047);
  std::vector<float> v(n);
  for (float& x : v) x = float(2 * m(rng) + (odd ? 1 : 0)) / 4096.0f;
  return v;
}

// 7 nodes; random edges into nodes 0..5 (node 6 has no in-edge), a self loop, a repeated edge.
// Bipartite: 9 sources (8 without an edge) into 5 destinations (4 without an edge).
HostGraph small_graph(unsigned seed, bool bipartite = false) {
  const node_t ns = bipartite ? 9 : 7, n = bipartite ? 5 : 7;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<node_t> any(0, bipartite ? ns - 2 : ns - 1), dest(0, n - 2);
  std::vector<node_t> src, dst;
  for (int i = 0; i < 12; ++i) src.push_back(any(rng)), dst.push_back(dest(rng));
  src.push_back(3), dst.push_back(3);
  src.push_back(src[0]), dst.push_back(dst[0]);
  return graph_from_edges(ns, n, src, dst);
}

// A forward input and the reference's gradient for it.
struct Input {
  const char* name;
  std::vector<float> values;
  std::vector<double> grad;
};

// Central differences of sum(out * dout) with respect to every input entry, step 2^-20 (~1e-6),
// against the reference gradients: max |grad - fd| / max |fd| per input.
void expect_finite_differences(const std::vector<Input*>& inputs,
                               const std::function<std::vector<double>()>& forward,
                               const std::vector<float>& dout) {
  const double step = std::ldexp(1.0, -20);
  auto loss = [&] {
    const std::vector<double> out = forward();
    double l = 0;
    for (std::size_t i = 0; i < out.size(); ++i) l += out[i] * dout[i];
    return l;
  };
  for (Input* in : inputs) {
    ASSERT_EQ(in->grad.size(), in->values.size()) << in->name;
    double err = 0, scale = std::numeric_limits<double>::min();
    for (std::size_t j = 0; j < in->values.size(); ++j) {
      const float x = in->values[j];
      in->values[j] = float(x + step);
      const double up = loss();
      in->values[j] = float(x - step);
      const double down = loss();
      in->values[j] = x;
      const double fd = (up - down) / (2 * step);
      err = std::max(err, std::abs(fd - in->grad[j]));
      scale = std::max(scale, std::abs(fd));
    }
    EXPECT_LT(err / scale, 1e-6) << in->name;
  }
}

// kind, H, variant: 0 plain, 1 edge values [E,1], 2 edge values [E,H], 3 [E,H] and dropout,
// 4 edge features (ReferenceOptions::edge_features) with edge values and dropout (not AGNN's:
// it has no edge argument); bipartite (AGNN with its X_dst).
using ReferenceParam = std::tuple<ScoreKind, int, int, bool>;

class BackwardReference : public ::testing::TestWithParam<ReferenceParam> {};

TEST_P(BackwardReference, MatchesFiniteDifferences) {
  // Plain variables, not structured bindings: the lambdas below capture them (C++17).
  const ScoreKind kind = std::get<0>(GetParam());
  const int H = std::get<1>(GetParam()), variant = std::get<2>(GetParam()), D = 3;
  const bool bipartite = std::get<3>(GetParam());
  if (variant == 4 && kind == ScoreKind::AGNN) GTEST_SKIP() << "AGNN has no edge features";
  const HostGraph g = small_graph(unsigned(10 * H + variant), bipartite);
  // Entries per node at the destinations (nh, nhd) and the sources (sh, shd).
  const std::size_t nh = std::size_t(g.num_nodes) * H, nhd = nh * D;
  const std::size_t sh = std::size_t(g.num_src_nodes) * H, shd = sh * D;
  const int ew = variant == 0 ? 0 : variant == 1 ? 1 : H;
  const auto w = test::random_values(std::size_t(g.num_edges()) * ew, 5, 0.5f, 1.5f);
  ReferenceOptions opt(HostEdgeValues{ew ? w.data() : nullptr, ew});
  if (variant >= 3) opt.dropout = Dropout{0.3f, 7};
  // Edge features: [E,H] for GAT, [E,H,D] for GT and GATv2; their gradient checked like the inputs'.
  const std::size_t eh = std::size_t(g.num_edges()) * H;
  Input edge{"edge features", grid_values(variant == 4 ? (kind == ScoreKind::GAT ? eh : eh * D) : 0, 4, false)};
  if (variant == 4) opt.edge_features = edge.values.data();
  std::vector<Input*> with_edge;
  if (variant == 4) with_edge.push_back(&edge);
  const auto dout = test::random_values(nhd, 6);
  switch (kind) {
    case ScoreKind::GT: {
      const GT model{variant == 2 ? 0.7f : 0.0f};  // an explicit scale once, else 1/sqrt(D)
      Input Q{"Q", grid_values(nhd, 1, true)}, K{"K", grid_values(shd, 2, false)}, V{"V", grid_values(shd, 3, true)};
      auto r = reference_attention_backward(g, H, D, model, Q.values.data(), K.values.data(), V.values.data(),
                                            dout.data(), opt);
      Q.grad = r.dQ, K.grad = r.dK, V.grad = r.dV, edge.grad = r.dE;
      std::vector<Input*> inputs{&Q, &K, &V};
      inputs.insert(inputs.end(), with_edge.begin(), with_edge.end());
      expect_finite_differences(inputs, [&] {
        return reference_attention(g, H, D, model, Q.values.data(), K.values.data(), V.values.data(), opt);
      }, dout);
      break;
    }
    case ScoreKind::AGNN:
      // X standing in for X_dst (square graphs only), and X_dst of its own.
      for (const bool own_dst : bipartite ? std::vector<bool>{true} : std::vector<bool>{false, true})
        for (int count : {1, H}) {
          SCOPED_TRACE("beta entries " + std::to_string(count) + (own_dst ? ", X_dst" : ""));
          Input X{"X", grid_values(shd, 1, true)}, beta{"beta", grid_values(std::size_t(count), 2, true)},
              Y{"X_dst", grid_values(own_dst ? nhd : 0, 3, false)};
          if (!own_dst) {
            auto r = reference_attention_backward(g, H, D, AGNN{}, X.values.data(), beta.values.data(), count,
                                                  dout.data(), opt);
            X.grad = r.dX, beta.grad = r.dbeta;
            expect_finite_differences({&X, &beta}, [&] {
              return reference_attention(g, H, D, AGNN{}, X.values.data(), beta.values.data(), count, opt);
            }, dout);
            continue;
          }
          auto r = reference_attention_backward(g, H, D, AGNN{}, X.values.data(), beta.values.data(), count,
                                                Y.values.data(), dout.data(), opt);
          X.grad = r.dX, beta.grad = r.dbeta, Y.grad = r.dX_dst;
          expect_finite_differences({&X, &beta, &Y}, [&] {
            return reference_attention(g, H, D, AGNN{}, X.values.data(), beta.values.data(), count, Y.values.data(),
                                       opt);
          }, dout);
        }
      break;
    case ScoreKind::GAT: {
      const GAT model{0.2f};
      Input el{"el", grid_values(sh, 1, true)}, er{"er", grid_values(nh, 2, false)}, V{"V", grid_values(shd, 3, true)};
      auto r = reference_attention_backward(g, H, D, model, el.values.data(), er.values.data(), V.values.data(),
                                            dout.data(), opt);
      el.grad = r.del, er.grad = r.der, V.grad = r.dV, edge.grad = r.dee;
      std::vector<Input*> inputs{&el, &er, &V};
      inputs.insert(inputs.end(), with_edge.begin(), with_edge.end());
      expect_finite_differences(inputs, [&] {
        return reference_attention(g, H, D, model, el.values.data(), er.values.data(), V.values.data(), opt);
      }, dout);
      break;
    }
    case ScoreKind::GATv2: {
      const GATv2 model{0.2f};
      Input XL{"XL", grid_values(shd, 1, true)}, XR{"XR", grid_values(nhd, 2, false)},
          a{"a", grid_values(std::size_t(H) * D, 3, true)};
      auto r = reference_attention_backward(g, H, D, model, XL.values.data(), XR.values.data(), a.values.data(),
                                            dout.data(), opt);
      XL.grad = r.dXL, XR.grad = r.dXR, a.grad = r.da, edge.grad = r.dE;
      std::vector<Input*> inputs{&XL, &XR, &a};
      inputs.insert(inputs.end(), with_edge.begin(), with_edge.end());
      expect_finite_differences(inputs, [&] {
        return reference_attention(g, H, D, model, XL.values.data(), XR.values.data(), a.values.data(), opt);
      }, dout);
      break;
    }
    case ScoreKind::Count: FAIL() << "Count is no model";  // a new kind warns here (-Wswitch)
  }
}

std::string reference_name(const ::testing::TestParamInfo<ReferenceParam>& info) {
  const auto [kind, H, variant, bipartite] = info.param;
  static const char* const variants[] = {"plain", "edge_values", "head_edge_values", "dropout", "edge_features"};
  return std::string(to_string(kind)) + "_H" + std::to_string(H) + "_" + variants[variant] +
         (bipartite ? "_bipartite" : "");
}

INSTANTIATE_TEST_SUITE_P(
    Backward, BackwardReference,
    ::testing::Combine(::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(1, 2), ::testing::Range(0, 5), ::testing::Bool()),
    reference_name);

// ---- (b) the Kokkos backward against the reference ----------------------------------------

// v after `offset` padding values: v's data at .data() + offset.
template <class T>
auto to_device(const std::vector<T>& v, std::size_t offset = 0) {
  std::vector<T> padded(offset, T(1));
  padded.insert(padded.end(), v.begin(), v.end());
  return detail::upload<T, Mem>("test", padded);
}

View1 poisoned(std::size_t n) {
  View1 v("gradient", n);
  Kokkos::deep_copy(v, std::numeric_limits<float>::quiet_NaN());
  return v;
}

std::vector<float> to_host(const View1& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<float>(h.data(), h.data() + h.size());
}


// One model's random inputs on one graph: the Kokkos forward (training mode) and backward
// through a plan, and the reference backward; gradients in gradient_names(kind) order.
class Case {
 public:
  Case(ScoreKind kind, const HostGraph& g, int H, int D, unsigned seed, int edge_value_heads = 0,
       Dropout dropout = {}, int beta_count = 0)
      : kind_(kind), g_(g), H_(H), D_(D), ew_(edge_value_heads), dropout_(dropout),
        beta_count_(beta_count ? beta_count : H) {
    const std::size_t nh = std::size_t(g.num_nodes) * H, nhd = nh * D;
    auto rand = [&](std::size_t n, unsigned k) { return test::random_values(n, seed * 31 + k); };
    a_ = rand(nhd, 1), b_ = rand(nhd, 2), c_ = rand(nhd, 3), l_ = rand(nh, 4), r_ = rand(nh, 5);
    dout_ = rand(nhd, 6);
    // GATv2 weights scaled like an initialised layer (~1/sqrt(D)) so scores stay O(1).
    head_ = rand(std::size_t(H) * D, 7);
    for (float& x : head_) x /= std::sqrt(float(D));
    beta_ = test::random_values(std::size_t(beta_count_), seed, 0.5f, 2.0f);
    w_ = test::random_values(std::size_t(g.num_edges()) * std::size_t(ew_), seed + 8, 0.1f, 2.0f);
  }

  /// Moves every input, or every gradient, one float past a 16-byte boundary.
  void misalign(bool inputs, bool gradients) { in_off_ = inputs, grad_off_ = gradients; }

  /// Zeroes node n's first feature tensor (Q, X or XL).
  void zero_features(node_t n) { std::fill_n(a_.begin() + std::ptrdiff_t(n) * H_ * D_, H_ * D_, 0.0f); }
  /// AGNN: passes the second feature tensor as X_dst (else X stands in for it).
  void own_destinations() { own_dst_ = true; }
  /// Zeroes node n's second feature tensor (K, AGNN's X_dst, XR).
  void zero_destination(node_t n) { std::fill_n(b_.begin() + std::ptrdiff_t(n) * H_ * D_, H_ * D_, 0.0f); }

  std::vector<std::vector<double>> reference() const {
    ReferenceOptions o(HostEdgeValues{ew_ ? w_.data() : nullptr, ew_});
    o.dropout = dropout_;
    switch (kind_) {
      case ScoreKind::GT: {
        auto r = reference_attention_backward(g_, H_, D_, GT{}, a_.data(), b_.data(), c_.data(), dout_.data(), o);
        return {r.dQ, r.dK, r.dV};
      }
      case ScoreKind::AGNN: {
        if (own_dst_) {
          auto r = reference_attention_backward(g_, H_, D_, AGNN{}, a_.data(), beta_.data(), beta_count_, b_.data(),
                                                dout_.data(), o);
          return {r.dX, r.dbeta, r.dX_dst};
        }
        auto r = reference_attention_backward(g_, H_, D_, AGNN{}, a_.data(), beta_.data(), beta_count_,
                                              dout_.data(), o);
        return {r.dX, r.dbeta};
      }
      case ScoreKind::GAT: {
        auto r = reference_attention_backward(g_, H_, D_, GAT{0.2f}, l_.data(), r_.data(), c_.data(), dout_.data(), o);
        return {r.del, r.der, r.dV};
      }
      case ScoreKind::GATv2: {
        auto r = reference_attention_backward(g_, H_, D_, GATv2{0.2f}, a_.data(), b_.data(), head_.data(),
                                              dout_.data(), o);
        return {r.dXL, r.dXR, r.da};
      }
      case ScoreKind::Count: ADD_FAILURE() << "Count names no model"; break;
    }
    return {};
  }

  // The forward with `strategy`, then `runs` backward calls through the same plan, each into
  // fresh NaN-poisoned gradients; one list of host gradients per run.
  std::vector<std::vector<std::vector<float>>> kokkos(Strategy strategy, int runs = 1,
                                                      Backend backend = Backend::Auto) const {
    const std::size_t n = std::size_t(g_.num_nodes), h = std::size_t(H_), d = std::size_t(D_);
    auto in = [&](const std::vector<float>& v) { return to_device(v, in_off_); };
    const auto A = in(a_), B = in(b_), C = in(c_), L = in(l_), R = in(r_), HD = in(head_), BETA = in(beta_),
               W = in(w_), DOUT = in(dout_);
    auto at = [&](const View1& v) { return v.data() + in_off_; };
    auto f3 = [&](const View1& v) { return NodeFeatures<Mem>(at(v), n, h, d); };
    auto f2 = [&](const View1& v) { return NodeScalars<Mem>(at(v), n, h); };
    Options<Mem> opt;
    if (ew_) opt.edge_values = EdgeValues<Mem>(at(W), std::size_t(g_.num_edges()), std::size_t(ew_));
    opt.dropout = dropout_;
    opt.logsumexp = decltype(opt.logsumexp)("lse", n, h);

    Exec exec;
    const Plan<Exec> plan(exec, Graph<Mem>(g_), kind_, H_, D_, strategy, backend);
    const NodeOutput<Mem> out("out", n, h, d);
    const HeadScalars<Mem> beta(at(BETA), std::size_t(beta_count_));
    switch (kind_) {
      case ScoreKind::GT: attention(exec, plan, GT{}, f3(A), f3(B), f3(C), out, opt); break;
      case ScoreKind::AGNN:
        if (own_dst_)
          attention(exec, plan, AGNN{}, f3(A), beta, f3(B), out, opt);
        else
          attention(exec, plan, AGNN{}, f3(A), beta, out, opt);
        break;
      case ScoreKind::GAT: attention(exec, plan, GAT{0.2f}, f2(L), f2(R), f3(C), out, opt); break;
      case ScoreKind::GATv2:
        attention(exec, plan, GATv2{0.2f}, f3(A), f3(B), HeadFeatures<Mem>(at(HD), h, d), out, opt);
        break;
      case ScoreKind::Count: ADD_FAILURE() << "Count names no model"; break;
    }
    const NodeScalars<Mem> lse = opt.logsumexp;
    std::vector<std::vector<std::vector<float>>> results;
    for (int run = 0; run < runs; ++run) {
      std::vector<View1> grads;
      auto grad = [&](std::size_t size) { return grads.emplace_back(poisoned(grad_off_ + size)).data() + grad_off_; };
      auto g3 = [&] { return NodeOutput<Mem>(grad(n * h * d), n, h, d); };
      auto g2 = [&](std::size_t rows, std::size_t cols) { return NodeScalarsOutput<Mem>(grad(rows * cols), rows, cols); };
      switch (kind_) {
        case ScoreKind::GT: {
          const auto dQ = g3(), dK = g3(), dV = g3();
          attention_backward(exec, plan, GT{}, f3(A), f3(B), f3(C), out, lse, f3(DOUT), dQ, dK, dV, opt);
          break;
        }
        case ScoreKind::AGNN: {
          const auto dX = g3();
          const HeadScalarsOutput<Mem> dbeta(grad(std::size_t(beta_count_)), std::size_t(beta_count_));
          if (own_dst_)
            attention_backward(exec, plan, AGNN{}, f3(A), beta, f3(B), out, lse, f3(DOUT), dX, dbeta, g3(), opt);
          else
            attention_backward(exec, plan, AGNN{}, f3(A), beta, out, lse, f3(DOUT), dX, dbeta, opt);
          break;
        }
        case ScoreKind::GAT: {
          const auto del = g2(n, h), der = g2(n, h);
          const auto dV = g3();
          attention_backward(exec, plan, GAT{0.2f}, f2(L), f2(R), f3(C), out, lse, f3(DOUT), del, der, dV, opt);
          break;
        }
        case ScoreKind::GATv2: {
          const auto dXL = g3(), dXR = g3();
          const auto da = g2(h, d);
          attention_backward(exec, plan, GATv2{0.2f}, f3(A), f3(B), HeadFeatures<Mem>(at(HD), h, d), out, lse,
                             f3(DOUT), dXL, dXR, da, opt);
          break;
        }
        case ScoreKind::Count: ADD_FAILURE() << "Count names no model"; break;
      }
      exec.fence();
      auto& host = results.emplace_back();
      for (const View1& v : grads) {
        std::vector<float> all = to_host(v);
        host.emplace_back(all.begin() + std::ptrdiff_t(grad_off_), all.end());
      }
    }
    return results;
  }

 private:
  ScoreKind kind_;
  const HostGraph& g_;
  int H_, D_, ew_;
  Dropout dropout_;
  int beta_count_;
  std::vector<float> a_, b_, c_, l_, r_, dout_, head_, beta_, w_;
  std::size_t in_off_ = 0, grad_off_ = 0;
  bool own_dst_ = false;
};

// Beyond the Serial/OpenMP scratch of 32 KB and CUDA's shared memory alike, as the forward tests.
const std::vector<test::NamedGraph>& graphs() {
  static const auto gs = test::test_graphs(20000);
  return gs;
}

// Node 0 has 20500 in-edges and node 1 20500 out-edges, both split into many chunks (no forward
// graph has a heavy column). Node 1's row (700 in-edges) and node 0's column (300 out-edges) are
// heavy too; rows and columns 0 start on a chunk boundary, those of node 1 off one. Sources and
// destinations are random: with half of node 0's in-edges from one node, its destination-side
// gradients cancel beyond what the forward's fp32 out and lse resolve (docs/backward.md).
const test::NamedGraph& hubs() {
  static const test::NamedGraph g = [] {
    const node_t n = 2000;
    std::mt19937 rng(5);
    std::uniform_int_distribution<node_t> any(0, n - 1);
    std::vector<node_t> src, dst;
    auto edge = [&](node_t u, node_t v) { src.push_back(u), dst.push_back(v); };
    for (int i = 0; i < 20500; ++i) edge(any(rng), 0), edge(1, any(rng));
    for (int i = 0; i < 700; ++i) edge(any(rng), 1);
    for (int i = 0; i < 300; ++i) edge(0, any(rng));
    for (node_t v = 2; v < n; ++v) edge(any(rng), v);
    return test::NamedGraph{"hubs", graph_from_edges(n, src, dst)};
  }();
  return g;
}

// What a backward runs on here: Auto, and where Auto picks the CUDA-native kernels (Kokkos::Cuda
// with DFGNN_ENABLE_CUDA) the portable ones too.
std::vector<Backend> backends() {
#ifdef DFGNN_NATIVE_CUDA
  if (std::is_same_v<Exec, Kokkos::Cuda>) return {Backend::Auto, Backend::Portable};
#endif
  return {Backend::Auto};
}

// Case c's gradients on every backend against its reference.
void expect_case_matches(const Case& c, ScoreKind kind, Strategy strategy, const std::string& label) {
  const auto names = gradient_names(kind);
  const auto ref = c.reference();
  for (Backend backend : backends()) {
    const auto got = c.kokkos(strategy, 1, backend).front();
    for (std::size_t i = 0; i < ref.size(); ++i)
      EXPECT_LT(gradient_error(got[i], ref[i]), test::gradient_tolerance(kind, i))
          << label << " " << names[i] << (backend == Backend::Portable ? " portable" : " auto");
  }
}

// Plain, then with edge values (per edge or per head, alternating over graphs), dropout and, for
// AGNN, a shared beta; `index` varies the inputs over graphs.
void expect_matches_reference(ScoreKind kind, Strategy strategy, std::pair<int, int> hd,
                              const test::NamedGraph& graph, int index) {
  for (bool options : {false, true}) {
    SCOPED_TRACE(options ? "edge values and dropout" : "plain");
    const Case c = options ? Case(kind, graph.graph, hd.first, hd.second, unsigned(index) + 31,
                                  index % 2 ? hd.first : 1, Dropout{0.3f, 42}, 1)
                           : Case(kind, graph.graph, hd.first, hd.second, unsigned(index) + 11);
    expect_case_matches(c, kind, strategy, graph.name);
  }
}

const auto kKinds = ::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2);
const auto kShapes = ::testing::Values(std::pair{1, 128}, std::pair{4, 32}, std::pair{2, 16}, std::pair{3, 7});

std::string shape_name(std::pair<int, int> hd) {
  return "H" + std::to_string(hd.first) + "D" + std::to_string(hd.second);
}

using KernelParam = std::tuple<ScoreKind, Strategy, std::pair<int, int>, int>;

class BackwardKernels : public ::testing::TestWithParam<KernelParam> {};

TEST_P(BackwardKernels, MatchesFloat64Reference) {
  const auto [kind, strategy, hd, graph] = GetParam();
  expect_matches_reference(kind, strategy, hd, graphs()[std::size_t(graph)], graph);
}

std::string kernel_name(const ::testing::TestParamInfo<KernelParam>& info) {
  const auto [kind, strategy, hd, graph] = info.param;
  return std::string(to_string(kind)) + "_" + to_string(strategy) + "_" + shape_name(hd) + "_" +
         graphs()[std::size_t(graph)].name;
}

INSTANTIATE_TEST_SUITE_P(
    Backward, BackwardKernels,
    ::testing::Combine(kKinds, ::testing::Values(Strategy::SMMF, Strategy::PMF, Strategy::Unfused), kShapes,
                       ::testing::Range(0, int(graphs().size()))),
    kernel_name);

// Gathers wider than a chunk of entries per lane (GT's source side at D = 300: 150 chunks of 4
// over 32 lanes) take several passes.
INSTANTIATE_TEST_SUITE_P(
    Wide, BackwardKernels,
    ::testing::Combine(kKinds, ::testing::Values(Strategy::PMF), ::testing::Values(std::pair{1, 300}),
                       ::testing::Range(0, int(graphs().size()))),
    kernel_name);

using HubParam = std::tuple<ScoreKind, std::pair<int, int>>;

class BackwardHubs : public ::testing::TestWithParam<HubParam> {};

// The forward strategy reaches the backward only through out and lse, covered above: PMF alone.
TEST_P(BackwardHubs, MatchesFloat64Reference) {
  const auto [kind, hd] = GetParam();
  expect_matches_reference(kind, Strategy::PMF, hd, hubs(), int(graphs().size()));
}

INSTANTIATE_TEST_SUITE_P(Backward, BackwardHubs, ::testing::Combine(kKinds, kShapes),
                         [](const ::testing::TestParamInfo<HubParam>& info) {
                           return std::string(to_string(std::get<0>(info.param))) + "_" +
                                  shape_name(std::get<1>(info.param));
                         });

// Rows one float past a 16-byte boundary, of the inputs or of the gradients alone, take one-entry
// accesses at D % 4 == 0 (where a 16-byte access would fault on the GPU); a hub graph, so that
// the heavy segments' partials are read at that width too.
TEST(BackwardMisaligned, MatchesFloat64Reference) {
  for (ScoreKind kind : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2}) {
    for (const auto hd : {std::pair{1, 128}, std::pair{2, 16}}) {
      for (const bool inputs : {true, false}) {
        const std::string label =
            std::string(to_string(kind)) + " " + shape_name(hd) + (inputs ? " inputs" : " gradients");
        Case c(kind, hubs().graph, hd.first, hd.second, 17, hd.first, Dropout{0.3f, 42});
        c.misalign(inputs, !inputs);
        expect_case_matches(c, kind, Strategy::Auto, label);
      }
    }
  }
}

// The destination walk takes at most 8 lanes a group where Online would (D <= 128, D % 4 == 0,
// N H 8 >= concurrency: on a host, every graph) and the in-degrees are even; else up to 32. On
// a GPU `even` sits on the bar and is even, `uneven` too but a power law, `small` never fills
// it. Every model, plain and with edge values and dropout, is checked on each.
TEST(BackwardLanes, NarrowOnEvenRowsThatFillTheDevice) {
  const int concurrency = int(Exec().concurrency());
  const node_t bar = std::max<node_t>(64, node_t((concurrency + kokkos_impl::kNarrowLanes - 1) / kokkos_impl::kNarrowLanes));
  const test::NamedGraph even{"even", test::random_graph(bar, std::size_t(bar) * 8, 3)};
  const test::NamedGraph uneven{"uneven", test::power_law_graph(bar, std::size_t(bar) * 8, 4)};
  const test::NamedGraph small{"small", test::random_graph(64, 500, 5)};
  auto is_even = [](const HostGraph& g) {
    return !whole_degrees(g.row_ptr, std::numeric_limits<edge_t>::max()).uneven();
  };
  ASSERT_TRUE(is_even(even.graph));
  ASSERT_FALSE(is_even(uneven.graph));
  int index = 0;
  for (const auto hd : {std::pair{1, 128}, std::pair{2, 64}, std::pair{1, 256}, std::pair{1, 100}}) {
    const auto [H, D] = hd;
    for (const test::NamedGraph* g : {&even, &uneven, &small}) {
      SCOPED_TRACE(g->name + " " + shape_name(hd));
      const bool fills = std::int64_t(g->graph.num_nodes) * H * kokkos_impl::kNarrowLanes >= concurrency;
      const Plan<Exec> plan(Exec(), Graph<Mem>(g->graph), ScoreKind::GT, H, D, Strategy::Online, Backend::Portable);
      const int widest = kokkos_impl::Geometry<Exec>::max_lanes();
      EXPECT_EQ(kokkos_impl::layout_of(plan).row_walk_lanes,
                fills && D % 4 == 0 && D <= 128 && is_even(g->graph) ? std::min(kokkos_impl::kNarrowLanes, widest)
                                                                    : widest);
      for (ScoreKind kind : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2})
        expect_matches_reference(kind, Strategy::Online, hd, *g, index++);
    }
  }
}

// AGNN takes the cosine with a zero vector as 0: no gradient flows through such scores.
TEST(BackwardZeroVectors, AgnnMatchesReference) {
  const auto& g = graphs().front().graph;
  for (Strategy strategy : {Strategy::SMMF, Strategy::PMF}) {
    Case c(ScoreKind::AGNN, g, 2, 16, 4);
    for (node_t n = 0; n < 40; n += 3) c.zero_features(n);
    const auto got = c.kokkos(strategy).front();
    const auto ref = c.reference();
    for (std::size_t i = 0; i < ref.size(); ++i)
      EXPECT_LT(gradient_error(got[i], ref[i]), test::gradient_tolerance(ScoreKind::AGNN, i)) << gradient_names(ScoreKind::AGNN)[i];
  }
}

// AGNN with its own X_dst (other destination features of a square graph): the hub graph's heavy
// segments, plain, with rows off a 16-byte boundary, and with zero vectors on both sides, edge
// values, dropout and a shared beta; two runs bitwise alike.
TEST(BackwardAgnnDestinations, MatchesFloat64Reference) {
  for (const auto hd : {std::pair{1, 128}, std::pair{2, 16}, std::pair{3, 7}}) {
    for (int variant = 0; variant < 3; ++variant) {
      const std::string label = shape_name(hd) + (variant == 1 ? " misaligned" : variant == 2 ? " zero vectors" : "");
      Case c = variant == 2 ? Case(ScoreKind::AGNN, hubs().graph, hd.first, hd.second, 19, hd.first, Dropout{0.3f, 42}, 1)
                            : Case(ScoreKind::AGNN, hubs().graph, hd.first, hd.second, 19);
      c.own_destinations();
      if (variant == 1) c.misalign(true, true);
      for (node_t n = 0; variant == 2 && n < 40; n += 3) c.zero_features(n), c.zero_destination(n + 1);
      expect_case_matches(c, ScoreKind::AGNN, Strategy::Auto, label);
      for (Backend backend : backends()) {
        const auto runs = c.kokkos(Strategy::PMF, 2, backend);
        for (std::size_t i = 0; i < runs[0].size(); ++i)
          EXPECT_EQ(std::memcmp(runs[0][i].data(), runs[1][i].data(), runs[0][i].size() * sizeof(float)), 0)
              << label << " " << gradient_names(ScoreKind::AGNN)[i];
      }
    }
  }
}

// ---- (c) reproducibility ------------------------------------------------------------------

TEST(BackwardReproducible, TwoRunsAreBitwiseEqual) {
  auto named = [](const char* name) {
    return &*std::find_if(graphs().begin(), graphs().end(), [&](const auto& g) { return g.name == name; });
  };
  for (const test::NamedGraph* graph : {named("super_node"), named("power_law"), &hubs()}) {
    for (ScoreKind kind : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2}) {
      SCOPED_TRACE(graph->name + " " + to_string(kind));
      for (Backend backend : backends()) {
        const auto runs = Case(kind, graph->graph, 4, 8, 3, 4, Dropout{0.2f, 9}).kokkos(Strategy::PMF, 2, backend);
        for (std::size_t i = 0; i < runs[0].size(); ++i)
          EXPECT_EQ(std::memcmp(runs[0][i].data(), runs[1][i].data(), runs[0][i].size() * sizeof(float)), 0)
              << gradient_names(kind)[i] << (backend == Backend::Portable ? " portable" : " auto");
      }
    }
  }
}

// ---- (d) argument checks ------------------------------------------------------------------

class BackwardErrors : public test::CallFixture {
 protected:
  using View2 = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;
  using View3 = Kokkos::View<float***, Kokkos::LayoutRight, Mem>;

  View3 f3(std::size_t n = N) { return View3(buffer(n * H * D).data(), n, H, D); }
  View2 f2(std::size_t n = N) { return View2(buffer(n * H).data(), n, H); }
  View2 a2(std::size_t h = H) { return View2(buffer(h * D).data(), h, D); }
  View1 f1(std::size_t n = H) { return buffer(n); }
};

TEST_F(BackwardErrors, PlanOfAnotherModel) {
  const auto& gat = plan(ScoreKind::GAT);
  expect_error([&] { attention_backward(exec_, gat, GT{}, f3(), f3(), f3(), f3(), f2(), f3(), f3(), f3(), f3()); },
               {"attention_backward:", "made for gat", "gt"});
  expect_error([&] { attention_backward(exec_, gat, AGNN{}, f3(), f1(), f3(), f2(), f3(), f3(), f1()); },
               {"attention_backward:", "made for gat", "agnn"});
}

TEST_F(BackwardErrors, GtShapes) {
  const auto& p = plan(ScoreKind::GT);
  const auto bad = f3(N + 1);
  const std::vector<std::pair<const char*, int>> args = {{"Q", 0}, {"K", 1}, {"V", 2}, {"out", 3},
                                                         {"dOut", 4}, {"dQ", 5}, {"dK", 6}, {"dV", 7}};
  for (const auto& [name, which] : args) {
    std::vector<View3> t = {f3(), f3(), f3(), f3(), f3(), f3(), f3(), f3()};
    t[std::size_t(which)] = bad;
    expect_error([&] { attention_backward(exec_, p, GT{}, t[0], t[1], t[2], t[3], f2(), t[4], t[5], t[6], t[7]); },
                 {"attention_backward: ", std::string(name) + " has shape [14,2,3]", "[N,H,D]"});
  }
  expect_error([&] { attention_backward(exec_, p, GT{}, f3(), f3(), f3(), f3(), f2(N - 1), f3(), f3(), f3(), f3()); },
               {"logsumexp has shape [12,2]", "[N,H]"});
  expect_error([&] { attention_backward(exec_, p, GT{}, f3(), f3(), f3(), f3(), f2(), f3(), View3(nullptr, N, H, D), f3(), f3()); },
               {"dQ is null"});
}

TEST_F(BackwardErrors, OtherModelsShapes) {
  const auto& agnn = plan(ScoreKind::AGNN);
  expect_error([&] { attention_backward(exec_, agnn, AGNN{}, f3(), f1(H + 1), f3(), f2(), f3(), f3(), f1()); },
               {"beta has 3 entries"});
  expect_error([&] { attention_backward(exec_, agnn, AGNN{}, f3(), f1(), f3(), f2(), f3(), f3(N + 1), f1()); },
               {"dX has shape"});
  expect_error([&] { attention_backward(exec_, agnn, AGNN{}, f3(), f1(H), f3(), f2(), f3(), f3(), f1(1)); },
               {"dbeta has shape [1]", "= [2]"});
  expect_error([&] { attention_backward(exec_, agnn, AGNN{}, f3(), f1(1), f3(), f2(), f3(), f3(), f1(H)); },
               {"dbeta has shape [2]", "= [1]"});
  const auto& gat = plan(ScoreKind::GAT);
  expect_error([&] { attention_backward(exec_, gat, GAT{}, f2(N + 1), f2(), f3(), f3(), f2(), f3(), f2(), f2(), f3()); },
               {"el has shape"});
  expect_error([&] { attention_backward(exec_, gat, GAT{}, f2(), f2(), f3(), f3(), f2(), f3(), f2(), f2(N - 1), f3()); },
               {"der has shape", "[N,H]"});
  expect_error([&] { attention_backward(exec_, gat, GAT{}, f2(), f2(), f3(), f3(), f2(), f3(), f2(), f2(), f3(N - 1)); },
               {"dV has shape"});
  const auto& gatv2 = plan(ScoreKind::GATv2);
  expect_error([&] { attention_backward(exec_, gatv2, GATv2{}, f3(), f3(), a2(H + 1), f3(), f2(), f3(), f3(), f3(), a2()); },
               {"a has shape", "[H,D]"});
  expect_error([&] { attention_backward(exec_, gatv2, GATv2{}, f3(), f3(), a2(), f3(), f2(), f3(), f3(), f3(), a2(H - 1)); },
               {"da has shape [1,3]", "[H,D]"});
  expect_error([&] { attention_backward(exec_, gatv2, GATv2{}, f3(), f3(N + 1), a2(), f3(), f2(), f3(), f3(), f3(), a2()); },
               {"XR has shape"});
}

TEST_F(BackwardErrors, GradientsOverlappingInputsOrEachOther) {
  const auto& gt = plan(ScoreKind::GT);
  const auto Q = f3(), dOut = f3(), dK = f3();
  expect_error([&] { attention_backward(exec_, gt, GT{}, Q, f3(), f3(), f3(), f2(), f3(), Q, f3(), f3()); },
               {"dQ overlaps Q"});
  expect_error([&] { attention_backward(exec_, gt, GT{}, f3(), f3(), f3(), f3(), f2(), dOut, f3(), f3(), dOut); },
               {"dV overlaps dOut"});
  expect_error([&] { attention_backward(exec_, gt, GT{}, f3(), f3(), f3(), f3(), f2(), f3(), f3(), dK, dK); },
               {"dK overlaps dV"});
  const auto out = f3();
  const View2 lse_inside(out.data() + 1, N, H);
  expect_error([&] { attention_backward(exec_, gt, GT{}, f3(), f3(), f3(), f3(), lse_inside, f3(), f3(), f3(), out); },
               {"dV overlaps logsumexp"});
  Options<Mem> w;
  const View1 big = buffer(N * H * D + std::size_t(host_.num_edges()));
  w.edge_values = EdgeValues<Mem>(big.data() + N * H * D - 1, std::size_t(host_.num_edges()), 1);
  expect_error([&] { attention_backward(exec_, gt, GT{}, f3(), f3(), f3(), f3(), f2(), f3(), View3(big.data(), N, H, D), f3(), f3(), w); },
               {"dQ overlaps edge_values"});

  const auto& agnn = plan(ScoreKind::AGNN);
  const auto beta = f1();
  expect_error([&] { attention_backward(exec_, agnn, AGNN{}, f3(), beta, f3(), f2(), f3(), f3(), beta); },
               {"dbeta overlaps beta"});
  const auto X = f3();
  expect_error([&] { attention_backward(exec_, agnn, AGNN{}, X, f1(), f3(), f2(), f3(), X, f1()); },
               {"dX overlaps X"});
  const auto& gat = plan(ScoreKind::GAT);
  const auto er = f2();
  expect_error([&] { attention_backward(exec_, gat, GAT{}, f2(), er, f3(), f3(), f2(), f3(), er, f2(), f3()); },
               {"del overlaps er"});
  const auto& gatv2 = plan(ScoreKind::GATv2);
  const auto a = a2();
  expect_error([&] { attention_backward(exec_, gatv2, GATv2{}, f3(), f3(), a, f3(), f2(), f3(), f3(), f3(), a); },
               {"da overlaps a"});
}

TEST_F(BackwardErrors, OptionsAndCorrectCalls) {
  const auto& gat = plan(ScoreKind::GAT);
  Options<Mem> o;
  o.dropout = Dropout{1.0f, 1};
  expect_error([&] { attention_backward(exec_, gat, GAT{}, f2(), f2(), f3(), f3(), f2(), f3(), f2(), f2(), f3(), o); },
               {"attention_backward: dropout rate"});
  o.dropout = {};
  o.edge_values = EdgeValues<Mem>(f1(std::size_t(host_.num_edges()) * 3).data(), std::size_t(host_.num_edges()), 3);
  expect_error([&] { attention_backward(exec_, gat, GAT{}, f2(), f2(), f3(), f3(), f2(), f3(), f2(), f2(), f3(), o); },
               {"attention_backward: edge_values has shape"});
  o.edge_values = {};
  // The forward's logsumexp output is not read: any shape there is fine.
  o.dropout = Dropout{0.5f, 1};
  o.logsumexp = f2(N + 3);
  EXPECT_NO_THROW(attention_backward(exec_, gat, GAT{}, f2(), f2(), f3(), f3(), f2(), f3(), f2(), f2(), f3(), o));
  exec_.fence();
}

}  // namespace
