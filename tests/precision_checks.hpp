#pragma once
// What the two-byte element type tests of both backends check (tests/test_precision.cpp, the
// portable kernels; tests/gpu/test_precision_cuda.cpp, the CUDA-native ones), against the
// float64 reference on the same rounded inputs (docs/design.md, "Element types").

#include "gradient_check.hpp"
#include "graphs.hpp"

#include <dfgnn/op.hpp>
#include <dfgnn/reference.hpp>
#include <dfgnn/reference_backward.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace dfgnn::test {

/// What a two-byte type promises: the contract's bound and its unit roundoff 2^-p (p bits of
/// precision), the largest relative error of one rounding to nearest.
struct Precision {
  DType dtype;
  double contract, unit;
};
inline constexpr Precision kBf16{DType::BF16, 1e-2, 1.0 / 256}, kF16{DType::F16, 2e-3, 1.0 / 2048};

/// The two-byte suites' graphs: test_graphs (its super node of 20000 edges beyond the portable
/// kernels' team scratch); the batch with every edge 8 times, whose rows of more than 16 edges
/// the CUDA walks cut into pieces (plan.cu's native_piece_edges on a graph this small), so that
/// many of AGNN's dbeta row sums cross merge_sums (docs/backward.md, "dbeta of a two-byte call":
/// without them its f16 dbeta misses the contract, as the batch's does); then `bipartite`.
inline std::vector<NamedGraph> two_byte_graphs(NamedGraph bipartite) {
  std::vector<NamedGraph> g = test_graphs(20000);
  g.push_back({"batch64_x8", repeated_edges(batch_of_small_graphs(64, 3), 8)});
  g.push_back(std::move(bipartite));
  return g;
}

/// GT's edge columns [E, heads, F] that the two-byte suites run at H x D (TransformerConv's form
/// under autocast): one row for every head on half the columns (whole 16-byte chunks where D
/// allows: the vector tiles), and a row per head on an odd count (the scalar tiles).
inline std::vector<EdgeShape> two_byte_columns(int H, int D) {
  return {{1, std::max(1, D / 2)}, {H, std::max(1, D / 2 - 1) | 1}};
}

/// The extents of op's edge argument: its model's, or edge columns of shape `columns` where it
/// has heads.
inline TensorRef edge_argument(const Op& op, const EdgeShape& columns) {
  TensorRef t = TensorRef::shaped(nullptr, op, model_args(op.kind).edge.extent);
  if (columns.heads) t.extents[1] = std::size_t(columns.heads), t.extents[2] = std::size_t(columns.width);
  return t;
}

/// How a case's message names its edge columns (empty for none).
inline std::string columns_name(const EdgeShape& c) {
  return c.heads ? " edge columns [E," + std::to_string(c.heads) + "," + std::to_string(c.width) + "]" : "";
}

/// Random values of the type (never zero), in [lo, hi].
inline std::vector<float> typed_values(std::size_t n, DType t, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::vector<float> v = random_values(n, seed, lo, hi);
  for (float& x : v) {
    x = rounded(t, x);
    if (x == 0.f) x = rounded(t, 0.5f);
  }
  return v;
}

/// Whether two runs' floats are bitwise the same (NaN included).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// The float64 forward of `kind` on its inputs `in` (model_args order; AGNN's X_dst where given,
/// else left out).
inline std::vector<double> reference_forward(ScoreKind kind, const HostGraph& g, int H, int D,
                                             const std::vector<std::vector<float>>& in, const ReferenceOptions& o) {
  return visit_model(kind, [&](auto model) {
    const float* third = in.size() > 2 ? in[2].data() : nullptr;
    if constexpr (decltype(model)::kind == ScoreKind::AGNN)
      return reference_attention(g, H, D, model, in[0].data(), in[1].data(), H, third, o);
    else
      return reference_attention(g, H, D, model, in[0].data(), in[1].data(), third, o);
  });
}

/// The float64 gradients of the inputs in model_args order (AGNN's dX_dst empty where X_dst is
/// left out), then the edge argument's (empty without one).
inline std::vector<std::vector<double>> reference_gradients(ScoreKind kind, const HostGraph& g, int H, int D,
                                                            const std::vector<std::vector<float>>& in,
                                                            const std::vector<float>& dout, const ReferenceOptions& o) {
  return visit_model(kind, [&](auto model) -> std::vector<std::vector<double>> {
    using Model = decltype(model);
    const float *d = dout.data(), *third = in.size() > 2 ? in[2].data() : nullptr;
    if constexpr (Model::kind == ScoreKind::AGNN)
      return by_position(reference_attention_backward(g, H, D, model, in[0].data(), in[1].data(), H, third, d, o));
    else
      return by_position(reference_attention_backward(g, H, D, model, in[0].data(), in[1].data(), third, d, o));
  });
}

/// The parameter of a two-byte case: model, f16 (else bf16), H x D, the graph's index.
using TwoByteParam = std::tuple<ScoreKind, bool, std::pair<int, int>, int>;

/// Its fields.
struct TwoByteCase {
  explicit TwoByteCase(const TwoByteParam& p)
      : kind(std::get<0>(p)), prec(std::get<1>(p) ? kF16 : kBf16), H(std::get<2>(p).first),
        D(std::get<2>(p).second), index(unsigned(std::get<3>(p))) {}
  ScoreKind kind;
  Precision prec;
  int H, D;
  unsigned index;
};

/// A case's test name: model, type, H x D and the name of its graph.
inline std::string case_name(const TwoByteParam& p, const std::string& graph) {
  const auto [H, D] = std::get<2>(p);
  return std::string(to_string(std::get<0>(p))) + (std::get<1>(p) ? "_f16" : "_bf16") + "_H" + std::to_string(H) +
         "D" + std::to_string(D) + "_" + graph;
}

/// The host values of a call's gradients (buffers with host()), then the edge argument's when
/// `edge` is given.
template <class Buffers, class Buffer>
std::vector<std::vector<float>> host_values(const Buffers& grads, const Buffer* edge) {
  std::vector<std::vector<float>> r;
  for (const auto& d : grads) r.push_back(d->host());
  if (edge) r.push_back(edge->host());
  return r;
}

/// One rounding of a float32-accurate result: at most the unit roundoff, relative to the
/// largest entry, and float32's own error besides.
inline double one_rounding(const Precision& p) { return p.unit * (1 + 1e-3) + 1e-5; }

/// out (and, with training options, the float32 logsumexp and the attention weights) against
/// the forward reference `ref` (ref_lse, ref_weights: empty when not compared).
inline void expect_forward(const Precision& p, const std::string& where, const std::vector<float>& out,
                           const std::vector<double>& ref, const std::vector<float>& lse,
                           const std::vector<double>& ref_lse, const std::vector<float>& weights,
                           const std::vector<double>& ref_weights) {
  const double err = max_relative_error(out.data(), ref);
  EXPECT_LE(err, p.contract) << where << " out";
  EXPECT_LE(err, one_rounding(p)) << where << " out";
  if (!ref_lse.empty()) EXPECT_LT(max_relative_error(lse.data(), ref_lse), 1e-5) << where << " logsumexp";
  if (!ref_weights.empty())
    EXPECT_LE(max_relative_error(weights.data(), ref_weights), one_rounding(p)) << where << " attention weights";
}

/// The gradients `got` (model_args order, then the edge argument's when `ro` has edge features)
/// of a backward from the forward's rounded out `out`: against the reference on that out within
/// one rounding (`dx_roundings` for AGNN's dX) plus the float32 backward's tolerance, against the
/// exact reference within the contract, both over the call's largest exact gradient (a gradient
/// that vanishes in exact arithmetic is all rounding, so its own largest entry is no scale).
/// AGNN's dbeta takes the rounding of out out of Delta (docs/backward.md, "dbeta of a two-byte
/// call"): it is held to the exact reference, within one rounding plus that tolerance.
inline void expect_gradients(ScoreKind kind, const Precision& p, const std::string& where, const HostGraph& g, int H,
                             int D, const std::vector<std::vector<float>>& in, const std::vector<float>& dout,
                             const std::vector<float>& out, ReferenceOptions ro,
                             const std::vector<std::vector<float>>& got, int dx_roundings) {
  const ModelArgs& m = model_args(kind);
  ro.logsumexp = nullptr, ro.weights = nullptr;
  const auto exact = reference_gradients(kind, g, H, D, in, dout, ro);
  double scale = 0;
  for (const auto& r : exact)
    for (double x : r) scale = std::max(scale, std::abs(x));
  ro.backward_out = out.data();
  const auto ref = reference_gradients(kind, g, H, D, in, dout, ro);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool edge = i == std::size_t(m.count), dbeta = kind == ScoreKind::AGNN && i == 1;
    const std::string name = edge ? std::string("d") + m.edge.name : m.gradients[i];
    const double tol = edge ? 1e-4 : gradient_tolerance(kind, i);
    const int roundings = kind == ScoreKind::AGNN && i == 0 ? dx_roundings : 1;
    EXPECT_LE(gradient_error(got[i], (dbeta ? exact : ref)[i], scale), roundings * p.unit * (1 + 1e-3) + tol)
        << where << " " << name;
    EXPECT_LE(gradient_error(got[i], exact[i], scale), 2 * p.contract) << where << " " << name << " (exact out)";
  }
}

}  // namespace dfgnn::test
