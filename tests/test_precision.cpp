// Two-byte element types (bf16, f16; half.hpp) on the portable kernels through the Kokkos API:
// every model's forward (Online, Auto's pick for them) and backward against the float64
// reference on the same rounded inputs, as tests/gpu/test_precision_cuda.cpp holds the CUDA-native
// ones. The output must be within the accuracy contract (normwise relative error: bf16 1e-2,
// f16 2e-3) and within one rounding of a float32-accurate result (the type's unit roundoff: what
// sums in the type itself would miss), the float32 logsumexp within 1e-5, the attention weights
// within one rounding, and two runs bitwise the same. The gradients read the forward's rounded
// out (Delta_v = <dOut_v, out_v>): against the float64 reference on that out each is within one
// rounding plus the float32 backward's own tolerance (gradient_check.hpp), against the exact
// reference within the contract (bf16 2e-2, f16 4e-3), both over the call's largest exact
// gradient. Graphs: the suite's shapes (empty rows, one node, no edges, self loops, a super node
// beyond the team scratch, a batch, a power law) and a bipartite one; H x D of the suite, odd D
// included; edge values, dropout, attention weights, edge features (GT's as edge columns too,
// one row for every head and a row per head); tensors one element off
// their alignment (W = 1). Then the refusals: another strategy, a call of another type.

#include "expect_error.hpp"
#include "graphs.hpp"
#include "precision_checks.hpp"

#include <dfgnn/backward.hpp>
#include <dfgnn/detail/strategy.hpp>
#include <dfgnn/half.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace dfgnn;
using test::Precision;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

/// n elements of T in the execution space's memory, `offset` elements past the allocation's
/// start: a copy of host floats (which hold T's values), or NaN to be overwritten.
template <class T>
class Tensor {
 public:
  Tensor(const std::vector<float>& host, int offset = 0)
      : all_("tensor", host.size() + std::size_t(offset) + 1), offset_(std::size_t(offset)), n_(host.size()) {
    const auto m = Kokkos::create_mirror_view(all_);
    for (std::size_t i = 0; i < m.size(); ++i) m(i) = from_float<T>(std::numeric_limits<float>::quiet_NaN());
    for (std::size_t i = 0; i < n_; ++i) m(offset_ + i) = from_float<T>(host[i]);
    Kokkos::deep_copy(all_, m);
  }
  Tensor(std::size_t n, int offset = 0)
      : Tensor(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()), offset) {}

  T* data() const { return n_ ? all_.data() + offset_ : nullptr; }
  /// A View of the tensor with these extents (rank 1 to 3).
  template <class... Extents>
  auto view(Extents... e) const {
    using Data = std::conditional_t<sizeof...(e) == 1, T*, std::conditional_t<sizeof...(e) == 2, T**, T***>>;
    return Kokkos::View<Data, Kokkos::LayoutRight, Mem>(data(), std::size_t(e)...);
  }
  /// The view shaped as `shape` (TensorRef::shaped's extents) as the call's tensor.
  TensorRef ref(const TensorRef& shape) const {
    const std::size_t* x = shape.extents;
    switch (shape.rank) {
      case 1: return detail::tensor_ref(view(x[0]));
      case 2: return detail::tensor_ref(view(x[0], x[1]));
      default: return detail::tensor_ref(view(x[0], x[1], x[2]));
    }
  }
  std::vector<float> host() const {
    const auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), all_);
    std::vector<float> r(n_);
    for (std::size_t i = 0; i < n_; ++i) r[i] = to_float(m(offset_ + i));
    return r;
  }

 private:
  Kokkos::View<T*, Mem> all_;
  std::size_t offset_, n_;
};

const std::vector<test::NamedGraph>& graphs() {
  static const std::vector<test::NamedGraph> gs =
      test::two_byte_graphs({"bipartite", test::random_bipartite(400, 150, 350, 120, 3000, 5)});
  return gs;
}

/// What a case runs besides the inputs: edge values, dropout and the attention weights
/// (training), the model's edge argument (GT's as edge columns of `columns`' shape where it has
/// heads), tensors off their alignment; the backward.
struct Variant {
  bool training = false, edges = false, unaligned = false, backward = false;
  EdgeShape columns{};
};

template <class T>
void expect_matches(ScoreKind kind, const Precision& prec, const test::NamedGraph& named, int H, int D, Variant var,
                    unsigned seed) {
  const HostGraph& g = named.graph;
  const DType t = prec.dtype;
  const Exec exec;
  const Plan<Exec> plan(exec, Graph<Mem>(g), kind, H, D, t);
  ASSERT_EQ(plan.strategy(), Strategy::Online);
  const Op& op = plan.op();
  const ModelArgs& m = model_args(kind);
  const int offset = var.unaligned ? 1 : 0;
  std::vector<std::vector<float>> host;
  std::vector<std::unique_ptr<Tensor<T>>> in;
  Tensors inputs;
  for (int i = 0; i < m.count && !may_leave_out(op, i); ++i) {  // X_dst on bipartite graphs only
    const Extent x = m.inputs[i].extent;
    const TensorRef shape = TensorRef::shaped(nullptr, op, x, std::size_t(H));
    // GATv2's a [H, D] at 1/sqrt(D), as its layer initialises it (docs/design.md).
    const float a = x == Extent::HeadFeatures ? 1.f / std::sqrt(float(D)) : 1.f;
    host.push_back(x == Extent::HeadVector ? test::typed_values(shape.entries(), t, seed + 1, 0.5f, 3.f)
                                           : test::typed_values(shape.entries(), t, seed + unsigned(i), -a, a));
    in.push_back(std::make_unique<Tensor<T>>(host.back(), offset));
    inputs.refs[inputs.count++] = in.back()->ref(shape);
  }
  const std::size_t E = std::size_t(g.num_edges()), N = std::size_t(g.num_nodes);
  const TensorRef edge_shape = test::edge_argument(op, var.columns);
  const std::vector<float> w = var.training ? test::typed_values(E * H, t, seed + 7, 0.5f, 1.5f) : std::vector<float>();
  const std::vector<float> e = var.edges ? test::typed_values(edge_shape.entries(), t, seed + 8) : std::vector<float>();
  Tensor<T> dw(w), de(e, offset), out(N * H * D, offset), weights(var.training ? E * H : 0);
  if (var.edges) inputs.refs[inputs.count++] = de.ref(edge_shape);
  Options<Mem, T> o;
  if (var.training) o.edge_values = dw.view(E, std::size_t(H));
  if (var.training || var.backward) o.logsumexp = decltype(o.logsumexp)("lse", N, std::size_t(H));
  if (var.training) o.attention_weights = weights.view(E, std::size_t(H)), o.dropout = Dropout{0.25f, 11};
  const auto out_view = out.view(N, std::size_t(H), std::size_t(D));
  const auto lse_host = [&] {
    const auto l = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), o.logsumexp);
    return std::vector<float>(l.data(), l.data() + l.size());
  };
  const auto run = [&] {
    visit_model(kind, [&](auto model) { attention(exec, plan, model, inputs, out_view, o); });
    exec.fence();
  };
  run();
  const std::vector<float> first = out.host(), first_lse = lse_host();
  run();
  EXPECT_TRUE(test::same_bits(first, out.host())) << "two runs differ";
  EXPECT_TRUE(test::same_bits(first_lse, lse_host())) << "two runs differ";

  ReferenceOptions ro(HostEdgeValues{var.training ? w.data() : nullptr, var.training ? H : 0});
  std::vector<double> ref_lse, ref_weights;
  if (var.training) ro.dropout = o.dropout, ro.logsumexp = &ref_lse, ro.weights = &ref_weights;
  ro.edge_features = var.edges ? e.data() : nullptr;
  ro.edge_heads = var.columns.heads, ro.edge_width = var.columns.width;
  const std::vector<double> ref = test::reference_forward(kind, g, H, D, host, ro);
  const std::string where = std::string(to_string(t)) + " " + named.name + test::columns_name(var.columns);
  test::expect_forward(prec, where, out.host(), ref, lse_host(), ref_lse, weights.host(), ref_weights);
  if (!var.backward) return;

  // The backward from the forward's rounded out, into NaN-poisoned gradients, twice.
  const std::vector<float> dout = test::typed_values(N * H * D, t, seed + 9);
  Tensor<T> dy(dout, offset), dedge(e.size(), offset);
  std::vector<std::unique_ptr<Tensor<T>>> grads;
  Tensors grad_refs;
  for (int i = 0; i < int(host.size()); ++i) {
    grads.push_back(std::make_unique<Tensor<T>>(host[std::size_t(i)].size(), offset));
    grad_refs.refs[grad_refs.count++] = grads.back()->ref(inputs.refs[i]);
  }
  if (var.edges) grad_refs.refs[grad_refs.count++] = dedge.ref(edge_shape);
  const auto back = [&] {
    visit_model(kind, [&](auto model) {
      attention_backward(exec, plan, model, inputs, out_view, o.logsumexp, dy.view(N, std::size_t(H), std::size_t(D)),
                         grad_refs, o);
    });
    exec.fence();
  };
  back();
  std::vector<std::vector<float>> once;
  for (const auto& d : grads) once.push_back(d->host());
  back();
  for (std::size_t i = 0; i < grads.size(); ++i)
    EXPECT_TRUE(test::same_bits(once[i], grads[i]->host())) << where << ": two runs differ";

  test::expect_gradients(kind, prec, where, g, H, D, host, dout, out.host(), ro,
                         test::host_values(grads, var.edges ? &dedge : nullptr), 1);
}

/// One case: a model, a type, H x D and a graph (AGNN's X_dst on the bipartite one only).
class TwoByte : public ::testing::TestWithParam<test::TwoByteParam>, protected test::TwoByteCase {
 protected:
  TwoByte() : TwoByteCase(GetParam()) {}
  void expect(Variant v, unsigned seed) const {
    if (prec.dtype == DType::F16)
      expect_matches<f16>(kind, prec, named, H, D, v, seed);
    else
      expect_matches<bf16>(kind, prec, named, H, D, v, seed);
  }
  const test::NamedGraph& named = graphs()[index];
};

TEST_P(TwoByte, ForwardWithinOneRounding) {
  const unsigned seed = index * 31 + unsigned(D);
  expect({}, seed);
  expect({true, false, false}, seed + 1);
  if (kind != ScoreKind::AGNN) expect({false, true, false}, seed + 2);
  expect({false, false, true}, seed + 3);
  if (kind == ScoreKind::GT)
    for (const EdgeShape c : test::two_byte_columns(H, D)) expect({false, true, false, false, c}, seed + 4);
}

TEST_P(TwoByte, BackwardOnTheRoundedOut) {
  const unsigned seed = index * 37 + unsigned(D);
  expect({false, false, false, true}, seed);
  expect({true, false, false, true}, seed + 1);
  if (kind != ScoreKind::AGNN) expect({false, true, false, true}, seed + 2);
  expect({false, false, true, true}, seed + 3);
  if (kind == ScoreKind::GT) {  // the second shape with edge values, dropout and unaligned tensors
    const std::vector<EdgeShape> columns = test::two_byte_columns(H, D);
    expect({false, true, false, true, columns[0]}, seed + 4);
    expect({true, true, true, true, columns[1]}, seed + 5);
  }
}

std::string name_of(const ::testing::TestParamInfo<test::TwoByteParam>& info) {
  return test::case_name(info.param, graphs()[std::size_t(std::get<3>(info.param))].name);
}

INSTANTIATE_TEST_SUITE_P(Models, TwoByte,
                         ::testing::Combine(::testing::Values(ScoreKind::GT, ScoreKind::AGNN, ScoreKind::GAT,
                                                              ScoreKind::GATv2),
                                            ::testing::Bool(),
                                            ::testing::Values(std::pair{1, 32}, std::pair{4, 16}, std::pair{3, 7},
                                                              std::pair{1, 128}),
                                            ::testing::Range(0, int(graphs().size()))),
                         name_of);

// The one rule of both backends: a two-byte type keeps a strategy its backend runs on it (the
// portable one Online; the CUDA-native one Online and Dense), Auto resolves to Online where that
// is all, and another strategy is an Error naming what runs.
TEST(TwoByteRefusals, ElementStrategyRule) {
  const unsigned portable = detail::strategy_bit(Strategy::Online);
  const unsigned native = portable | detail::strategy_bit(Strategy::Dense);
  EXPECT_EQ(detail::element_strategy("p", Strategy::SMMF, DType::F32, portable), Strategy::SMMF);
  EXPECT_EQ(detail::element_strategy("p", Strategy::Auto, DType::BF16, portable), Strategy::Online);
  EXPECT_EQ(detail::element_strategy("p", Strategy::Auto, DType::F16, native), Strategy::Auto);
  EXPECT_EQ(detail::element_strategy("p", Strategy::Dense, DType::F16, native), Strategy::Dense);
  EXPECT_EQ(detail::element_strategy("p", Strategy::Online, DType::BF16, portable), Strategy::Online);
  test::expect_error([&] { detail::element_strategy("p", Strategy::Dense, DType::BF16, portable); },
                     {"p: the dense strategy runs float32 tensors only; bf16 ones run Online (Auto picks it)"});
  test::expect_error([&] { detail::element_strategy("p", Strategy::Staged, DType::F16, native); },
                     {"p: the staged strategy runs float32 tensors only; f16 ones run Online or Dense (Auto picks "
                      "one)"});
}

TEST(TwoByteRefusals, OtherStrategiesAndTypes) {
  const HostGraph g = test::random_graph(100, 600, 1);
  const Exec exec;
  // The portable backend's refusal (on Kokkos::Cuda with the native kernels, Auto picks those,
  // whose two-byte strategies include Dense).
  for (Strategy s : {Strategy::SMMF, Strategy::PMF, Strategy::Unfused})
    test::expect_error([&] { Plan<Exec>(exec, Graph<Mem>(g), ScoreKind::GT, 2, 32, DType::BF16, s, Backend::Portable); },
                       {std::string("plan: the ") + to_string(s) + " strategy runs float32 tensors only; bf16 ones run "
                        "Online (Auto picks it)"});
  const Plan<Exec> plan(exec, Graph<Mem>(g), ScoreKind::GT, 2, 32, DType::BF16);
  const std::size_t N = 100;
  Tensor<float> f(N * 64);
  const auto x = f.view(N, std::size_t(2), std::size_t(32));
  Tensor<bf16> b(test::typed_values(N * 64, DType::BF16, 3)), out(N * 64);
  const auto y = b.view(N, std::size_t(2), std::size_t(32));
  // A float32 call through a bf16 plan: the check names the first tensor of another type.
  test::expect_error([&] { attention(exec, plan, GT{}, x, x, x, x); },
                     {"attention: Q is f32, expected bf16 (the plan's element type)"});
  test::expect_error([&] { attention(exec, plan, GT{}, tensors(y, y, x), out.view(N, std::size_t(2), std::size_t(32))); },
                     {"attention: V is f32, expected bf16 (the plan's element type)"});
}

}  // namespace
