#pragma once
// How the backward tests compare gradients with the float64 reference (Kokkos and CUDA suites).

#include <dfgnn/reference.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

namespace dfgnn::test {

/// The gradients of a model, in its traits' order (the inputs').
inline std::vector<const char*> gradient_names(ScoreKind kind) {
  return visit_model(kind, [](auto model) {
    const auto& g = decltype(model)::args.gradients;
    return std::vector<const char*>(std::begin(g), std::end(g));
  });
}

/// max |got - ref| over `scale` (infinity for a NaN in got), unless `scale` holds only float64
/// rounding (a gradient that is zero in exact arithmetic: the score gradients of a graph whose
/// rows have one edge each, whose softmax is constant): then the fp32 rounding left, absolutely.
inline double gradient_error(const std::vector<float>& got, const std::vector<double>& ref, double scale) {
  double err = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return std::numeric_limits<double>::infinity();
    err = std::max(err, std::abs(double(got[i]) - ref[i]));
  }
  return scale > 1e-12 ? err / scale : err;
}

/// The same over the gradient's own largest entry.
inline double gradient_error(const std::vector<float>& got, const std::vector<double>& ref) {
  double scale = 0;
  for (double r : ref) scale = std::max(scale, std::abs(r));
  return gradient_error(got, ref, scale);
}

/// 1e-4, but 1e-3 for the parameter gradients (dbeta, da, listed last): they sum terms over
/// all edges that largely cancel (a row's softmax-gradient terms sum to zero), so fp32 rounding
/// of the terms, relative to the sum, exceeds 1e-4 on the super node with a shared beta (2e-4
/// from the forward's statistics, 1e-4 even from float64-exact ones rounded to fp32).
inline double gradient_tolerance(ScoreKind kind, std::size_t gradient) {
  const bool parameter = (kind == ScoreKind::AGNN && gradient == 1) || (kind == ScoreKind::GATv2 && gradient == 2);
  return parameter ? 1e-3 : 1e-4;
}

}  // namespace dfgnn::test
