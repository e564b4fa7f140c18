// Every model x strategy x (H,D) x graph shape against the float64 reference.

#include "../backends/kokkos/executor.hpp"
#include "expect_error.hpp"
#include "graphs.hpp"

#include <dfgnn/attention.hpp>
#include <dfgnn/reference.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <tuple>

namespace {

using namespace dfgnn;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Host3 = Kokkos::View<float***, Kokkos::LayoutRight, Kokkos::HostSpace>;

template <class T>
auto to_device(const std::vector<T>& v) {
  return detail::upload<T, Mem>("test", v);
}

// Random inputs for one model, the call through a plan, and the reference, in one place.
struct Case {
  ScoreKind kind;
  const HostGraph& g;
  int H, D;
  unsigned seed;
  int edge_value_heads = 0;  // 0: none
  Dropout dropout{};
  bool training = false;     // also compare the logsumexp statistics
  bool misaligned = false;   // inputs one float past a 16-byte boundary (no 4-wide accesses)
  bool weights = false;      // also compare the attention weights (needs training)
  bool seed_in_memory = false;  // the kernels read the dropout seed where Dropout::seed_at points
  Backend backend = Backend::Portable;

  std::size_t N() const { return std::size_t(g.num_nodes); }
  std::vector<float> rand(std::size_t n, unsigned k) const { return test::random_values(n, seed * 31 + k); }

  // Runs the kernel (output poisoned with NaN first) and returns max relative error.
  double run(Strategy strategy) const {
    const std::size_t n = N(), h = std::size_t(H), d = std::size_t(D);
    const auto a = rand(n * h * d, 1), b = rand(n * h * d, 2), c = rand(n * h * d, 3);
    const auto sl = rand(n * h, 4), sr = rand(n * h, 5);
    // GATv2 weights scaled like an initialised layer (~1/sqrt(D)) so scores stay O(1).
    auto head = rand(h * d, 6);
    for (float& x : head) x /= std::sqrt(float(D));
    const auto beta = test::random_values(h, seed, 0.5f, 2.0f);
    const auto w = test::random_values(std::size_t(g.num_edges()) * std::size_t(edge_value_heads), seed + 7, 0.1f, 2.0f);
    const HostEdgeValues hw{edge_value_heads ? w.data() : nullptr, edge_value_heads};
    // Device copies stay alive for the call; the typed views below alias them, `off` floats in.
    const std::size_t off = misaligned ? 1 : 0;
    const auto at = [&](const std::vector<float>& x) {
      std::vector<float> padded(off, 0.0f);
      padded.insert(padded.end(), x.begin(), x.end());
      return to_device(padded);
    };
    auto A = at(a), B = at(b), C = at(c), SL = at(sl), SR = at(sr), HD = at(head), BETA = to_device(beta),
         W = to_device(w);
    Options<Mem> dw;
    if (edge_value_heads)
      dw.edge_values = EdgeValues<Mem>(W.data(), std::size_t(g.num_edges()), std::size_t(edge_value_heads));
    dw.dropout = dropout;
    const auto seed_at = to_device(std::vector<std::uint64_t>{dropout.seed});
    if (seed_in_memory) dw.dropout.seed = ~dropout.seed, dw.dropout.seed_at = seed_at.data();  // read, not the value
    std::vector<double> ref_lse, ref_weights;
    ReferenceOptions hopt(hw);
    hopt.dropout = dropout;
    if (training) {
      dw.logsumexp = decltype(dw.logsumexp)("lse", n, h);
      Kokkos::deep_copy(dw.logsumexp, std::numeric_limits<float>::quiet_NaN());
      hopt.logsumexp = &ref_lse;
    }
    if (weights) {
      dw.attention_weights = decltype(dw.attention_weights)("weights", std::size_t(g.num_edges()), h);
      Kokkos::deep_copy(dw.attention_weights, std::numeric_limits<float>::quiet_NaN());
      hopt.weights = &ref_weights;
    }
    auto f3 = [&](const Kokkos::View<float*, Mem>& v) { return NodeFeatures<Mem>(v.data() + off, n, h, d); };
    auto f2 = [&](const Kokkos::View<float*, Mem>& v) { return NodeScalars<Mem>(v.data() + off, n, h); };

    Exec exec;
    const Plan<Exec> plan(exec, Graph<Mem>(g), kind, H, D, strategy, backend);
    NodeOutput<Mem> out("out", n, h, d);
    Kokkos::deep_copy(out, std::numeric_limits<float>::quiet_NaN());
    std::vector<double> ref;
    switch (kind) {
      case ScoreKind::GT:
        attention(exec, plan, GT{}, f3(A), f3(B), f3(C), out, dw);
        ref = reference_attention(g, H, D, GT{}, a.data(), b.data(), c.data(), hopt);
        break;
      case ScoreKind::AGNN:
        attention(exec, plan, AGNN{}, f3(A), HeadScalars<Mem>(BETA.data(), h), out, dw);
        ref = reference_attention(g, H, D, AGNN{}, a.data(), beta.data(), H, hopt);
        break;
      case ScoreKind::GAT:
        attention(exec, plan, GAT{0.2f}, f2(SL), f2(SR), f3(C), out, dw);
        ref = reference_attention(g, H, D, GAT{0.2f}, sl.data(), sr.data(), c.data(), hopt);
        break;
      case ScoreKind::GATv2:
        attention(exec, plan, GATv2{0.2f}, f3(A), f3(B), HeadFeatures<Mem>(HD.data() + off, h, d), out, dw);
        ref = reference_attention(g, H, D, GATv2{0.2f}, a.data(), b.data(), head.data(), hopt);
        break;
      case ScoreKind::Count: ADD_FAILURE() << "Count names no model"; break;
    }
    exec.fence();
    const Host3 host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    double err = max_relative_error(host.data(), ref);
    if (training) {
      const auto lse = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dw.logsumexp);
      err = std::max(err, max_relative_error(lse.data(), ref_lse));
    }
    if (weights) {
      const auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dw.attention_weights);
      err = std::max(err, max_relative_error(p.data(), ref_weights));
    }
    return err;
  }
};

// Beyond the Serial/OpenMP scratch of 32 KB (8192 floats) and CUDA's shared memory alike.
const std::vector<test::NamedGraph>& graphs() {
  static const auto gs = test::test_graphs(20000);
  return gs;
}

using Param = std::tuple<ScoreKind, Strategy, std::pair<int, int>, int>;

class Attention : public ::testing::TestWithParam<Param> {};

TEST_P(Attention, MatchesFloat64Reference) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = graphs()[std::size_t(graph)];
  const Case c{kind, g, hd.first, hd.second, unsigned(graph) + 11};
  EXPECT_LT(c.run(strategy), 1e-5) << name;
}

TEST_P(Attention, EdgeValuesPerEdgeAndPerHead) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = graphs()[std::size_t(graph)];
  for (int ew : {1, hd.first}) {
    const Case c{kind, g, hd.first, hd.second, unsigned(graph) + 17, ew};
    EXPECT_LT(c.run(strategy), 1e-5) << name << " edge-value heads " << ew;
  }
}

TEST_P(Attention, TrainingStatisticsAndDropout) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = graphs()[std::size_t(graph)];
  Case c{kind, g, hd.first, hd.second, unsigned(graph) + 23, 1};
  c.training = true;
  c.dropout = Dropout{0.3f, 42};
  EXPECT_LT(c.run(strategy), 1e-5) << name;
}

// The attention weights a training forward writes on request, with edge values and dropout
// (its seed read from memory).
TEST_P(Attention, AttentionWeights) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = graphs()[std::size_t(graph)];
  Case c{kind, g, hd.first, hd.second, unsigned(graph) + 41, hd.first};
  c.training = c.weights = c.seed_in_memory = true;
  c.dropout = Dropout{0.3f, 7};
  EXPECT_LT(c.run(strategy), 1e-5) << name;
}

// Online's 4-wide accesses need rows on 16-byte boundaries; inputs off them take the 1-wide path.
TEST_P(Attention, MisalignedInputs) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = graphs()[std::size_t(graph)];
  Case c{kind, g, hd.first, hd.second, unsigned(graph) + 37};
  c.misaligned = true;
  EXPECT_LT(c.run(strategy), 1e-5) << name;
}

#ifdef DFGNN_NATIVE_CUDA
// The same matrix through the Kokkos API on Kokkos::Cuda, running the CUDA-native kernels.
class AttentionNative : public ::testing::TestWithParam<Param> {};

TEST_P(AttentionNative, MatchesFloat64Reference) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = graphs()[std::size_t(graph)];
  for (int ew : {0, hd.first}) {
    Case c{kind, g, hd.first, hd.second, unsigned(graph) + 29, ew};
    c.backend = Backend::Native;
    EXPECT_LT(c.run(strategy), 1e-5) << name << " edge-value heads " << ew;
  }
}

TEST_P(AttentionNative, TrainingStatisticsAndDropout) {
  const auto [kind, strategy, hd, graph] = GetParam();
  const auto& [name, g] = graphs()[std::size_t(graph)];
  Case c{kind, g, hd.first, hd.second, unsigned(graph) + 31, 1};
  c.training = c.seed_in_memory = true;  // the value's path: tests/gpu
  c.dropout = Dropout{0.3f, 42};
  c.backend = Backend::Native;
  EXPECT_LT(c.run(strategy), 1e-5) << name;
}
#endif

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [kind, strategy, hd, graph] = info.param;
  return std::string(to_string(kind)) + "_" + to_string(strategy) + "_H" + std::to_string(hd.first) + "D" +
         std::to_string(hd.second) + "_" + graphs()[std::size_t(graph)].name;
}

INSTANTIATE_TEST_SUITE_P(
    AllShapes, Attention,
    ::testing::Combine(::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Strategy::SMMF, Strategy::PMF, Strategy::Unfused, Strategy::Online,
                                         Strategy::Auto),
                       ::testing::Values(std::pair{1, 128}, std::pair{4, 32}, std::pair{2, 16}, std::pair{3, 7}),
                       ::testing::Range(0, 8)),
    param_name);

// Online's lane layouts: 4 features per lane (D % 4 == 0) over 2 to 32 lanes, several passes of
// the lanes (256, 300), and 1 feature per lane (50, 5).
INSTANTIATE_TEST_SUITE_P(
    OnlineWidths, Attention,
    ::testing::Combine(::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Strategy::Online),
                       ::testing::Values(std::pair{1, 64}, std::pair{2, 8}, std::pair{1, 256}, std::pair{1, 300},
                                         std::pair{2, 50}, std::pair{1, 5}),
                       ::testing::Range(0, 8)),
    param_name);

// Online takes at most 8 lanes a group at D <= 128 (D % 4 == 0) on a graph whose (row, head)
// units fill the device at 8 lanes, N H 8 >= concurrency (on a host, every graph), and lanes
// over D / 4 otherwise; the piece split follows the lanes. On a GPU, `exact` sits on that bar,
// `half` fills it from H = 2 on and `small` never does. Every model, misaligned rows, edge
// values and training with dropout are checked on each.
// Team counts come from 64-bit row and edge counts; one past what a launch takes is an Error
// naming the kernel, not a wrapped (negative or small) league.
TEST(Launch, TeamCountBeyondIntIsAnError) {
  EXPECT_EQ(kokkos_impl::league_of("k", std::numeric_limits<int>::max()), std::numeric_limits<int>::max());
  test::expect_error([] { kokkos_impl::league_of("dfgnn::online", std::int64_t(1) << 31); },
                     {"dfgnn::online: 2147483648 teams, more than the 2^31 - 1 a launch takes"});
}

// The launch geometry follows the space: one lane and one thread a team on a host, the SIMD
// group and 256-thread teams on a GPU.
TEST(Launch, GeometryFollowsTheSpace) {
  using G = kokkos_impl::Geometry<Exec>;
  if (G::host) {
    EXPECT_EQ(G::max_lanes(), 1);
    EXPECT_EQ(G::lanes(128), 1);
    EXPECT_EQ(G::groups(1), 1);
  } else {
    EXPECT_EQ(G::max_lanes(), int(Kokkos::TeamPolicy<Exec>::vector_length_max()));
    EXPECT_EQ(G::lanes(5), 8);
    EXPECT_EQ(G::lanes(1 << 20), G::max_lanes());
    EXPECT_EQ(G::groups(32), 8);
  }
  using Host = kokkos_impl::Geometry<Kokkos::DefaultHostExecutionSpace>;
  EXPECT_TRUE(Host::host);
  EXPECT_EQ(Host::lanes(100), 1);
}

TEST(OnlineLanes, NarrowWhereTheRowsFillTheDevice) {
  const int concurrency = int(Exec().concurrency());
  const node_t bar = node_t((concurrency + kokkos_impl::kNarrowLanes - 1) / kokkos_impl::kNarrowLanes);
  const HostGraph exact = test::power_law_graph(std::max<node_t>(64, bar), std::size_t(std::max<node_t>(64, bar)) * 6, 5);
  const HostGraph half = test::random_graph(std::max<node_t>(32, (bar + 1) / 2), std::size_t(std::max<node_t>(32, bar)) * 2, 7);
  const HostGraph small = test::random_graph(64, 400, 6);
  for (const auto& [H, D] : {std::pair{1, 128}, std::pair{2, 64}, std::pair{1, 256}, std::pair{4, 32}, std::pair{1, 100},
                             std::pair{2, 16}}) {
    const int wide = kokkos_impl::Geometry<Exec>::lanes(D % 4 == 0 ? D / 4 : D);
    for (const HostGraph* g : {&exact, &half, &small}) {
      const bool fills = std::int64_t(g->num_nodes) * H * kokkos_impl::kNarrowLanes >= concurrency;
      const Plan<Exec> plan(Exec(), Graph<Mem>(*g), ScoreKind::GT, H, D, Strategy::Online, Backend::Portable);
      SCOPED_TRACE("N = " + std::to_string(g->num_nodes) + ", " + std::to_string(H) + " x " + std::to_string(D));
      ASSERT_EQ(plan.strategy(), Strategy::Online);
      const auto& L = kokkos_impl::layout_of(plan);
      EXPECT_EQ(L.online_lanes, fills && D % 4 == 0 && D <= 128 ? std::min(wide, kokkos_impl::kNarrowLanes) : wide);
      EXPECT_EQ(L.split, detail::piece_edges(g->num_edges(), {L.online_lanes, concurrency, 32, detail::kMaxPieceEdges}));
      for (ScoreKind kind : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2}) {
        Case c{kind, *g, H, D, 3};
        EXPECT_LT(c.run(Strategy::Online), 1e-5) << to_string(kind);
        c.misaligned = true;
        EXPECT_LT(c.run(Strategy::Online), 1e-5) << to_string(kind) << " misaligned";
        c.misaligned = false;
        c.edge_value_heads = H;
        c.training = true;
        c.dropout = Dropout{0.3f, 42};
        EXPECT_LT(c.run(Strategy::Online), 1e-5) << to_string(kind) << " edge values, dropout";
      }
    }
  }
}

#ifdef DFGNN_NATIVE_CUDA
INSTANTIATE_TEST_SUITE_P(
    AllShapes, AttentionNative,
    ::testing::Combine(::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                       ::testing::Values(Strategy::SMMF, Strategy::PMF, Strategy::Unfused, Strategy::Online,
                                         Strategy::Auto),
                       ::testing::Values(std::pair{1, 128}, std::pair{4, 32}, std::pair{2, 16}, std::pair{3, 7}),
                       ::testing::Range(0, 8)),
    param_name);
#endif

}  // namespace
