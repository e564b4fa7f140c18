#pragma once
// Scalar helpers shared by the float64 references (reference.cpp, reference_backward.cpp), so
// the backward differentiates exactly the scores the forward evaluates.

#include <dfgnn/types.hpp>

#include <cmath>

namespace dfgnn::reference_math {

inline double leaky_relu(double x, double slope) { return x > 0 ? x : slope * x; }
/// The derivative, taking the slope at 0 like the `x > 0` branch above.
inline double leaky_relu_grad(double x, double slope) { return x > 0 ? 1.0 : slope; }

inline double dot(const float* a, const float* b, int D) {
  double acc = 0;
  for (int d = 0; d < D; ++d) acc += double(a[d]) * double(b[d]);
  return acc;
}

/// GT's score scale: the model's, or 1/sqrt(D) by default.
inline double dot_scale(const GT& model, int D) { return model.scale != 0 ? model.scale : 1.0 / std::sqrt(double(D)); }

}  // namespace dfgnn::reference_math
