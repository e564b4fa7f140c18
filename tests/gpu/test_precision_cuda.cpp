// Two-byte element types (bf16, f16; half.hpp) on the CUDA-native forward and backward: every
// model through Auto's pick (Online, or Dense on a batch), Dense on its own batches, and the
// backward's walks in both orders, against
// the float64 reference on the same rounded inputs. The output must be within the accuracy
// contract (normwise relative error: bf16 1e-2, f16 2e-3) and within one rounding of a
// float32-accurate result (the type's unit roundoff: what sums in the type itself would miss),
// the float32 logsumexp within 1e-5, and two runs bitwise the same. The gradients' one input
// beyond the reference's is the forward's rounded out (Delta_v = <dOut_v, out_v>, as
// FlashAttention's backward reads it): against the float64 reference reading the same out, each
// is within one rounding (AGNN's dX two) plus the float32 backward's own tolerance
// (gradient_check.hpp), and against the exact reference within the contract (bf16 2e-2, f16
// 4e-3), both over the call's largest exact gradient. Graphs: the suite's shapes (empty rows, one node, no edges,
// self loops, a super node beyond shared memory, a batch, a power law) and a bipartite one (AGNN
// with X_dst);
// H x D of the suite, odd D included; edge values, dropout, the attention weights, edge
// features (GT's as edge columns too, one row for every head and a row per head); unaligned
// tensors (the scalar tile). Then the refusals: another strategy, a call of another type.
// Needs a CUDA device; skips otherwise.

#include "../expect_error.hpp"
#include "../graphs.hpp"
#include "../precision_checks.hpp"

#include <dfgnn/cuda.hpp>
#include <dfgnn/half.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace dfgnn;
using test::Precision;

void ok(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }

bool no_device() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0;
}

/// n elements of a two-byte type on the device, `offset` elements past a 16-byte boundary:
/// a copy of host floats (which must hold the type's values), or NaN to be overwritten.
class Device {
 public:
  Device(std::size_t n, DType t, int offset = 0) : n_(n), t_(t) {
    ok(cudaMalloc(&base_, (n + std::size_t(offset) + 1) * 2));
    p_ = base_ + offset;
    ok(cudaMemset(base_, 0xff, (n + std::size_t(offset) + 1) * 2));
  }
  Device(const std::vector<float>& host, DType t, int offset = 0) : Device(host.size(), t, offset) {
    std::vector<std::uint16_t> b(host.size());
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = to_bits(t, host[i]);
    ok(cudaMemcpy(p_, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
  }
  ~Device() { cudaFree(base_); }
  Device(const Device&) = delete;
  void* get() const { return n_ ? p_ : nullptr; }
  std::vector<float> host() const {
    std::vector<std::uint16_t> b(n_);
    ok(cudaMemcpy(b.data(), p_, n_ * 2, cudaMemcpyDeviceToHost));
    std::vector<float> r(n_);
    for (std::size_t i = 0; i < n_; ++i) r[i] = from_bits(t_, b[i]);
    return r;
  }
  std::vector<std::uint16_t> bits() const {
    std::vector<std::uint16_t> b(n_);
    ok(cudaMemcpy(b.data(), p_, n_ * 2, cudaMemcpyDeviceToHost));
    return b;
  }

 private:
  std::uint16_t* base_ = nullptr;
  std::uint16_t* p_ = nullptr;
  std::size_t n_;
  DType t_;
};

/// A float32 array on the device (the logsumexp).
class Floats {
 public:
  explicit Floats(std::size_t n) : n_(n) {
    ok(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * 4));
    ok(cudaMemset(p_, 0xff, std::max<std::size_t>(n, 1) * 4));
  }
  ~Floats() { cudaFree(p_); }
  Floats(const Floats&) = delete;
  float* get() const { return p_; }
  std::vector<float> host() const {
    std::vector<float> h(n_);
    ok(cudaMemcpy(h.data(), p_, n_ * 4, cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  float* p_ = nullptr;
  std::size_t n_;
};

const std::vector<test::NamedGraph>& graphs() {
  static const std::vector<test::NamedGraph> gs =
      test::two_byte_graphs({"bipartite", test::random_bipartite(4000, 1500, 3500, 1200, 30000, 5)});
  return gs;
}

/// What a case runs besides the inputs: edge values, dropout at `dropout` and the attention
/// weights (training), the model's edge argument (GT's as edge columns of `columns`' shape
/// where it has heads), tensors off the 16-byte boundary; the backward, in `order`.
struct Variant {
  bool training = false, edges = false, unaligned = false, backward = false;
  cuda::BackwardOrder order = cuda::BackwardOrder::Auto;
  float dropout = 0.25f;
  EdgeShape columns{};
};

void expect_matches(ScoreKind kind, const Precision& prec, const test::NamedGraph& named, int H, int D, Variant var,
                    unsigned seed, Strategy strategy = Strategy::Auto) {
  const HostGraph& g = named.graph;
  const DType t = prec.dtype;
  const cuda::Plan plan(g, kind, H, D, strategy, t);
  if (strategy == Strategy::Auto)  // Dense where its rule takes a batch, else Online
    ASSERT_TRUE(plan.strategy() == Strategy::Online || plan.strategy() == Strategy::Dense) << to_string(plan.strategy());
  else
    ASSERT_EQ(plan.strategy(), strategy);
  const Op& op = plan.op();
  const ModelArgs& m = model_args(kind);
  const int offset = var.unaligned ? 1 : 0;
  std::vector<std::vector<float>> host;
  std::vector<std::unique_ptr<Device>> in;
  for (int i = 0; i < m.count && !may_leave_out(op, i); ++i) {  // X_dst on bipartite graphs only
    const Extent x = m.inputs[i].extent;
    const std::size_t n = x == Extent::HeadVector ? std::size_t(H) : TensorRef::shaped(nullptr, op, x).entries();
    // GATv2's a [H, D] at 1/sqrt(D), as its layer initialises it: at 1, D = 512 gives scores of
    // ~10 whose near one-hot softmax cancels every score gradient (docs/design.md).
    const float a = x == Extent::HeadFeatures ? 1.f / std::sqrt(float(D)) : 1.f;
    host.push_back(x == Extent::HeadVector ? test::typed_values(n, t, seed + 1, 0.5f, 3.f)
                                           : test::typed_values(n, t, seed + unsigned(i), -a, a));
    in.push_back(std::make_unique<Device>(host.back(), t, offset));
  }
  const std::size_t E = std::size_t(g.num_edges()), rows = std::size_t(g.num_nodes) * H;
  const std::vector<float> w = var.training ? test::typed_values(E * H, t, seed + 7, 0.5f, 1.5f) : std::vector<float>();
  const std::vector<float> e =
      var.edges ? test::typed_values(test::edge_argument(op, var.columns).entries(), t, seed + 8) : std::vector<float>();
  Device dw(w, t), de(e, t), out(rows * D, t, offset), weights(var.training ? E * H : 0, t);
  Floats lse(var.training || var.backward ? rows : 0);
  cuda::Options o(cuda::DeviceEdgeValues{var.training ? dw.get() : nullptr, var.training ? H : 0});
  if (var.training || var.backward) o.logsumexp = lse.get();
  if (var.training) o.attention_weights = weights.get(), o.dropout = Dropout{var.dropout, 11};
  o.edge_features = var.edges ? de.get() : nullptr;
  o.edge_shape = var.columns;
  const float param = visit_model(kind, [](auto model) { return model.param(); });
  const void* ptrs[3] = {in[0]->get(), in[1]->get(), in.size() > 2 ? in[2]->get() : nullptr};
  const auto run = [&] {
    cuda::detail::attention(nullptr, plan, kind, param, t, ptrs, std::size_t(H), out.get(), o);
    ok(cudaDeviceSynchronize());
  };
  run();
  const std::vector<std::uint16_t> first = out.bits();
  const std::vector<float> first_lse = lse.host();
  run();
  EXPECT_EQ(first, out.bits()) << "two runs differ";
  EXPECT_TRUE(test::same_bits(first_lse, lse.host())) << "two runs differ";

  ReferenceOptions ro(HostEdgeValues{var.training ? w.data() : nullptr, var.training ? H : 0});
  std::vector<double> ref_lse, ref_weights;
  if (var.training) ro.dropout = o.dropout, ro.logsumexp = &ref_lse, ro.weights = &ref_weights;
  ro.edge_features = var.edges ? e.data() : nullptr;
  ro.edge_heads = var.columns.heads, ro.edge_width = var.columns.width;
  const std::vector<double> ref = test::reference_forward(kind, g, H, D, host, ro);
  const std::string where = std::string(to_string(t)) + " " + named.name + test::columns_name(var.columns);
  test::expect_forward(prec, where, out.host(), ref, lse.host(), ref_lse, weights.host(), ref_weights);
  if (!var.backward) return;

  // The backward from the forward's rounded out, into NaN-poisoned gradients, twice.
  const std::vector<float> dout = test::typed_values(rows * D, t, seed + 9);
  Device dy(dout, t, offset), dedge(e.size(), t);
  std::vector<std::unique_ptr<Device>> grads;
  void* gp[3] = {};
  for (std::size_t i = 0; i < host.size(); ++i)
    grads.push_back(std::make_unique<Device>(host[i].size(), t, offset)), gp[i] = grads.back()->get();
  o.edge_grad = var.edges ? dedge.get() : nullptr;
  o.backward_order = var.order;
  const auto back = [&] {
    cuda::detail::attention_backward(nullptr, plan, kind, param, t, ptrs, std::size_t(H), out.get(), lse.get(),
                                     dy.get(), gp, o);
    ok(cudaDeviceSynchronize());
  };
  back();
  std::vector<std::vector<std::uint16_t>> bits;
  for (const auto& d : grads) bits.push_back(d->bits());
  back();
  for (std::size_t i = 0; i < grads.size(); ++i) EXPECT_EQ(bits[i], grads[i]->bits()) << where << ": two runs differ";

  // AGNN's dX: each walk rounds its share.
  test::expect_gradients(kind, prec, where, g, H, D, host, dout, out.host(), ro,
                         test::host_values(grads, var.edges ? &dedge : nullptr), 2);
}

/// One case of the suites below: a model, a type, H x D and a graph (AGNN's X_dst on the
/// bipartite one only); skipped without a device.
class TwoByte : public ::testing::TestWithParam<test::TwoByteParam>, protected test::TwoByteCase {
 protected:
  TwoByte() : TwoByteCase(GetParam()) {}
  void SetUp() override {
    if (no_device()) GTEST_SKIP() << "no CUDA device";
  }
  const test::NamedGraph& named = graphs()[index];
};

class TwoByteForward : public TwoByte {};

TEST_P(TwoByteForward, MatchesFloat64ReferenceWithinOneRounding) {
  const unsigned seed = index * 31 + unsigned(D);
  expect_matches(kind, prec, named, H, D, {}, seed);
  // Training options, edge features and unaligned tensors on the graphs' first shapes.
  if (D > 64) return;
  expect_matches(kind, prec, named, H, D, {true, false, false}, seed + 1);
  if (kind != ScoreKind::AGNN) expect_matches(kind, prec, named, H, D, {false, true, false}, seed + 2);
  expect_matches(kind, prec, named, H, D, {false, false, true}, seed + 3);
  if (kind == ScoreKind::GT)
    for (const EdgeShape c : test::two_byte_columns(H, D))
      expect_matches(kind, prec, named, H, D, {false, true, false, false, {}, 0.25f, c}, seed + 4);
}

class TwoByteBackward : public TwoByte {};

TEST_P(TwoByteBackward, MatchesFloat64ReferenceOnTheRoundedOut) {
  const unsigned seed = index * 37 + unsigned(D);
  using Order = cuda::BackwardOrder;
  expect_matches(kind, prec, named, H, D, {false, false, false, true}, seed);
  // Training options, edge features, unaligned tensors and GT's two orders on the first shapes.
  if (D > 64) return;
  expect_matches(kind, prec, named, H, D, {true, false, false, true}, seed + 1);
  if (kind != ScoreKind::AGNN) expect_matches(kind, prec, named, H, D, {false, true, false, true}, seed + 2);
  expect_matches(kind, prec, named, H, D, {false, false, true, true}, seed + 3);
  if (kind != ScoreKind::GT) return;
  // The second column shape with edge values, dropout and unaligned tensors.
  const std::vector<EdgeShape> columns = test::two_byte_columns(H, D);
  expect_matches(kind, prec, named, H, D, {false, true, false, true, {}, 0.25f, columns[0]}, seed + 6);
  expect_matches(kind, prec, named, H, D, {true, true, true, true, {}, 0.25f, columns[1]}, seed + 7);
  expect_matches(kind, prec, named, H, D, {true, false, false, true, Order::RowsFirst}, seed + 4);
  expect_matches(kind, prec, named, H, D, {true, false, true, true, Order::ColumnsFirst}, seed + 5);
}

std::string name_of(const ::testing::TestParamInfo<test::TwoByteParam>& info) {
  return test::case_name(info.param, graphs()[std::size_t(std::get<3>(info.param))].name);
}

/// Both suites' cases, made when gtest registers them (after static initialisation: the graph
/// list's size is read then).
auto cases() {
  return ::testing::Combine(::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT, ScoreKind::GATv2),
                            ::testing::Bool(),
                            ::testing::Values(std::pair{1, 32}, std::pair{4, 16}, std::pair{8, 8}, std::pair{2, 64},
                                              std::pair{1, 7}, std::pair{3, 12}, std::pair{1, 128}, std::pair{2, 256},
                                              std::pair{1, 512}),
                            ::testing::Range(0, int(graphs().size())));
}
INSTANTIATE_TEST_SUITE_P(Models, TwoByteForward, cases(), name_of);
INSTANTIATE_TEST_SUITE_P(Models, TwoByteBackward, cases(), name_of);

const std::vector<test::NamedGraph>& dense_graphs() {
  static const std::vector<test::NamedGraph> gs = test::dense_batches();
  return gs;
}

/// Dense on its own batches (graphs.hpp): every score it computes, both types, the float32
/// Dense suite's shapes; plain, with the training options (edge values and dropout: the
/// edge-wise kernel; the attention weights) and the backward from its out and logsumexp, and
/// unaligned (Online's fallback).
class TwoByteDense : public ::testing::TestWithParam<test::TwoByteParam>, protected test::TwoByteCase {
 protected:
  TwoByteDense() : TwoByteCase(GetParam()) {}
  void SetUp() override {
    if (no_device()) GTEST_SKIP() << "no CUDA device";
  }
  const test::NamedGraph& named = dense_graphs()[index];
};

TEST_P(TwoByteDense, MatchesFloat64ReferenceWithinOneRounding) {
  const unsigned seed = index * 41 + unsigned(D);
  expect_matches(kind, prec, named, H, D, {}, seed, Strategy::Dense);
  expect_matches(kind, prec, named, H, D, {true, false, false, true}, seed + 1, Strategy::Dense);
  expect_matches(kind, prec, named, H, D, {false, false, true}, seed + 2, Strategy::Dense);
  // f16 cannot carry a dropout factor above 1000 through Dense's normalised P: such calls run
  // Online (attention.cuh, dense()).
  if (prec.dtype == DType::F16)
    expect_matches(kind, prec, named, H, D, {true, false, false, true, cuda::BackwardOrder::Auto, 0.9995f}, seed + 3,
                   Strategy::Dense);
}

std::string dense_name_of(const ::testing::TestParamInfo<test::TwoByteParam>& info) {
  return test::case_name(info.param, dense_graphs()[std::size_t(std::get<3>(info.param))].name);
}

INSTANTIATE_TEST_SUITE_P(Batches, TwoByteDense,
                         ::testing::Combine(::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT),
                                            ::testing::Bool(),
                                            ::testing::Values(std::pair{1, 128}, std::pair{4, 32}, std::pair{1, 32},
                                                              std::pair{8, 32}, std::pair{2, 64}, std::pair{3, 64}),
                                            ::testing::Range(0, 4)),
                         dense_name_of);

// Auto's rule takes Dense for two-byte batches by the float32 bars (docs/cuda.md, "Element types").
TEST(TwoByte, AutoPicksDenseOnPatternBatches) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  for (const DType t : {DType::BF16, DType::F16})
    for (const ScoreKind kind : {ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT})
      EXPECT_EQ(cuda::Plan(dense_graphs()[0].graph, kind, 1, 128, Strategy::Auto, t).strategy(), Strategy::Dense)
          << to_string(kind) << " " << to_string(t);
}

TEST(TwoByte, RefusedWhereNotRun) {
  if (no_device()) GTEST_SKIP() << "no CUDA device";
  const HostGraph g = test::random_graph(100, 600, 1);
  test::expect_error([&] { cuda::Plan(g, ScoreKind::GT, 2, 32, Strategy::SMMF, DType::BF16); },
                     {"cuda::Plan: the smmf strategy runs float32 tensors only; bf16 ones run Online or Dense "
                      "(Auto picks one)"});
  test::expect_error([&] { cuda::Plan(g, ScoreKind::GAT, 2, 32, Strategy::Staged, DType::F16); },
                     {"cuda::Plan: the staged strategy runs float32 tensors only; f16 ones run Online or Dense"});
  const cuda::Plan plan(g, ScoreKind::GT, 2, 32, Strategy::Auto, DType::BF16);
  const std::size_t n = std::size_t(g.num_nodes) * 2 * 32;
  const std::vector<float> x = test::typed_values(n, DType::BF16, 3);
  Device q(x, DType::BF16), k(x, DType::BF16), v(x, DType::BF16), out(n, DType::BF16);
  Floats lse(std::size_t(g.num_nodes) * 2), f(n);
  const auto* qb = static_cast<const bf16*>(q.get());
  const auto* kb = static_cast<const bf16*>(k.get());
  const auto* vb = static_cast<const bf16*>(v.get());
  auto* ob = static_cast<bf16*>(out.get());
  cuda::Options o;
  o.logsumexp = lse.get();
  cuda::attention(nullptr, plan, GT{}, {qb, kb, vb}, ob, o);  // the generic entry on bf16 pointers
  ok(cudaDeviceSynchronize());
  // A float32 call through a bf16 plan: the check names the first tensor.
  test::expect_error([&] { cuda::attention(nullptr, plan, GT{}, {f.get(), f.get(), f.get()}, f.get()); },
                     {"cuda::attention: Q is f32, expected bf16 (the plan's element type)"});
  // Rows above 256 elements need the 16-byte tile: a multiple of 8 two-byte elements.
  const cuda::Plan wide(g, ScoreKind::GT, 1, 260, Strategy::Auto, DType::F16);
  const std::size_t nw = std::size_t(g.num_nodes) * 260;
  Device w(test::typed_values(nw, DType::F16, 4), DType::F16), wo(nw, DType::F16);
  const auto* wf = static_cast<const f16*>(w.get());
  test::expect_error([&] { cuda::attention(nullptr, wide, GT{}, {wf, wf, wf}, static_cast<f16*>(wo.get())); },
                     {"cuda::attention: dim 260 above 256 needs 16-byte aligned tensors and a multiple of 8"});
}

}  // namespace
