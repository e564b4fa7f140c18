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

/// GT's edge argument as [E,H,D] rows (ReferenceOptions): edge columns [E, 1 or H, F] widened,
/// zeros before each head's last F columns and the one row copied to every head. Empty without
/// edge features.
inline std::vector<float> edge_rows(const ReferenceOptions& o, edge_t E, int H, int D) {
  if (!o.edge_features) return {};
  const int heads = o.edge_heads ? o.edge_heads : H, F = o.edge_width ? o.edge_width : D;
  if ((heads != 1 && heads != H) || F < 1 || F > D)
    throw Error("reference: edge columns [E," + std::to_string(heads) + "," + std::to_string(F) +
                "], expected [E,1 or H,F] with F <= D = " + std::to_string(D));
  std::vector<float> rows(std::size_t(E) * H * D, 0.0f);
  for (edge_t x = 0; x < E; ++x)
    for (int h = 0; h < H; ++h)
      for (int f = 0; f < F; ++f)
        rows[(std::size_t(x) * H + h) * D + (D - F) + f] =
            o.edge_features[(std::size_t(x) * heads + (heads == 1 ? 0 : h)) * F + f];
  return rows;
}

/// The gradient of edge_rows' input from that of its rows: the last F columns, summed over the
/// heads where one row serves them all.
inline std::vector<double> edge_columns_grad(const ReferenceOptions& o, const std::vector<double>& rows, edge_t E,
                                             int H, int D) {
  const int heads = o.edge_heads ? o.edge_heads : H, F = o.edge_width ? o.edge_width : D;
  std::vector<double> g(std::size_t(E) * heads * F, 0.0);
  for (edge_t x = 0; x < E; ++x)
    for (int h = 0; h < H; ++h)
      for (int f = 0; f < F; ++f)
        g[(std::size_t(x) * heads + (heads == 1 ? 0 : h)) * F + f] += rows[(std::size_t(x) * H + h) * D + (D - F) + f];
  return g;
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
