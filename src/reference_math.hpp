#pragma once
// Scalar helpers shared by the float64 references (reference.cpp, reference_backward.cpp), so
// the backward differentiates exactly the scores the forward evaluates.

#include <dfgnn/csr.hpp>
#include <dfgnn/reference.hpp>

#include <cmath>
#include <initializer_list>
#include <string>

namespace dfgnn::reference_math {

/// Throws Error (prefixed `who`) if an input is null that the call reads (`read`).
inline void check_present(const char* who, bool read, std::initializer_list<const float*> inputs) {
  for (const float* p : inputs)
    if (!p && read) throw Error(std::string(who) + ": an input is null");
}

/// Throws Error (prefixed `who`) unless the arguments are usable: a valid graph, H and D >= 1,
/// every input present (unless there are no edges to read it for), edge values of 1 or H heads, a dropout
/// rate in [0, 1).
inline void check_arguments(const char* who, const HostGraph& g, int H, int D,
                            std::initializer_list<const float*> inputs, const ReferenceOptions& o) {
  const auto fail = [&](const std::string& what) { throw Error(std::string(who) + ": " + what); };
  validate(g);
  if (H < 1 || D < 1) fail("H and D must be >= 1, got " + std::to_string(H) + " and " + std::to_string(D));
  check_present(who, g.num_edges() > 0, inputs);
  const HostEdgeValues& w = o.edge_values;
  if (w.data && w.heads != 1 && w.heads != H)
    fail("edge values for " + std::to_string(w.heads) + " heads, expected 1 or H = " + std::to_string(H));
  if (!(o.dropout.rate >= 0.0f && o.dropout.rate < 1.0f))
    fail("dropout rate " + std::to_string(o.dropout.rate) + " is outside [0, 1)");
}

inline double leaky_relu(double x, double slope) { return x > 0 ? x : slope * x; }
/// The derivative, taking the slope at 0 like the `x > 0` branch above.
inline double leaky_relu_grad(double x, double slope) { return x > 0 ? 1.0 : slope; }

inline double dot(const float* a, const float* b, int D) {
  double acc = 0;
  for (int d = 0; d < D; ++d) acc += double(a[d]) * double(b[d]);
  return acc;
}

}  // namespace dfgnn::reference_math
