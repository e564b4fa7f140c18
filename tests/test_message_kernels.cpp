// The portable Kokkos message-passing kernels against the float64 reference: every message x
// reduce x broadcast shape x graph shape (forward, arguments, backward), every g-SDDMM
// operator, the GCN aggregation, reordering on the device, and the argument checks.

#include "call_fixture.hpp"
#include "expect_error.hpp"
#include "message_cases.hpp"

#include <dfgnn/message_passing.hpp>
#include <dfgnn/reference.hpp>
#include <dfgnn/reference_message_passing.hpp>
#include <dfgnn/reorder.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <tuple>

namespace {

using namespace dfgnn;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using test::HostTensor;

/// A host tensor on the device, viewed as [rows, heads, dim] (empty when absent).
struct DeviceTensor {
  Kokkos::View<float*, Mem> data;
  Tensor<Mem> view;
  DeviceTensor(const HostTensor& t, std::size_t rows)
      : data(detail::upload<float, Mem>("input", t.data)),
        view(t.heads ? Tensor<Mem>(data.data(), rows, std::size_t(t.heads), std::size_t(t.dim)) : Tensor<Mem>()) {}
};

/// An output [rows, heads, dim] filled with NaN, so that an entry the kernel skips shows.
TensorOutput<Mem> poisoned(std::size_t rows, int heads, int dim) {
  TensorOutput<Mem> t("output", rows, std::size_t(heads), std::size_t(dim));
  Kokkos::deep_copy(t, std::numeric_limits<float>::quiet_NaN());
  return t;
}

template <class View>
std::vector<typename View::non_const_value_type> host(const View& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return {h.data(), h.data() + h.size()};
}

/// Relative error of a kernel output against the reference; an absent gradient must be absent.
double error(const TensorOutput<Mem>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return std::numeric_limits<double>::infinity();
  return max_relative_error(host(out).data(), ref);
}

// ---- g-SpMM --------------------------------------------------------------------------------

using test::SpmmParam;
class MessageKernelsSpmm : public ::testing::TestWithParam<SpmmParam> {};

TEST_P(MessageKernelsSpmm, ForwardAndBackwardMatchFloat64Reference) {
  const auto [m, r, graph] = GetParam();
  const auto& [name, g] = test::kernel_graphs()[std::size_t(graph)];
  const Graph<Mem> graph_on_device(g);
  const std::size_t N = std::size_t(g.num_nodes);
  const bool extreme = r == Reduce::Max || r == Reduce::Min;
  for (const auto [H, D] : {std::pair{2, 3}, std::pair{1, 33}})
    for (const test::Broadcast& b : test::broadcasts()) {
      if (D == 33 && b.name != "full") continue;  // the wide shape once: lanes beyond 32
      SCOPED_TRACE(name + " " + b.name + " H=" + std::to_string(H) + " D=" + std::to_string(D));
      const test::SpmmOperands in(g, m, b, H, D, unsigned(graph) + 5, /*exact=*/true);
      const DeviceTensor lhs(in.lhs, test::rows_of(m.lhs, g)), rhs(in.rhs, test::rows_of(m.rhs, g));
      const Exec exec;
      const TensorOutput<Mem> out = poisoned(N, H, D);
      ArgOutput<Mem> arg;
      if (extreme) {
        arg = ArgOutput<Mem>("arg", N, std::size_t(H), std::size_t(D));
        Kokkos::deep_copy(arg, edge_t(-7));
      }
      gspmm(exec, graph_on_device, m, r, lhs.view, rhs.view, out, arg);
      std::vector<edge_t> ref_arg;
      EXPECT_LT(error(out, reference_gspmm(g, m, r, H, D, in.lhs.operand(), in.rhs.operand(), &ref_arg)),
                test::tolerance(g));
      if (extreme) EXPECT_EQ(host(arg), ref_arg);

      const HostTensor dout_host(N, H, D, 77);
      const DeviceTensor dout(dout_host, N);
      const TensorOutput<Mem> dlhs = poisoned(lhs.view.extent(0), in.lhs.heads, in.lhs.dim);
      const TensorOutput<Mem> drhs = m.is_copy() ? TensorOutput<Mem>() : poisoned(rhs.view.extent(0), in.rhs.heads, in.rhs.dim);
      gspmm_backward(exec, graph_on_device, m, r, lhs.view, rhs.view, arg, dout.view, dlhs, drhs);
      const std::vector<edge_t> kernel_arg = extreme ? host(arg) : std::vector<edge_t>{};  // the backward's input
      const GspmmGradients ref = reference_gspmm_backward(g, m, r, H, D, in.lhs.operand(), in.rhs.operand(),
                                                          kernel_arg.data(), dout_host.data.data());
      EXPECT_LT(error(dlhs, ref.dlhs), test::tolerance(g, std::size_t(H * D / (in.lhs.heads * in.lhs.dim))));
      if (!m.is_copy()) {
        EXPECT_LT(error(drhs, ref.drhs), test::tolerance(g, std::size_t(H * D / (in.rhs.heads * in.rhs.dim))));
      }
    }
}

INSTANTIATE_TEST_SUITE_P(All, MessageKernelsSpmm, test::spmm_params(), test::spmm_name);

// ---- g-SDDMM -------------------------------------------------------------------------------

using test::SddmmParam;
class MessageKernelsSddmm : public ::testing::TestWithParam<SddmmParam> {};

TEST_P(MessageKernelsSddmm, ForwardAndBackwardMatchFloat64Reference) {
  const auto [op, graph] = GetParam();
  const auto& [name, g] = test::kernel_graphs()[std::size_t(graph)];
  const Graph<Mem> graph_on_device(g);
  const std::size_t N = std::size_t(g.num_nodes), E = std::size_t(g.num_edges());
  for (const auto [H, D] : {std::pair{2, 3}, std::pair{1, 33}})
    for (const test::Broadcast& b : test::broadcasts()) {
      if (D == 33 && b.name != "full") continue;
      SCOPED_TRACE(name + " " + b.name + " H=" + std::to_string(H) + " D=" + std::to_string(D));
      const HostTensor x(N, b.lhs.heads(H), b.lhs.dim(D), 3), y(N, b.rhs.heads(H), b.rhs.dim(D), 4);
      const int width = op == BinaryOp::Dot ? 1 : D, Dop = op == BinaryOp::Dot ? std::max(x.dim, y.dim) : D;
      const DeviceTensor X(x, N), Y(y, N);
      const Exec exec;
      const TensorOutput<Mem> out = poisoned(E, H, width);
      gsddmm(exec, graph_on_device, op, X.view, Y.view, out);
      EXPECT_LT(error(out, reference_gsddmm(g, op, H, Dop, x.operand(), y.operand())), test::tolerance(g));

      const HostTensor dout_host(E, H, width, 5);
      const DeviceTensor dout(dout_host, E);
      const TensorOutput<Mem> dx = poisoned(N, x.heads, x.dim), dy = poisoned(N, y.heads, y.dim);
      gsddmm_backward(exec, graph_on_device, op, X.view, Y.view, dout.view, dx, dy);
      const GsddmmGradients ref = reference_gsddmm_backward(g, op, H, Dop, x.operand(), y.operand(), dout_host.data.data());
      EXPECT_LT(error(dx, ref.dx), test::tolerance(g, std::size_t(H * Dop / (x.heads * x.dim))));
      EXPECT_LT(error(dy, ref.dy), test::tolerance(g, std::size_t(H * Dop / (y.heads * y.dim))));
    }
}

INSTANTIATE_TEST_SUITE_P(All, MessageKernelsSddmm, test::sddmm_params(), test::sddmm_name);

// ---- GCN, reordering -----------------------------------------------------------------------

TEST(MessageKernels, GcnAggregateForwardAndBackward) {
  const int H = 2, D = 5;
  for (const auto& [name, g] : test::kernel_graphs()) {
    SCOPED_TRACE(name);
    const std::size_t N = std::size_t(g.num_nodes);
    const HostTensor x(N, H, D, 1), dout(N, H, D, 2);
    const DeviceTensor X(x, N), DOUT(dout, N);
    const Graph<Mem> graph(g);
    const TensorOutput<Mem> out = poisoned(N, H, D), dx = poisoned(N, H, D);
    gcn_aggregate(Exec(), graph, X.view, out);
    gcn_aggregate_backward(Exec(), graph, DOUT.view, dx);
    EXPECT_LT(error(out, reference_gcn_aggregate(g, H, D, x.data.data())), test::tolerance(g));
    EXPECT_LT(error(dx, reference_gcn_aggregate_backward(g, H, D, dout.data.data())), test::tolerance(g));
  }
}

// A MessagePlan comes from the one factory: the backend rule as attention's plans have it, the
// portable kernels bit for bit the graph entries' (which build such a plan per call), and a
// bipartite graph refused.
TEST(MessageKernels, PlanTakesTheBackendRule) {
  const HostGraph g = test::kernel_graphs().front().graph;
  const Exec exec;
  const Graph<Mem> graph(g);
  const MessagePlan<Exec> portable(exec, graph, Backend::Portable);
  EXPECT_EQ(portable.backend(), Backend::Portable);
#ifdef DFGNN_NATIVE_CUDA
  const bool native = std::is_same_v<Exec, Kokkos::Cuda>;
#else
  const bool native = false;
#endif
  EXPECT_EQ(MessagePlan<Exec>(exec, graph).backend(), native ? Backend::Native : Backend::Portable);
  if (!native)
    test::expect_error([&] { MessagePlan<Exec>(exec, graph, Backend::Native); },
                       {"message plan: the CUDA-native backend needs Kokkos::Cuda"});
  test::expect_error([&] { MessagePlan<Exec>(exec, Graph<Mem>(graph_from_edges(3, 2, {0, 2}, {1, 0}))); },
                     {"message plan: message passing needs a square graph, not a bipartite one"});
  const std::size_t N = std::size_t(g.num_nodes);
  const HostTensor x(N, 2, 3, 4);
  const DeviceTensor X(x, N);
  const TensorOutput<Mem> a = poisoned(N, 2, 3), b = poisoned(N, 2, 3);
  gspmm(exec, portable, Message::copy_u(), Reduce::Mean, X.view, {}, a);
  gspmm(exec, graph, Message::copy_u(), Reduce::Mean, X.view, {}, b);
  EXPECT_EQ(host(a), host(b));
}

TEST(MessageKernels, ReorderedGraphGivesTheSameResultsInTheCallersOrder) {
  const int H = 2, D = 3;
  const HostGraph& g = test::kernel_graphs()[7].graph;  // power law
  const std::size_t N = std::size_t(g.num_nodes);
  const test::SpmmOperands in(g, Message::u_op_e(BinaryOp::Mul), test::broadcasts()[0], H, D, 9);
  const DeviceTensor x(in.lhs, N), w(in.rhs, std::size_t(g.num_edges()));
  const Exec exec;
  const TensorOutput<Mem> want = poisoned(N, H, D);
  gspmm(exec, Graph<Mem>(g), Message::u_op_e(BinaryOp::Mul), Reduce::Sum, x.view, w.view, want);
  for (Ordering o : {Ordering::RCM, Ordering::Degree}) {
    const Reordered r = reorder(g, o);
    const auto order = detail::upload<node_t, Mem>("order", r.order);
    const auto position = detail::upload<node_t, Mem>("position", r.position);
    const TensorOutput<Mem> x_new = poisoned(N, H, D), out_new = poisoned(N, H, D), out = poisoned(N, H, D);
    permute_nodes(exec, order, x.view, x_new);
    // Edge tensors stay in the caller's order: the reordered graph's edge_id maps to it.
    gspmm(exec, Graph<Mem>(r.graph), Message::u_op_e(BinaryOp::Mul), Reduce::Sum, x_new, w.view, out_new);
    permute_nodes(exec, position, out_new, out);
    EXPECT_EQ(host(out), host(want)) << to_string(o);  // the same sums in the same order
  }
}

// ---- argument checks -----------------------------------------------------------------------

class MessageKernelsErrors : public test::CallFixture {
 protected:
  /// A tensor [rows, heads, dim] over a new buffer.
  TensorOutput<Mem> t(std::size_t rows, std::size_t heads, std::size_t dim) {
    return TensorOutput<Mem>(buffer(rows * heads * dim).data(), rows, heads, dim);
  }
  std::size_t E() const { return std::size_t(graph_.num_edges()); }
};

TEST_F(MessageKernelsErrors, GspmmNamesTheBadArgument) {
  const auto x = t(N, H, D), w = t(E(), 1, 1), out = t(N, H, D);
  const auto mul_e = Message::u_op_e(BinaryOp::Mul);
  const ArgOutput<Mem> arg("arg", N, H, D);
  test::expect_error([&] { gspmm(exec_, graph_, mul_e, Reduce::Sum, x, t(N, 1, 1), out); },
                     {"gspmm: rhs has shape [13,1,1]", "[E,1|H,1|D] with E = 60"});
  test::expect_error([&] { gspmm(exec_, graph_, mul_e, Reduce::Sum, t(N, 4, D), w, out); },
                     {"lhs has shape [13,4,3]", "H = 2"});
  test::expect_error([&] { gspmm(exec_, graph_, Message::copy_u(), Reduce::Sum, x, w, out); },
                     {"rhs is given", "copy_u takes one operand"});
  test::expect_error([&] { gspmm(exec_, graph_, mul_e, Reduce::Sum, x, w, out, arg); },
                     {"arg is given but only max and min"});
  test::expect_error([&] { gspmm(exec_, graph_, mul_e, Reduce::Max, x, w, out, ArgOutput<Mem>("arg", N, H, 1)); },
                     {"arg has shape [13,2,1], expected [N,H,D]"});
  test::expect_error([&] { gspmm(exec_, graph_, mul_e, Reduce::Sum, x, w, TensorOutput<Mem>("out", N + 1, H, D)); },
                     {"out has shape [14,2,3], expected [N,H,D] with N = 13"});
  test::expect_error([&] { gspmm(exec_, graph_, Message::copy_u(), Reduce::Sum, out, {}, out); }, {"out overlaps lhs"});
  for (const BinaryOp op : {BinaryOp::Dot, BinaryOp(-3)})
    test::expect_error([&] { gspmm(exec_, graph_, Message::u_op_v(op), Reduce::Sum, x, x, out); },
                       {"add, sub, mul or div"});
}

TEST_F(MessageKernelsErrors, GspmmBackwardNamesTheBadArgument) {
  const auto x = t(N, H, D), w = t(E(), H, 1), dout = t(N, H, D), dx = t(N, H, D), dw = t(E(), H, 1);
  const auto div_e = Message::u_op_e(BinaryOp::Div);
  const ArgOutput<Mem> arg("arg", N, H, D);
  test::expect_error([&] { gspmm_backward(exec_, graph_, div_e, Reduce::Min, x, w, {}, dout, dx, dw); },
                     {"gspmm_backward: arg is missing"});
  test::expect_error([&] { gspmm_backward(exec_, graph_, div_e, Reduce::Mean, x, w, arg, dout, dx, dw); },
                     {"arg is given but only max and min"});
  test::expect_error([&] { gspmm_backward(exec_, graph_, div_e, Reduce::Sum, x, w, {}, dout, dx, t(E(), 1, 1)); },
                     {"drhs has shape [60,1,1], expected the shape of rhs [60,2,1]"});
  test::expect_error([&] { gspmm_backward(exec_, graph_, Message::copy_u(), Reduce::Sum, x, {}, {}, dout, dx, dw); },
                     {"drhs is given but there is no rhs"});
  test::expect_error(
      [&] { gspmm_backward(exec_, graph_, Message::u_op_v(BinaryOp::Add), Reduce::Sum, x, x, {}, dout, dx, dx); },
      {"dlhs overlaps drhs"});
  test::expect_error([&] { gspmm_backward(exec_, graph_, div_e, Reduce::Sum, x, w, {}, dout, TensorOutput<Mem>(dout.data(), N, H, D), dw); },
                     {"dlhs overlaps dout"});
}

TEST_F(MessageKernelsErrors, SddmmGcnAndPermuteNameTheBadArgument) {
  const auto x = t(N, H, D), y = t(N, 1, D);
  test::expect_error([&] { gsddmm(exec_, graph_, BinaryOp::Dot, x, y, t(E(), H, D)); },
                     {"gsddmm: out of dot must be [E,H,1], got dim 3"});
  test::expect_error([&] { gsddmm(exec_, graph_, BinaryOp::Add, x, t(N, H, 2), t(E(), H, D)); },
                     {"y has shape [13,2,2]", "[N,1|H,1|D]"});
  test::expect_error([&] { gsddmm(exec_, graph_, BinaryOp::Mul, x, y, t(N, H, D)); },
                     {"out has shape [13,2,3], expected [E,H,D] with E = 60"});
  test::expect_error([&] { gsddmm_backward(exec_, graph_, BinaryOp::Sub, x, y, t(E(), H, D), t(N, H, D), t(N, H, D)); },
                     {"gsddmm_backward: dy has shape [13,2,3], expected the shape of y [13,1,3]"});
  test::expect_error([&] { gcn_aggregate(exec_, graph_, y, t(N, H, D)); },
                     {"gcn_aggregate: x has shape [13,1,3], expected [N,H,D]"});
  test::expect_error([&] { gcn_aggregate_backward(exec_, graph_, x, TensorOutput<Mem>(x.data(), N, H, D)); },
                     {"gcn_aggregate_backward: dx overlaps dout"});
  const Kokkos::View<node_t*, Mem> index("index", N - 1);
  test::expect_error([&] { permute_nodes(exec_, Kokkos::View<const node_t*, Mem>(index), x, t(N, H, D)); },
                     {"permute_nodes: out has shape [13,2,3], expected [N,H,D] with N = 12"});
}

}  // namespace
