// GPU tests of the CUDA-native message passing: every message x reduce x broadcast shape x
// graph shape at widths that take every lane tile (scalar lanes, sub-warp groups of 8 and 16,
// a warp, two float4 per lane, rows in two slices), forward, arguments and backward, against
// the float64 reference; every g-SDDMM operator; the GCN aggregation; reproducibility, the
// scalar fallback for unaligned tensors, and the argument checks. Needs a CUDA device.

#include "../expect_error.hpp"
#include "../message_cases.hpp"

#include <dfgnn/cuda_message_passing.hpp>
#include <dfgnn/reference.hpp>
#include <dfgnn/reference_message_passing.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <tuple>

namespace {

using namespace dfgnn;
using test::HostTensor;

void ok(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }

/// A device array: a copy of a host vector, or n poisoned entries (floats NaN, edge indices a
/// huge positive value, so that an entry a kernel skips shows).
template <class T>
class Buf {
 public:
  explicit Buf(std::size_t n, std::size_t pad = 0) : n_(n) {
    ok(cudaMalloc(&base_, (n + pad + 1) * sizeof(T)));
    p_ = base_ + pad;
    ok(cudaMemset(p_, sizeof(T) == 8 ? 0x7f : 0xff, n * sizeof(T)));
  }
  /// `pad` entries before the data shift it off 16-byte alignment.
  explicit Buf(const std::vector<T>& h, std::size_t pad = 0) : Buf(h.size(), pad) {
    ok(cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~Buf() { cudaFree(base_); }
  Buf(const Buf&) = delete;
  T* get() const { return p_; }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    ok(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* base_ = nullptr;
  T* p_ = nullptr;
  std::size_t n_;
};

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

double error(const std::vector<float>& out, const std::vector<double>& ref) {
  return out.size() == ref.size() ? max_relative_error(out.data(), ref) : INFINITY;
}

/// (H, D) covering every tile: scalar (odd, or W beyond 128 with odd D), 8, 16, 32 float4
/// lanes, two float4 per lane, two slices of 256; and float4 tiles D does not fill (lanes or a
/// chunk past D: the kernels for D a multiple of the tile's width load without checks).
const std::vector<std::pair<int, int>> kShapes{{2, 3},   {1, 33},  {1, 32},  {2, 32},
                                               {1, 128}, {2, 128}, {4, 128}, {1, 100}, {1, 200}};

Operand on(const Buf<float>& b, const HostTensor& t) { return t.heads ? Operand{b.get(), t.heads, t.dim} : Operand{}; }

// ---- g-SpMM --------------------------------------------------------------------------------

/// A g-SpMM forward on the device (max/min with arguments) checked against the float64
/// reference; keeps its device operands and the arguments it got for further calls.
struct CheckedSpmm {
  test::SpmmOperands in;
  Buf<float> lhs, rhs, out;
  Buf<edge_t> arg;
  std::vector<edge_t> got_arg;

  CheckedSpmm(const cuda::MessagePlan& plan, const HostGraph& g, const Message& m, Reduce r, const test::Broadcast& b,
              int H, int D, unsigned seed)
      : in(g, m, b, H, D, seed, /*exact=*/true),
        lhs(in.lhs.data),
        rhs(in.rhs.data),
        out(std::size_t(g.num_nodes) * H * D),
        arg(extreme(r) ? std::size_t(g.num_nodes) * H * D : 0) {
    cuda::gspmm(nullptr, plan, m, r, H, D, on(lhs, in.lhs), on(rhs, in.rhs), out.get(), extreme(r) ? arg.get() : nullptr);
    std::vector<edge_t> ref_arg;
    EXPECT_LT(error(out.host(), reference_gspmm(g, m, r, H, D, in.lhs.operand(), in.rhs.operand(), &ref_arg)),
              test::tolerance(g));
    if (!extreme(r)) return;
    got_arg = arg.host();
    EXPECT_EQ(got_arg, ref_arg);
  }
  static bool extreme(Reduce r) { return r == Reduce::Max || r == Reduce::Min; }
};

using test::SpmmParam;
class CudaMessageSpmm : public ::testing::TestWithParam<SpmmParam> {};

TEST_P(CudaMessageSpmm, ForwardAndBackwardMatchFloat64Reference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const auto [m, r, graph] = GetParam();
  const auto& [name, g] = test::kernel_graphs()[std::size_t(graph)];
  const cuda::MessagePlan plan(g);
  const std::size_t N = std::size_t(g.num_nodes);
  const bool extreme = CheckedSpmm::extreme(r);
  for (const auto& [H, D] : kShapes)
    for (const test::Broadcast& b : test::broadcasts()) {
      if (H * D > 64 && b.name != "full" && b.name != "rhs_scalar") continue;  // wide rows: the common shapes
      SCOPED_TRACE(name + " " + b.name + " H=" + std::to_string(H) + " D=" + std::to_string(D));
      const CheckedSpmm run(plan, g, m, r, b, H, D, unsigned(graph) + 5);
      const auto& [in, lhs, rhs, out, arg, got_arg] = run;
      if (extreme) {
        const Buf<float> values_only(N * H * D);  // a forward without arguments: the same values
        cuda::gspmm(nullptr, plan, m, r, H, D, on(lhs, in.lhs), on(rhs, in.rhs), values_only.get());
        EXPECT_EQ(values_only.host(), out.host());
      }

      const HostTensor dout_host(N, H, D, 77);
      const Buf<float> dout(dout_host.data), dl(in.lhs.data.size()), dr(in.rhs.data.size());
      cuda::gspmm_backward(nullptr, plan, m, r, H, D, on(lhs, in.lhs), on(rhs, in.rhs), extreme ? arg.get() : nullptr,
                           dout.get(), dl.get(), m.is_copy() ? nullptr : dr.get());
      const GspmmGradients ref = reference_gspmm_backward(g, m, r, H, D, in.lhs.operand(), in.rhs.operand(),
                                                          got_arg.data(), dout_host.data.data());
      EXPECT_LT(error(dl.host(), ref.dlhs), test::tolerance(g, std::size_t(H * D / (in.lhs.heads * in.lhs.dim))));
      if (!m.is_copy()) {
        EXPECT_LT(error(dr.host(), ref.drhs), test::tolerance(g, std::size_t(H * D / (in.rhs.heads * in.rhs.dim))));
      }
    }
}

INSTANTIATE_TEST_SUITE_P(All, CudaMessageSpmm, test::spmm_params(), test::spmm_name);

// ---- g-SDDMM -------------------------------------------------------------------------------

using test::SddmmParam;
class CudaMessageSddmm : public ::testing::TestWithParam<SddmmParam> {};

TEST_P(CudaMessageSddmm, ForwardAndBackwardMatchFloat64Reference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const auto [op, graph] = GetParam();
  const auto& [name, g] = test::kernel_graphs()[std::size_t(graph)];
  const cuda::MessagePlan plan(g);
  const std::size_t N = std::size_t(g.num_nodes), E = std::size_t(g.num_edges());
  for (const auto& [H, D] : kShapes)
    for (const test::Broadcast& b : test::broadcasts()) {
      SCOPED_TRACE(name + " " + b.name + " H=" + std::to_string(H) + " D=" + std::to_string(D));
      const HostTensor x(N, b.lhs.heads(H), b.lhs.dim(D), 3), y(N, b.rhs.heads(H), b.rhs.dim(D), 4);
      const int width = op == BinaryOp::Dot ? 1 : D, Dop = op == BinaryOp::Dot ? std::max(x.dim, y.dim) : D;
      const Buf<float> X(x.data), Y(y.data), out(E * H * width);
      cuda::gsddmm(nullptr, plan, op, H, Dop, on(X, x), on(Y, y), out.get());
      EXPECT_LT(error(out.host(), reference_gsddmm(g, op, H, Dop, x.operand(), y.operand())), test::tolerance(g));
      const HostTensor dout_host(E, H, width, 5);
      const Buf<float> dout(dout_host.data), dx(x.data.size()), dy(y.data.size());
      cuda::gsddmm_backward(nullptr, plan, op, H, Dop, on(X, x), on(Y, y), dout.get(), dx.get(), dy.get());
      const GsddmmGradients ref = reference_gsddmm_backward(g, op, H, Dop, x.operand(), y.operand(), dout_host.data.data());
      EXPECT_LT(error(dx.host(), ref.dx), test::tolerance(g, std::size_t(H * Dop / (x.heads * x.dim))));
      EXPECT_LT(error(dy.host(), ref.dy), test::tolerance(g, std::size_t(H * Dop / (y.heads * y.dim))));
    }
}

INSTANTIATE_TEST_SUITE_P(All, CudaMessageSddmm, test::sddmm_params(), test::sddmm_name);

// Many short rows (mean degree 3; 40000 rows fill the plan's waves on GPUs of up to 156 SMs):
// g-SpMM walks each row with half a warp at 64 < D <= 128 (full and partial column chunks).
// One case per kernel shape: each fold of a copy, an edge weight, two full operands, a
// division, operands broadcast differently (the run-time shape).
TEST(CudaMessage, HalfWarpRowsMatchFloat64Reference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const HostGraph g = test::random_graph(40000, 120000, 21);
  const cuda::MessagePlan plan(g);
  ASSERT_TRUE(plan.half_warp_rows());
  const auto& b = test::broadcasts();
  const Message copy = Message::copy_u(), mul_e = Message::u_op_e(BinaryOp::Mul);
  const std::vector<std::tuple<Message, Reduce, const test::Broadcast*>> cases{
      {copy, Reduce::Sum, &b[0]},  {copy, Reduce::Mean, &b[0]},  {copy, Reduce::Max, &b[0]},
      {copy, Reduce::Min, &b[0]},  {mul_e, Reduce::Sum, &b[2]}, {mul_e, Reduce::Max, &b[2]},
      {mul_e, Reduce::Sum, &b[0]}, {Message::u_op_v(BinaryOp::Sub), Reduce::Min, &b[0]},
      {Message::u_op_e(BinaryOp::Div), Reduce::Mean, &b[0]}, {Message::u_op_v(BinaryOp::Add), Reduce::Sum, &b[4]}};
  for (const auto& [H, D] : {std::pair{1, 128}, std::pair{2, 72}})
    for (const auto& [m, r, shape] : cases) {
      SCOPED_TRACE(to_string(m) + " " + to_string(r) + " " + shape->name + " H=" + std::to_string(H) +
                   " D=" + std::to_string(D));
      [[maybe_unused]] const CheckedSpmm checked(plan, g, m, r, *shape, H, D, 9);
    }
}

// ---- GCN, reproducibility, unaligned tensors, checks ---------------------------------------

TEST(CudaMessage, GcnAggregateForwardAndBackward) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (const auto& [name, g] : test::kernel_graphs())
    for (const auto& [H, D] : kShapes) {
      SCOPED_TRACE(name + " H=" + std::to_string(H) + " D=" + std::to_string(D));
      const std::size_t N = std::size_t(g.num_nodes);
      const cuda::MessagePlan plan(g);
      const HostTensor x(N, H, D, 1), dout(N, H, D, 2);
      const Buf<float> X(x.data), DOUT(dout.data), out(N * H * D), dx(N * H * D);
      cuda::gcn_aggregate(nullptr, plan, H, D, X.get(), out.get());
      cuda::gcn_aggregate_backward(nullptr, plan, H, D, DOUT.get(), dx.get());
      EXPECT_LT(error(out.host(), reference_gcn_aggregate(g, H, D, x.data.data())), test::tolerance(g));
      EXPECT_LT(error(dx.host(), reference_gcn_aggregate_backward(g, H, D, dout.data.data())), test::tolerance(g));
    }
}

// The same call twice, and with every tensor shifted off 16-byte alignment (the scalar lanes):
// bit for bit the same results, since each entry is summed in the same order and rounded alike
// (a weighted sum: one fma per entry in every tile). Full, [E,H] and [E] edge operands.
TEST(CudaMessage, ReproducibleAndIndependentOfAlignment) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const HostGraph& g = test::kernel_graphs()[7].graph;  // power law: split rows
  const std::size_t N = std::size_t(g.num_nodes);
  const int H = 2, D = 64;
  const cuda::MessagePlan plan(g);
  const auto mul_e = Message::u_op_e(BinaryOp::Mul);
  for (std::size_t k : {0, 1, 2}) {  // full, [E,H], [E]
    const test::Broadcast& shape = test::broadcasts()[k];
    for (Reduce r : test::reduces()) {
      const test::SpmmOperands in(g, mul_e, shape, H, D, 3);
      std::vector<std::vector<float>> outs;
      for (std::size_t pad : {0, 0, 1}) {
        const Buf<float> x(in.lhs.data, pad), w(in.rhs.data, pad), out(N * H * D, pad);
        cuda::gspmm(nullptr, plan, mul_e, r, H, D, on(x, in.lhs), on(w, in.rhs), out.get());
        outs.push_back(out.host());
      }
      EXPECT_EQ(outs[0], outs[1]) << shape.name << " " << to_string(r);
      EXPECT_EQ(outs[0], outs[2]) << shape.name << " " << to_string(r);
    }
  }
}

TEST(CudaMessage, ArgumentChecksNameTheArgument) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const HostGraph g = test::random_graph(13, 60, 7);
  const cuda::MessagePlan plan(g);
  const Buf<float> x(13 * 6), w(60), out(13 * 6);
  const Operand X{x.get(), 2, 3}, W{w.get(), 1, 1};
  const auto mul_e = Message::u_op_e(BinaryOp::Mul);
  test::expect_error([&] { cuda::gspmm(nullptr, plan, mul_e, Reduce::Sum, 2, 3, X, W, nullptr); },
                     {"cuda::gspmm: out has shape [13,2,3] but no data"});
  test::expect_error([&] { cuda::gspmm(nullptr, plan, Message::copy_u(), Reduce::Sum, 2, 3, X, W, out.get()); },
                     {"rhs is given", "copy_u takes one operand"});
  test::expect_error([&] { cuda::gspmm(nullptr, plan, mul_e, Reduce::Sum, 2, 3, X, {w.get(), 1, 2}, out.get()); },
                     {"rhs has shape [60,1,2]"});
  test::expect_error([&] { cuda::gspmm(nullptr, plan, mul_e, Reduce::Sum, 2, 3, {out.get(), 2, 3}, W, out.get()); },
                     {"out overlaps lhs"});
  test::expect_error([&] { cuda::gspmm(nullptr, plan, mul_e, Reduce::Sum, 0, 3, X, W, out.get()); }, {"H and D must be >= 1"});
  test::expect_error(
      [&] { cuda::gspmm_backward(nullptr, plan, mul_e, Reduce::Max, 2, 3, X, W, nullptr, out.get(), nullptr, nullptr); },
      {"cuda::gspmm_backward: arg has shape [13,2,3] but no data"});
  test::expect_error([&] { cuda::gsddmm(nullptr, plan, BinaryOp::Dot, 2, 4, X, X, out.get()); },
                     {"cuda::gsddmm: x and y have dim 3, expected D = 4"});
  test::expect_error([&] { cuda::gcn_aggregate(nullptr, plan, 2, 3, x.get(), x.get()); }, {"out overlaps x"});
  test::expect_error([&] { cuda::MessagePlan(g, cuda::DeviceGraph{13, 59}); }, {"the device graph has 13 nodes and 59 edges"});
}

}  // namespace
