// The float64 message-passing reference (hand-computed cases, backward against finite
// differences, GCN against g-SpMM, argument checks) and graph reordering.

#include "expect_error.hpp"
#include "message_cases.hpp"

#include <dfgnn/reference_message_passing.hpp>
#include <dfgnn/reorder.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace {

using namespace dfgnn;
using test::HostTensor;

double dot(const std::vector<double>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/// max |a - b| / max |b|; an empty b compares equal only to an empty a.
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double err = 0, scale = 1e-300;
  for (std::size_t i = 0; i < a.size(); ++i) err = std::max(err, std::abs(a[i] - b[i])), scale = std::max(scale, std::abs(b[i]));
  return err / scale;
}

/// d loss / d x by central differences; the step is the float difference actually taken, so a
/// loss linear in x[i] gives its derivative up to float64 rounding.
template <class Loss>
std::vector<double> numeric_gradient(std::vector<float>& x, Loss loss) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float x0 = x[i];
    x[i] = x0 + 1e-4f;
    const double up = loss(), hi = x[i];
    x[i] = x0 - 1e-4f;
    const double down = loss();
    g[i] = (up - down) / (hi - double(x[i]));
    x[i] = x0;
  }
  return g;
}

// ---- names ---------------------------------------------------------------------------------

// The CUDA kernels' edge rows are 32-bit: a plan of 2^32 or more edges is refused up front
// (cuda::MessagePlan calls this), not run with wrapped rows.
TEST(MessageChecks, EdgeRowsFitThirtyTwoBits) {
  EXPECT_NO_THROW(detail::check_edge_rows("cuda::MessagePlan", (edge_t(1) << 32) - 1));
  test::expect_error([] { detail::check_edge_rows("cuda::MessagePlan", edge_t(1) << 32); },
                     {"cuda::MessagePlan: 4294967296 edges", "32 bits", "portable backend"});
}

TEST(MessageRefNames, RoundTripAndRejectUnknown) {
  for (const Message& m : test::messages()) {
    const Message p = parse_message(to_string(m));
    EXPECT_TRUE(p.lhs == m.lhs && p.rhs == m.rhs && (m.is_copy() || p.op == m.op)) << to_string(m);
  }
  EXPECT_EQ(to_string(parse_message("U_DIV_V")), "u_div_v");
  for (Reduce r : test::reduces()) EXPECT_EQ(parse_reduce(to_string(r)), r);
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Dot})
    EXPECT_EQ(parse_binary_op(to_string(op)), op);
  for (Ordering o : {Ordering::None, Ordering::RCM, Ordering::Degree}) EXPECT_EQ(parse_ordering(to_string(o)), o);
  test::expect_error([] { parse_message("u_dot_e"); }, {"u_dot_e", "copy_u", "u_OP_v"});
  test::expect_error([] { parse_reduce("prod"); }, {"prod", "sum, mean, max or min"});
  test::expect_error([] { parse_binary_op("pow"); }, {"pow", "dot"});
  test::expect_error([] { parse_ordering("metis"); }, {"metis", "rcm"});
}

// ---- reference: hand-computed --------------------------------------------------------------

// Edges 0->2, 1->2, 2->2, 0->1; node 0 receives nothing. H = D = 1.
const HostGraph& tiny() {
  static const HostGraph g = graph_from_edges(3, {0, 1, 2, 0}, {2, 2, 2, 1});
  return g;
}
const std::vector<float> kX{1, -2, 4}, kW{0.5f, 2, -1, 3};

TEST(MessageRef, HandComputedSpmm) {
  const Operand x{kX.data(), 1, 1}, w{kW.data(), 1, 1};
  auto run = [&](Message m, Reduce r, std::vector<edge_t>* arg = nullptr) {
    return reference_gspmm(tiny(), m, r, 1, 1, m.lhs == Target::E ? w : x,
                           m.rhs == Target::E ? w : m.rhs == Target::V ? x : Operand{}, arg);
  };
  // Row 2's messages x_u * w_e: 0.5, -4, -4 (a tie: the first edge wins); row 1's: 3.
  EXPECT_EQ(run(Message::u_op_e(BinaryOp::Mul), Reduce::Sum), (std::vector<double>{0, 3, -7.5}));
  EXPECT_EQ(run(Message::u_op_e(BinaryOp::Mul), Reduce::Mean), (std::vector<double>{0, 3, -2.5}));
  std::vector<edge_t> arg;
  EXPECT_EQ(run(Message::u_op_e(BinaryOp::Mul), Reduce::Min, &arg), (std::vector<double>{0, 3, -4}));
  EXPECT_EQ(arg, (std::vector<edge_t>{-1, 3, 1}));
  EXPECT_EQ(run(Message::u_op_e(BinaryOp::Mul), Reduce::Max, &arg), (std::vector<double>{0, 3, 0.5}));
  EXPECT_EQ(arg, (std::vector<edge_t>{-1, 3, 0}));
  // x_u - x_v: (1 - 4) + (-2 - 4) + (4 - 4) at row 2, 1 - (-2) at row 1.
  EXPECT_EQ(run(Message::u_op_v(BinaryOp::Sub), Reduce::Sum), (std::vector<double>{0, 3, -9}));
  EXPECT_EQ(run(Message::copy_e(), Reduce::Max), (std::vector<double>{0, 3, 2}));
  EXPECT_EQ(run(Message::u_op_v(BinaryOp::Div), Reduce::Min), (std::vector<double>{0, -0.5, -0.5}));
}

TEST(MessageRef, HandComputedSddmmKeepsCallerEdgeOrder) {
  // Two heads of two features: x_u . y_v per head, edges in the order given.
  const HostGraph g = graph_from_edges(2, {1, 0, 1}, {0, 1, 1});
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8}, y{1, 0, 0, 1, 2, 2, -1, 1};
  const Operand X{x.data(), 2, 2}, Y{y.data(), 2, 2};
  // Edge 0 (1 -> 0): <[5,6],[1,0]>, <[7,8],[0,1]>; edge 1 (0 -> 1): <[1,2],[2,2]>, <[3,4],[-1,1]>;
  // edge 2 (1 -> 1): <[5,6],[2,2]>, <[7,8],[-1,1]>.
  EXPECT_EQ(reference_gsddmm(g, BinaryOp::Dot, 2, 2, X, Y), (std::vector<double>{5, 8, 6, 1, 22, 1}));
  const std::vector<float> s{10, 20};  // one value per node, broadcast over heads and features
  EXPECT_EQ(reference_gsddmm(g, BinaryOp::Sub, 2, 2, X, Operand{s.data(), 1, 1}),
            (std::vector<double>{-5, -4, -3, -2, -19, -18, -17, -16, -15, -14, -13, -12}));
}

// ---- reference: backward against finite differences ----------------------------------------

const std::vector<HostGraph>& small_graphs() {
  static const std::vector<HostGraph> gs{test::random_graph(10, 30, 5), test::test_graphs(0)[4].graph};
  return gs;
}

using SpmmParam = std::tuple<Message, Reduce>;
class MessageRefSpmm : public ::testing::TestWithParam<SpmmParam> {};

TEST_P(MessageRefSpmm, BackwardMatchesFiniteDifferences) {
  // Not a structured binding: the loss lambda captures them (C++20 for bindings).
  const Message m = std::get<0>(GetParam());
  const Reduce r = std::get<1>(GetParam());
  const int H = 2, D = 3;
  for (const HostGraph& g : small_graphs())
    for (const test::Broadcast& b : test::broadcasts()) {
      test::SpmmOperands in(g, m, b, H, D, 3);
      const std::vector<float> dout = test::random_values(std::size_t(g.num_nodes) * H * D, 9);
      std::vector<edge_t> arg;
      reference_gspmm(g, m, r, H, D, in.lhs.operand(), in.rhs.operand(), &arg);
      const GspmmGradients grad =
          reference_gspmm_backward(g, m, r, H, D, in.lhs.operand(), in.rhs.operand(), arg.data(), dout.data());
      auto loss = [&] { return dot(reference_gspmm(g, m, r, H, D, in.lhs.operand(), in.rhs.operand()), dout); };
      EXPECT_LT(relative_difference(grad.dlhs, numeric_gradient(in.lhs.data, loss)), 1e-6) << b.name;
      EXPECT_LT(relative_difference(grad.drhs, numeric_gradient(in.rhs.data, loss)), 1e-6) << b.name;
    }
}

INSTANTIATE_TEST_SUITE_P(All, MessageRefSpmm,
                         ::testing::Combine(::testing::ValuesIn(test::messages()), ::testing::ValuesIn(test::reduces())),
                         [](const ::testing::TestParamInfo<SpmmParam>& info) {
                           return test::case_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

class MessageRefSddmm : public ::testing::TestWithParam<BinaryOp> {};

TEST_P(MessageRefSddmm, BackwardMatchesFiniteDifferences) {
  const BinaryOp op = GetParam();
  const int H = 2, D = 3, width = op == BinaryOp::Dot ? 1 : D;
  for (const HostGraph& g : small_graphs())
    for (const test::Broadcast& b : test::broadcasts()) {
      const std::size_t N = std::size_t(g.num_nodes);
      HostTensor x(N, b.lhs.heads(H), b.lhs.dim(D), 4), y(N, b.rhs.heads(H), b.rhs.dim(D), 6);
      const std::vector<float> dout = test::random_values(std::size_t(g.num_edges()) * H * width, 8);
      const int Dop = op == BinaryOp::Dot ? std::max(x.dim, y.dim) : D;  // a dot's width: the wider operand
      const GsddmmGradients grad = reference_gsddmm_backward(g, op, H, Dop, x.operand(), y.operand(), dout.data());
      auto loss = [&] { return dot(reference_gsddmm(g, op, H, Dop, x.operand(), y.operand()), dout); };
      EXPECT_LT(relative_difference(grad.dx, numeric_gradient(x.data, loss)), 1e-6) << b.name;
      EXPECT_LT(relative_difference(grad.dy, numeric_gradient(y.data, loss)), 1e-6) << b.name;
    }
}

INSTANTIATE_TEST_SUITE_P(All, MessageRefSddmm,
                         ::testing::Values(BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Dot),
                         [](const ::testing::TestParamInfo<BinaryOp>& info) { return to_string(info.param); });

TEST(MessageRef, GcnIsSpmmWithDegreeWeights) {
  const int H = 2, D = 3;
  for (const HostGraph& g : small_graphs()) {
    const std::size_t N = std::size_t(g.num_nodes);
    std::vector<float> x = test::random_values(N * H * D, 2);
    // The same sum as u_mul_e with w_e = 1 / sqrt(d_out(u) d_in(v)) per edge, in the caller's order.
    std::vector<edge_t> sent(N, 0);
    for (node_t u : g.src) ++sent[u];
    std::vector<float> w(std::size_t(g.num_edges()));
    for (edge_t e = 0; e < g.num_edges(); ++e) {
      const edge_t in = g.row_ptr[g.dst[e] + 1] - g.row_ptr[g.dst[e]];
      w[g.edge_id[e]] = float(1.0 / std::sqrt(double(std::max<edge_t>(1, sent[g.src[e]]) * in)));
    }
    const auto spmm = reference_gspmm(g, Message::u_op_e(BinaryOp::Mul), Reduce::Sum, H, D, {x.data(), H, D},
                                      {w.data(), 1, 1});
    EXPECT_LT(relative_difference(reference_gcn_aggregate(g, H, D, x.data()), spmm), 1e-6);
    const std::vector<float> dout = test::random_values(N * H * D, 3);
    EXPECT_LT(relative_difference(reference_gcn_aggregate_backward(g, H, D, dout.data()),
                                  numeric_gradient(x, [&] { return dot(reference_gcn_aggregate(g, H, D, x.data()), dout); })),
              1e-6);
  }
}

TEST(MessageRef, RejectsBadArguments) {
  const HostGraph& g = tiny();
  const Operand x{kX.data(), 1, 1}, w{kW.data(), 1, 1}, x2{kX.data(), 2, 1};
  const auto mul_e = Message::u_op_e(BinaryOp::Mul);
  test::expect_error([&] { reference_gspmm(g, Message::copy_u(), Reduce::Sum, 1, 1, x, w); },
                     {"reference_gspmm", "rhs is given", "copy_u"});
  test::expect_error([&] { reference_gspmm(g, mul_e, Reduce::Sum, 1, 1, x, {kW.data(), 1, 2}); },
                     {"rhs has shape [4,1,2]", "[E,1|H,1|D] with E = 4, H = 1, D = 1"});
  test::expect_error([&] { reference_gspmm(g, mul_e, Reduce::Sum, 1, 1, x, {}); }, {"rhs is missing"});
  test::expect_error([&] { reference_gspmm(g, mul_e, Reduce::Sum, 3, 1, x2, w); }, {"lhs has shape [3,2,1]", "H = 3"});
  test::expect_error([&] { reference_gspmm(g, Message{Target::V, Target::None}, Reduce::Sum, 1, 1, x, {}); },
                     {"copy_u, copy_e, u_OP_e or u_OP_v"});
  for (const BinaryOp op : {BinaryOp::Dot, BinaryOp(9)})
    test::expect_error([&] { reference_gspmm(g, Message::u_op_e(op), Reduce::Sum, 1, 1, x, w); },
                       {"add, sub, mul or div"});
  test::expect_error([&] { reference_gspmm(g, mul_e, Reduce::Sum, 0, 1, x, w); }, {"H and D must be >= 1"});
  const std::vector<float> dout(3, 1.0f);
  test::expect_error([&] { reference_gspmm_backward(g, mul_e, Reduce::Max, 1, 1, x, w, nullptr, dout.data()); },
                     {"reference_gspmm_backward", "arg has shape [3,1,1] but no data"});
  test::expect_error([&] { reference_gsddmm(g, BinaryOp::Dot, 1, 2, x, x); }, {"dim 1, expected D = 2"});
  test::expect_error([&] { reference_gsddmm(g, BinaryOp::Add, 1, 1, x, x2); }, {"y has shape [3,2,1]", "N = 3, H = 1"});
  test::expect_error([&] { reference_gcn_aggregate(g, 1, 1, nullptr); }, {"x has shape [3,1,1] but no data"});
  // The CUDA kernels' per-row stride H*D*4 is 32-bit; a wider row is refused at the check.
  const std::size_t wide = std::size_t(1) << 15;
  const detail::Extents lhs{"lhs", nullptr, 3, wide, wide}, out{"out", nullptr, 3, wide, wide};
  test::expect_error([&] { detail::check_gspmm("gspmm", 3, 4, Message::copy_u(), Reduce::Sum, lhs, {}, out, {"arg", nullptr, 0, 0, 0}); },
                     {"gspmm: out has shape [3,32768,32768]: H x D exceeds 2^29 - 1 features per row"});
  const detail::Extents huge{"out", nullptr, 3, std::size_t(1) << 40, std::size_t(1) << 40};
  test::expect_error([&] { detail::check_gspmm("gspmm", 3, 4, Message::copy_u(), Reduce::Sum, lhs, {}, huge, {"arg", nullptr, 0, 0, 0}); },
                     {"gspmm: out H x D 1099511627776 x 1099511627776 overflows 64 bits"});
}

// ---- reordering ----------------------------------------------------------------------------

TEST(Reorder, RcmRecoversBandedStructure) {
  // A path with shuffled ids becomes 0 - 1 - 2 - ...; a 12 x 40 grid a band about 12 wide.
  const HostGraph path = test::shuffled_grid(1, 200, 1);
  EXPECT_EQ(test::bandwidth(path, reorder(path, Ordering::RCM).position), 1);
  const HostGraph grid = test::shuffled_grid(12, 40, 2);
  EXPECT_GT(test::bandwidth(grid, reorder(grid, Ordering::None).position), 200);
  EXPECT_LE(test::bandwidth(grid, reorder(grid, Ordering::RCM).position), 13);  // the narrow side + 1
}

TEST(Reorder, PermutesEveryGraphShape) {
  for (const auto& [name, g] : test::test_graphs(300))
    for (Ordering o : {Ordering::None, Ordering::RCM, Ordering::Degree}) {
      SCOPED_TRACE(name + " " + to_string(o));
      const Reordered r = reorder(g, o);
      ASSERT_EQ(r.order.size(), std::size_t(g.num_nodes));
      std::vector<node_t> sorted = r.order;
      std::sort(sorted.begin(), sorted.end());
      for (std::size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], node_t(i));
      for (std::size_t i = 0; i < r.order.size(); ++i) ASSERT_EQ(r.position[r.order[i]], node_t(i));
      // Every edge keeps its endpoints (renamed) and its caller's index; rows keep their order.
      ASSERT_EQ(r.graph.num_edges(), g.num_edges());
      std::vector<std::pair<node_t, node_t>> ends(std::size_t(g.num_edges()));
      for (edge_t e = 0; e < g.num_edges(); ++e) ends[g.edge_id[e]] = {g.src[e], g.dst[e]};
      edge_t last_id = -1;
      for (edge_t e = 0; e < r.graph.num_edges(); ++e) {
        const auto want = ends[r.graph.edge_id[e]];
        EXPECT_EQ(r.order[r.graph.src[e]], want.first);
        EXPECT_EQ(r.order[r.graph.dst[e]], want.second);
        if (e > r.graph.row_ptr[r.graph.dst[e]]) {
          EXPECT_GT(r.graph.edge_id[e], last_id);
        }
        last_id = r.graph.edge_id[e];
      }
      EXPECT_TRUE(r.graph.graph_ptr.empty());
      EXPECT_EQ(r.graph.stats.max, g.stats.max);
      if (o != Ordering::Degree) continue;
      for (node_t v = 1; v < g.num_nodes; ++v)
        EXPECT_GE(r.graph.row_ptr[v] - r.graph.row_ptr[v - 1], r.graph.row_ptr[v + 1] - r.graph.row_ptr[v]);
    }
}

TEST(Reorder, ResultsComeBackInTheCallersOrder) {
  const int H = 2, D = 3;
  const HostGraph g = test::power_law_graph(200, 1500, 6);
  for (Ordering o : {Ordering::RCM, Ordering::Degree})
    for (const Message& m : {Message::u_op_e(BinaryOp::Mul), Message::u_op_v(BinaryOp::Sub)})
      for (Reduce red : {Reduce::Sum, Reduce::Max}) {
        const test::SpmmOperands in(g, m, test::broadcasts()[0], H, D, 1);
        const Reordered r = reorder(g, o);
        const std::vector<float> x = gather_rows(in.lhs.data, r.order);
        const std::vector<float> y = m.rhs == Target::V ? gather_rows(in.rhs.data, r.order) : in.rhs.data;
        const auto out = reference_gspmm(r.graph, m, red, H, D, {x.data(), H, D}, {y.data(), H, D});
        const std::vector<float> back = gather_rows(std::vector<float>(out.begin(), out.end()), r.position);
        const auto want = reference_gspmm(g, m, red, H, D, in.lhs.operand(), in.rhs.operand());
        // Same edges in the same order per row: the same sums, bit for bit (as floats).
        EXPECT_EQ(back, std::vector<float>(want.begin(), want.end())) << to_string(o) << " " << to_string(m);
      }
}

TEST(Reorder, RejectsBadPermutations) {
  const HostGraph& g = tiny();
  test::expect_error([&] { permute(g, {0, 1}); }, {"2 entries, expected N = 3"});
  test::expect_error([&] { permute(g, {0, 1, 1}); }, {"entry 2 (1)", "repeated"});
  test::expect_error([&] { permute(g, {0, 3, 1}); }, {"entry 1 (3)", "outside [0, N)"});
  test::expect_error([] { gather_rows(std::vector<float>{1, 2, 3}, {0, 1}); }, {"3 values", "2 nodes"});
  test::expect_error([] { gather_rows(std::vector<float>{1, 2}, {0, 2}); }, {"index 1 (2)", "outside [0, 2)"});
  test::expect_error([&] { reorder(g, Ordering(9)); }, {"reorder: ordering 9"});
}

}  // namespace
