// Argument checking of the public attention overloads and of Plan: every wrong shape, a plan
// of another model, an output overlapping an input -> dfgnn::Error naming the argument.

#include "../backends/kokkos/spaces.hpp"
#include "call_fixture.hpp"
#include "expect_error.hpp"

#include <dfgnn/attention.hpp>
#include <dfgnn/detail/kokkos_range.hpp>
#include <dfgnn/reference.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using namespace dfgnn;
using test::expect_error;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using View1 = Kokkos::View<float*, Kokkos::LayoutRight, Mem>;
using View2 = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;
using View3 = Kokkos::View<float***, Kokkos::LayoutRight, Mem>;
using Shape2 = std::array<std::size_t, 2>;
using Shape3 = std::array<std::size_t, 3>;


class ErrorsTest : public test::CallFixture {
 protected:
  std::size_t E() const { return std::size_t(host_.num_edges()); }

  NodeFeatures<Mem> f3(Shape3 s = {N, H, D}) { return View3(buffer(s[0] * s[1] * s[2]).data(), s[0], s[1], s[2]); }
  NodeOutput<Mem> out3(Shape3 s = {N, H, D}) { return View3(buffer(s[0] * s[1] * s[2]).data(), s[0], s[1], s[2]); }
  NodeScalars<Mem> f2(Shape2 s = {N, H}) { return View2(buffer(s[0] * s[1]).data(), s[0], s[1]); }
  HeadFeatures<Mem> a2(Shape2 s = {H, D}) { return View2(buffer(s[0] * s[1]).data(), s[0], s[1]); }
  HeadScalars<Mem> beta(std::size_t n = H) { return buffer(n); }
  /// Options carrying edge values of shape s.
  Options<Mem> w(Shape2 s) {
    Options<Mem> o;
    o.edge_values = View2(buffer(s[0] * s[1]).data(), s[0], s[1]);
    return o;
  }

  /// Shapes that differ from the right one in exactly one of N, H, D (up and down).
  static std::vector<Shape3> wrong3() {
    return {{N + 1, H, D}, {N - 1, H, D}, {N, H + 1, D}, {N, H - 1, D}, {N, H, D + 1}, {N, H, D - 1}};
  }
  static std::vector<Shape2> wrong2() { return {{N + 1, H}, {N - 1, H}, {N, H + 1}, {N, H - 1}}; }
  static std::vector<Shape2> wrong_a() { return {{H + 1, D}, {H - 1, D}, {H, D + 1}, {H, D - 1}, {D, H}}; }
  /// Edge values of the wrong edge count or head count.
  std::vector<Shape2> wrong_w() const { return {{E() + 1, 1}, {E() - 1, 1}, {E() - 1, H}, {E(), H + 1}, {1, 1}}; }

  static std::string str(const Shape3& s) {
    return "[" + std::to_string(s[0]) + "," + std::to_string(s[1]) + "," + std::to_string(s[2]) + "]";
  }
  static std::string str(const Shape2& s) { return "[" + std::to_string(s[0]) + "," + std::to_string(s[1]) + "]"; }
};

// ---- GT ------------------------------------------------------------------------------------

TEST_F(ErrorsTest, GtFeatureShapes) {
  const auto& p = plan(ScoreKind::GT);
  for (const Shape3& s : wrong3()) {
    SCOPED_TRACE(str(s));
    const std::string got = "shape " + str(s);
    expect_error([&] { attention(exec_, p, GT{}, f3(s), f3(), f3(), out3()); }, {"Q has", got, "[N,H,D]"});
    expect_error([&] { attention(exec_, p, GT{}, f3(), f3(s), f3(), out3()); }, {"K has", got});
    expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), f3(s), out3()); }, {"V has", got});
    expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), f3(), out3(s)); }, {"out has", got});
  }
}

TEST_F(ErrorsTest, GtEdgeValues) {
  const auto& p = plan(ScoreKind::GT);
  for (const Shape2& s : wrong_w()) {
    SCOPED_TRACE(str(s));
    expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), f3(), out3(), w(s)); },
                 {"edge_values", str(s), "E = " + std::to_string(E())});
  }
}

TEST_F(ErrorsTest, GtOutputAliasingAnInput) {
  const auto& p = plan(ScoreKind::GT);
  const NodeOutput<Mem> shared = out3();
  expect_error([&] { attention(exec_, p, GT{}, shared, f3(), f3(), shared); }, {"out overlaps Q"});
  expect_error([&] { attention(exec_, p, GT{}, f3(), shared, f3(), shared); }, {"out overlaps K"});
  expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), shared, shared); }, {"out overlaps V"});
  // Partial overlap: out starts half-way into V's allocation.
  const View1 big = buffer(2 * N * H * D);
  const NodeFeatures<Mem> v(big.data(), N, H, D);
  const NodeOutput<Mem> tail(big.data() + N * H * D / 2, N, H, D);
  expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), v, tail); }, {"out overlaps V"});
  // The same allocation, but disjoint halves: fine.
  const NodeOutput<Mem> after(big.data() + N * H * D, N, H, D);
  EXPECT_NO_THROW(attention(exec_, p, GT{}, f3(), f3(), v, after));
  exec_.fence();
}

TEST_F(ErrorsTest, GtNullDataWithTheRightShape) {
  const auto& p = plan(ScoreKind::GT);
  const NodeFeatures<Mem> null(nullptr, N, H, D);
  expect_error([&] { attention(exec_, p, GT{}, null, f3(), f3(), out3()); }, {"attention: Q is null"});
  expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), f3(), NodeOutput<Mem>(nullptr, N, H, D)); },
               {"attention: out is null"});
}

// ---- AGNN ----------------------------------------------------------------------------------

TEST_F(ErrorsTest, AgnnShapes) {
  const auto& p = plan(ScoreKind::AGNN);
  for (const Shape3& s : wrong3()) {
    SCOPED_TRACE(str(s));
    expect_error([&] { attention(exec_, p, AGNN{}, f3(s), beta(), out3()); }, {"X has", "shape " + str(s)});
    expect_error([&] { attention(exec_, p, AGNN{}, f3(), beta(), out3(s)); }, {"out has", "shape " + str(s)});
  }
  for (std::size_t n : {std::size_t(0), H + 1, 2 * H}) {
    SCOPED_TRACE(n);
    expect_error([&] { attention(exec_, p, AGNN{}, f3(), beta(n), out3()); },
                 {"beta", std::to_string(n) + " entries", "1 or H = " + std::to_string(H)});
  }
  for (const Shape2& s : wrong_w()) {
    SCOPED_TRACE(str(s));
    expect_error([&] { attention(exec_, p, AGNN{}, f3(), beta(), out3(), w(s)); }, {"edge_values", str(s)});
  }
}

TEST_F(ErrorsTest, AgnnOutputAliasingX) {
  const auto& p = plan(ScoreKind::AGNN);
  const NodeOutput<Mem> shared = out3();
  expect_error([&] { attention(exec_, p, AGNN{}, shared, beta(), shared); }, {"out overlaps X"});
}

// ---- GAT -----------------------------------------------------------------------------------

TEST_F(ErrorsTest, GatShapes) {
  const auto& p = plan(ScoreKind::GAT);
  for (const Shape2& s : wrong2()) {
    SCOPED_TRACE(str(s));
    expect_error([&] { attention(exec_, p, GAT{}, f2(s), f2(), f3(), out3()); }, {"el has", "shape " + str(s), "[N,H]"});
    expect_error([&] { attention(exec_, p, GAT{}, f2(), f2(s), f3(), out3()); }, {"er has", "shape " + str(s)});
  }
  for (const Shape3& s : wrong3()) {
    SCOPED_TRACE(str(s));
    expect_error([&] { attention(exec_, p, GAT{}, f2(), f2(), f3(s), out3()); }, {"V has", "shape " + str(s)});
    expect_error([&] { attention(exec_, p, GAT{}, f2(), f2(), f3(), out3(s)); }, {"out has", "shape " + str(s)});
  }
  for (const Shape2& s : wrong_w()) {
    SCOPED_TRACE(str(s));
    expect_error([&] { attention(exec_, p, GAT{}, f2(), f2(), f3(), out3(), w(s)); }, {"edge_values", str(s)});
  }
}

TEST_F(ErrorsTest, GatOutputAliasingAnInput) {
  const auto& p = plan(ScoreKind::GAT);
  const NodeOutput<Mem> o = out3();
  // el / er living inside out's allocation.
  const NodeScalars<Mem> inside(o.data() + 1, N, H);
  expect_error([&] { attention(exec_, p, GAT{}, inside, f2(), f3(), o); }, {"out overlaps el"});
  expect_error([&] { attention(exec_, p, GAT{}, f2(), inside, f3(), o); }, {"out overlaps er"});
  expect_error([&] { attention(exec_, p, GAT{}, f2(), f2(), o, o); }, {"out overlaps V"});
}

// ---- GATv2 ---------------------------------------------------------------------------------

TEST_F(ErrorsTest, Gatv2Shapes) {
  const auto& p = plan(ScoreKind::GATv2);
  for (const Shape3& s : wrong3()) {
    SCOPED_TRACE(str(s));
    expect_error([&] { attention(exec_, p, GATv2{}, f3(s), f3(), a2(), out3()); }, {"XL has", "shape " + str(s)});
    expect_error([&] { attention(exec_, p, GATv2{}, f3(), f3(s), a2(), out3()); }, {"XR has", "shape " + str(s)});
    expect_error([&] { attention(exec_, p, GATv2{}, f3(), f3(), a2(), out3(s)); }, {"out has", "shape " + str(s)});
  }
  for (const Shape2& s : wrong_a()) {
    SCOPED_TRACE(str(s));
    expect_error([&] { attention(exec_, p, GATv2{}, f3(), f3(), a2(s), out3()); }, {"a has", "shape " + str(s), "[H,D]"});
  }
  for (const Shape2& s : wrong_w()) {
    SCOPED_TRACE(str(s));
    expect_error([&] { attention(exec_, p, GATv2{}, f3(), f3(), a2(), out3(), w(s)); }, {"edge_values", str(s)});
  }
}

TEST_F(ErrorsTest, Gatv2OutputAliasingAnInput) {
  const auto& p = plan(ScoreKind::GATv2);
  const NodeOutput<Mem> o = out3();
  expect_error([&] { attention(exec_, p, GATv2{}, o, f3(), a2(), o); }, {"out overlaps XL"});
  expect_error([&] { attention(exec_, p, GATv2{}, f3(), o, a2(), o); }, {"out overlaps XR"});
  const HeadFeatures<Mem> a_inside(o.data() + N * H * D - H * D, H, D);  // the last H*D floats of out
  expect_error([&] { attention(exec_, p, GATv2{}, f3(), f3(), a_inside, o); }, {"out overlaps a"});
}

// ---- training options ----------------------------------------------------------------------

TEST_F(ErrorsTest, LogsumexpShapeAndAliasing) {
  const auto& p = plan(ScoreKind::GAT);
  for (const Shape2& s : wrong2()) {
    SCOPED_TRACE(str(s));
    Options<Mem> o;
    o.logsumexp = View2(buffer(s[0] * s[1]).data(), s[0], s[1]);
    expect_error([&] { attention(exec_, p, GAT{}, f2(), f2(), f3(), out3(), o); }, {"logsumexp has", "shape " + str(s)});
  }
  const NodeOutput<Mem> out = out3();
  Options<Mem> inside;
  inside.logsumexp = View2(out.data() + 5, N, H);
  expect_error([&] { attention(exec_, p, GAT{}, f2(), f2(), f3(), out, inside); }, {"out overlaps logsumexp"});
  Options<Mem> ok;
  ok.logsumexp = View2(buffer(N * H).data(), N, H);
  EXPECT_NO_THROW(attention(exec_, p, GAT{}, f2(), f2(), f3(), out3(), ok));
  exec_.fence();
}

TEST_F(ErrorsTest, AttentionWeightsShapeAndLogsumexp) {
  const auto& p = plan(ScoreKind::GT);
  const std::size_t E = std::size_t(host_.num_edges());
  Options<Mem> o;
  o.attention_weights = View2(buffer(E * H).data(), E, H);
  expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), f3(), out3(), o); },
               {"attention: weights are computed from the logsumexp: pass logsumexp too"});
  o.logsumexp = View2(buffer(N * H).data(), N, H);
  for (const std::size_t rows : {E - 1, E + 1}) {
    Options<Mem> wrong = o;
    wrong.attention_weights = View2(buffer(rows * H).data(), rows, H);
    expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), f3(), out3(), wrong); },
                 {"weights has shape [" + std::to_string(rows) + ",2], expected [E,H] = [" + std::to_string(E) + ",2]"});
  }
  Options<Mem> inside = o;
  inside.attention_weights = View2(o.logsumexp.data(), E, H);
  expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), f3(), out3(), inside); }, {"logsumexp overlaps weights"});
  EXPECT_NO_THROW(attention(exec_, p, GT{}, f3(), f3(), f3(), out3(), o));
  exec_.fence();
}

TEST_F(ErrorsTest, DropoutRate) {
  const auto& p = plan(ScoreKind::GT);
  for (float rate : {-0.1f, 1.0f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    SCOPED_TRACE(rate);
    Options<Mem> o;
    o.dropout = Dropout{rate, 1};
    expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), f3(), out3(), o); }, {"dropout"});
  }
  Options<Mem> o;
  o.dropout = Dropout{0.5f, 1};
  EXPECT_NO_THROW(attention(exec_, p, GT{}, f3(), f3(), f3(), out3(), o));
  exec_.fence();
}

// Strided subviews: the kernels (and the native ones, given data() alone) index densely.
TEST_F(ErrorsTest, StridedViews) {
  const auto& gat = plan(ScoreKind::GAT);
  const View2 wide(buffer(N * 2 * H).data(), N, 2 * H);
  const NodeScalars<Mem> el = Kokkos::subview(wide, Kokkos::ALL, std::pair<std::size_t, std::size_t>(0, H));
  expect_error([&] { attention(exec_, gat, GAT{}, el, f2(), f3(), out3()); }, {"el is strided"});
  const auto& gatv2 = plan(ScoreKind::GATv2);
  const View2 wide_a(buffer(H * (D + 1)).data(), H, D + 1);
  const HeadFeatures<Mem> a = Kokkos::subview(wide_a, Kokkos::ALL, std::pair<std::size_t, std::size_t>(0, D));
  expect_error([&] { attention(exec_, gatv2, GATv2{}, f3(), f3(), a, out3()); }, {"a is strided"});
  const View2 wide_w(buffer(E() * 2).data(), E(), 2);
  Options<Mem> o;
  o.edge_values = Kokkos::subview(wide_w, Kokkos::ALL, std::pair<std::size_t, std::size_t>(0, 1));
  expect_error([&] { attention(exec_, gat, GAT{}, f2(), f2(), f3(), out3(), o); }, {"edge_values is strided"});
}

TEST_F(ErrorsTest, ModelParametersAreFinite) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  expect_error([&] { attention(exec_, plan(ScoreKind::GT), GT{nan}, f3(), f3(), f3(), out3()); }, {"GT::scale"});
  expect_error([&] { attention(exec_, plan(ScoreKind::GAT), GAT{inf}, f2(), f2(), f3(), out3()); }, {"GAT::slope"});
  expect_error([&] { attention(exec_, plan(ScoreKind::GATv2), GATv2{nan}, f3(), f3(), a2(), out3()); },
               {"GATv2::slope"});
}

TEST_F(ErrorsTest, OutputAliasingBetaOrEdgeValues) {
  const auto& agnn = plan(ScoreKind::AGNN);
  const NodeOutput<Mem> o = out3();
  const HeadScalars<Mem> beta_inside(o.data(), H);
  expect_error([&] { attention(exec_, agnn, AGNN{}, f3(), beta_inside, o); }, {"out overlaps beta"});
  const auto& gt = plan(ScoreKind::GT);
  const View1 big = buffer(N * H * D + E());
  const NodeOutput<Mem> o2(big.data(), N, H, D);
  Options<Mem> w_inside;
  w_inside.edge_values = EdgeValues<Mem>(big.data() + N * H * D - 1, E(), 1);  // shares one float with out
  expect_error([&] { attention(exec_, gt, GT{}, f3(), f3(), f3(), o2, w_inside); }, {"out overlaps edge_values"});
}

TEST_F(ErrorsTest, NullBetaWithTheRightShape) {
  const auto& p = plan(ScoreKind::AGNN);
  expect_error([&] { attention(exec_, p, AGNN{}, f3(), HeadScalars<Mem>(nullptr, H), out3()); }, {"beta"});
}

TEST_F(ErrorsTest, NullEdgeValuesWithTheRightShape) {
  const auto& p = plan(ScoreKind::GT);
  Options<Mem> o;
  o.edge_values = EdgeValues<Mem>(nullptr, E(), 1);
  expect_error([&] { attention(exec_, p, GT{}, f3(), f3(), f3(), out3(), o); }, {"edge_values"});
}

// ---- plans ---------------------------------------------------------------------------------

TEST_F(ErrorsTest, PlanOfAnotherModel) {
  const auto& gt = plan(ScoreKind::GT);
  const auto& agnn = plan(ScoreKind::AGNN);
  const auto& gat = plan(ScoreKind::GAT);
  const auto& gatv2 = plan(ScoreKind::GATv2);
  expect_error([&] { attention(exec_, gt, AGNN{}, f3(), beta(), out3()); }, {"plan", "made for gt", "agnn"});
  expect_error([&] { attention(exec_, gt, GAT{}, f2(), f2(), f3(), out3()); }, {"plan", "made for gt", "gat"});
  expect_error([&] { attention(exec_, gat, GATv2{}, f3(), f3(), a2(), out3()); }, {"plan", "made for gat,", "gatv2"});
  expect_error([&] { attention(exec_, gatv2, GT{}, f3(), f3(), f3(), out3()); }, {"plan", "made for gatv2", "gt"});
  expect_error([&] { attention(exec_, agnn, GT{}, f3(), f3(), f3(), out3()); }, {"plan", "made for agnn", "gt"});
  // The kind is checked before the shapes.
  expect_error([&] { attention(exec_, gt, GAT{}, f2({1, 1}), f2(), f3(), out3()); }, {"plan"});
}

TEST_F(ErrorsTest, PlanEnumsOutOfRange) {
  expect_error([&] { Plan<Exec>(exec_, graph_, ScoreKind::GT, 1, 4, Strategy(7)); }, {"plan: strategy 7"});
  expect_error([&] { Plan<Exec>(exec_, graph_, ScoreKind(9), 1, 4); }, {"plan: score kind 9"});
  expect_error([&] { Plan<Exec>(exec_, graph_, ScoreKind::GT, 1, 4, Strategy::Auto, Backend(-1)); },
               {"plan: backend -1"});
}

TEST_F(ErrorsTest, PlanDimensions) {
  for (int heads : {0, -1, -100}) {
    SCOPED_TRACE(heads);
    expect_error([&] { (void)Plan<Exec>(exec_, graph_, ScoreKind::GT, heads, 4); }, {"heads", "1", std::to_string(heads)});
  }
  for (int dim : {0, -7}) {
    SCOPED_TRACE(dim);
    expect_error([&] { (void)Plan<Exec>(exec_, graph_, ScoreKind::GAT, 2, dim); }, {"dim", std::to_string(dim)});
  }
  // More heads than any team scratch of the portable kernels can hold normalisers for.
  expect_error([&] { (void)Plan<Exec>(exec_, graph_, ScoreKind::GT, 1 << 20, 4, Strategy::Auto, Backend::Portable); },
               {"heads", "scratch"});
}

// N*H*D once wrapped in size_t to a small count that passed every shape check.
TEST_F(ErrorsTest, CountsThatOverflow) {
  constexpr int kMax = std::numeric_limits<int>::max();
  expect_error([&] { (void)Plan<Exec>(exec_, graph_, ScoreKind::GT, kMax, kMax); },
               {"plan: nodes x heads x dim x element bytes", std::to_string(kMax), "overflows 64 bits"});
  expect_error([&] { checked_product("n:", {std::uint64_t(1) << 32, std::uint64_t(1) << 32}); },
               {"n: 4294967296 x 4294967296 overflows 64 bits"});
  EXPECT_EQ(checked_product("n:", {3, 5, 7}), 105u);
  // What cannot fit is refused up front, naming the bytes.
  expect_error([&] { check_host_bytes("graph", std::uint64_t(1) << 62); },
               {"graph needs 4611686018427387904 bytes of host memory", "bytes this process can have"});
  EXPECT_NO_THROW(check_host_bytes("graph", 1 << 20));
}

// ---- a correct call ------------------------------------------------------------------------

/// Copies a device view back to the host as a flat vector.
template <class View>
std::vector<float> host_copy(const View& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<float>(h.data(), h.data() + h.size());
}

TEST_F(ErrorsTest, CorrectCallsDoNotThrow) {
  for (Strategy strategy : {Strategy::Auto, Strategy::SMMF, Strategy::PMF, Strategy::Unfused}) {
    SCOPED_TRACE(to_string(strategy));
    for (ScoreKind kind : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2}) {
      SCOPED_TRACE(to_string(kind));
      const Plan<Exec> p(exec_, graph_, kind, int(H), int(D), strategy);
      for (std::size_t ew : {std::size_t(0), std::size_t(1), H}) {
        SCOPED_TRACE("edge value heads " + std::to_string(ew));
        const Options<Mem> values = ew ? w({E(), ew}) : Options<Mem>();
        const NodeOutput<Mem> o = out3();
        Kokkos::deep_copy(o, std::numeric_limits<float>::quiet_NaN());
        const auto A = f3(), B = f3(), C = f3();
        const auto L = f2(), R = f2();
        const auto a = a2();
        switch (kind) {
          case ScoreKind::GT: EXPECT_NO_THROW(attention(exec_, p, GT{}, A, B, C, o, values)); break;
          case ScoreKind::AGNN:
            EXPECT_NO_THROW(attention(exec_, p, AGNN{}, A, beta(), o, values));
            EXPECT_NO_THROW(attention(exec_, p, AGNN{}, A, beta(1), o, values));  // shared beta
            break;
          case ScoreKind::GAT: EXPECT_NO_THROW(attention(exec_, p, GAT{}, L, R, C, o, values)); break;
          case ScoreKind::GATv2: EXPECT_NO_THROW(attention(exec_, p, GATv2{}, A, B, a, o, values)); break;
          case ScoreKind::Count: ADD_FAILURE() << "Count names no model"; break;
        }
        exec_.fence();
        // Every output entry was written (rows without in-edges give zeros, never NaN).
        for (float x : host_copy(o)) ASSERT_TRUE(std::isfinite(x));
      }
    }
  }
}

TEST_F(ErrorsTest, ReferenceArguments) {
  const auto q = host_copy(f3());
  expect_error([&] { reference_attention(host_, int(H), int(D), GT{}, q.data(), nullptr, q.data()); },
               {"reference_attention", "null"});
  expect_error([&] { reference_attention(host_, 0, int(D), GT{}, q.data(), q.data(), q.data()); }, {"H and D"});
  expect_error([&] { reference_attention(host_, int(H), int(D), AGNN{}, q.data(), q.data(), int(H) + 1); },
               {"beta_count"});
  ReferenceOptions o;
  o.dropout.rate = 1.5f;
  expect_error([&] { reference_attention(host_, int(H), int(D), GT{}, q.data(), q.data(), q.data(), o); },
               {"dropout"});
  const std::vector<float> w(E() * (H + 1), 1.0f);
  expect_error([&] { reference_attention(host_, int(H), int(D), GT{}, q.data(), q.data(), q.data(), {{w.data(), int(H) + 1}}); },
               {"edge values"});
}

// The kernels read every tensor densely in row-major order. A View whose type says otherwise
// (LayoutLeft, Kokkos::Cuda's default, of rank 2 or more) does not compile (tensor_ref's
// static_assert); a LayoutStride View passes where its strides are row-major and is refused
// where they are not, as a LayoutLeft View's are.
static_assert(detail::row_major_layout<View3>() &&
              detail::row_major_layout<Kokkos::View<float***, Kokkos::LayoutStride, Mem>>());
static_assert(!detail::row_major_layout<Kokkos::View<float***, Kokkos::LayoutLeft, Mem>>() &&
              !detail::row_major_layout<Kokkos::View<const float**, Kokkos::LayoutLeft, Mem>>());
static_assert(detail::row_major_layout<Kokkos::View<float*, Kokkos::LayoutLeft, Mem>>(), "one order at rank 1");

TEST_F(ErrorsTest, ViewsOfAnotherOrder) {
  using Strided3 = Kokkos::View<const float***, Kokkos::LayoutStride, Mem>;
  const auto& gt = plan(ScoreKind::GT);
  const NodeFeatures<Mem> Q = f3(), K = f3(), V = f3();
  const Strided3 left(Q.data(), Kokkos::LayoutStride(N, 1, H, N, D, N * H)),
      right(Q.data(), Kokkos::LayoutStride(N, H * D, H, D, D, 1));
  expect_error([&] { attention(exec_, gt, GT{}, tensors(left, K, V), out3()); }, {"Q is strided"});
  const NodeOutput<Mem> want = out3(), got = out3();
  attention(exec_, gt, GT{}, tensors(Q, K, V), want);
  attention(exec_, gt, GT{}, tensors(right, K, V), got);
  EXPECT_EQ(host_copy(got), host_copy(want));
}

TEST_F(ErrorsTest, CorrectCallMatchesTheReference) {
  const Plan<Exec> p(exec_, graph_, ScoreKind::GT, int(H), int(D));
  const auto Q = f3(), K = f3(), V = f3();
  const auto o = out3();
  attention(exec_, p, GT{}, Q, K, V, o);
  exec_.fence();
  const auto q = host_copy(Q), k = host_copy(K), v = host_copy(V), out = host_copy(o);
  const auto ref = reference_attention(host_, int(H), int(D), GT{}, q.data(), k.data(), v.data());
  EXPECT_LT(max_relative_error(out.data(), ref), 1e-5);
}

}  // namespace

namespace {

#ifndef DFGNN_NATIVE_CUDA
TEST(ErrorsBackend, NativeNeedsKokkosCudaAndTheCudaBuild) {
  using namespace dfgnn;
  using Exec = Kokkos::DefaultExecutionSpace;
  const Graph<Exec::memory_space> g(graph_from_edges(2, {0}, {1}));
  EXPECT_THROW(Plan<Exec>(Exec(), g, ScoreKind::GT, 1, 8, Strategy::Auto, Backend::Native), Error);
  EXPECT_EQ(Plan<Exec>(Exec(), g, ScoreKind::GT, 1, 8, Strategy::Auto, Backend::Auto).backend(), Backend::Portable);
}
#endif

}  // namespace

namespace {

// Every flat loop of the Kokkos code runs on kokkos_impl::Range, which counts in 64 bits on every
// enabled space: a RangePolicy of Kokkos::Cuda's own index type, unsigned int, wraps at 2^32
// entries (N x H x D features, a rank's E x H x D edge features).
#define DFGNN_RANGE_IS_64_BIT(EXEC)                                                  \
  static_assert(std::is_same_v<kokkos_impl::Range<EXEC>::index_type, std::int64_t>, \
                #EXEC "'s range loops must count in 64 bits");
DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_RANGE_IS_64_BIT)
#undef DFGNN_RANGE_IS_64_BIT

struct SumOfIndices {
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::int64_t& sum) const { sum += i; }
};

// Bounds past 2^32 on the default space: a 32-bit index would start this loop at 1.
TEST(ErrorsRange, BoundsPast2To32) {
  const std::int64_t first = (std::int64_t(1) << 32) + 1;
  std::int64_t sum = 0;
  Kokkos::parallel_reduce("sum", kokkos_impl::Range<Kokkos::DefaultExecutionSpace>(first, first + 3),
                          SumOfIndices{}, sum);
  EXPECT_EQ(sum, 3 * first + 3);
}

// Messages echo file content and arguments (a malformed file's header, a token, a path); each
// stays one line of printable text: line breaks, controls and bytes that are no UTF-8 escaped.
TEST(ErrorsMessage, OneLinePrintable) {
  using dfgnn::Error;
  EXPECT_STREQ(Error("a\nb\r\tc").what(), "a\\nb\\r\\tc");
  EXPECT_STREQ(Error(std::string("nul \0 esc \x1b[31m del \x7f", 21)).what(), "nul \\x00 esc \\x1B[31m del \\x7F");
  // UTF-8 stays readable; a C1 control, a lone or overlong byte and a cut sequence do not.
  EXPECT_STREQ(Error("donn\xC3\xA9" "es \xE2\x82\xAC \xF0\x9F\x98\x80").what(), "donn\xC3\xA9" "es \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_STREQ(Error("\xC2\x85 \x93NUMPY \xC0\xAF \xF9\x90\x80\x80 \xE2\x82").what(),
               "\\xC2\\x85 \\x93NUMPY \\xC0\\xAF \\xF9\\x90\\x80\\x80 \\xE2\\x82");
  // Escaping twice changes nothing: a message may be wrapped into another.
  const std::string once = Error("x\n\x01").what();
  EXPECT_EQ(Error(once + "!").what(), once + "!");
}

}  // namespace
