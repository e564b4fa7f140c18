#include "reference_math.hpp"

#include <dfgnn/reference.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dfgnn {

namespace {

using namespace reference_math;

// out[v,h,:] = sum_e softmax_e(score(v,u,h,x) * w) * dropout_e * (value(u,h,:) + message(x,h,:)),
// in float64; x is the edge's caller index, `message` GT's edge features (null: none).
template <class Score>
std::vector<double> attend(const HostGraph& g, int H, int D, const float* values,
                           const ReferenceOptions& options, Score score, const float* message = nullptr) {
  const HostEdgeValues w = options.edge_values;
  std::vector<double> out(std::size_t(g.num_nodes) * H * D, 0.0);
  if (options.logsumexp) options.logsumexp->assign(std::size_t(g.num_nodes) * H, 0.0);
  if (options.weights) options.weights->assign(std::size_t(g.num_edges()) * H, 0.0);
  std::vector<double> s;
  for (node_t v = 0; v < g.num_nodes; ++v) {
    const edge_t e0 = g.row_ptr[v], deg = g.row_ptr[v + 1] - e0;
    if (deg == 0) continue;
    s.resize(std::size_t(deg));
    for (int h = 0; h < H; ++h) {
      for (edge_t i = 0; i < deg; ++i) {
        const edge_t e = e0 + i;
        s[i] = score(v, g.src[e], h, g.edge_id[e]);
        if (w.data) s[i] *= w.data[g.edge_id[e] * w.heads + (w.heads == 1 ? 0 : h)];
      }
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - m));
      if (options.logsumexp) (*options.logsumexp)[std::size_t(v) * H + h] = m + std::log(sum);
      double* o = &out[(std::size_t(v) * H + h) * D];
      for (edge_t i = 0; i < deg; ++i) {
        const float* x = values + (std::size_t(g.src[e0 + i]) * H + h) * D;
        const float* m = message ? message + (std::size_t(g.edge_id[e0 + i]) * H + h) * D : nullptr;
        const double p = s[i] / sum * options.dropout.factor(g.edge_id[e0 + i], h);
        if (options.weights) (*options.weights)[std::size_t(g.edge_id[e0 + i]) * H + h] = p;
        for (int d = 0; d < D; ++d) o[d] += p * (double(x[d]) + (m ? m[d] : 0.0));
      }
    }
  }
  return out;
}

}  // namespace

std::vector<double> reference_attention(const HostGraph& g, int H, int D, const GT& model,
                                        const float* Q, const float* K, const float* V,
                                        const ReferenceOptions& options) {
  check_arguments("reference_attention", g, H, D, {Q, K, V}, options);
  const double scale = model.scale_for<double>(D);
  const std::vector<float> rows = edge_rows(options, g.num_edges(), H, D);
  const float* E = options.edge_features ? rows.data() : nullptr;
  auto row = [&](const float* t, std::size_t n, int h) { return t + (n * H + h) * D; };
  return attend(g, H, D, V, options, [&](node_t v, node_t u, int h, edge_t x) {
    const double key = dot(row(Q, v, h), row(K, u, h), D);
    return scale * (E ? key + dot(row(Q, v, h), row(E, x, h), D) : key);
  }, E);
}

std::vector<double> reference_attention(const HostGraph& g, int H, int D, const AGNN& model,
                                        const float* X, const float* beta, int beta_count,
                                        const ReferenceOptions& options) {
  return reference_attention(g, H, D, model, X, beta, beta_count, nullptr, options);
}

std::vector<double> reference_attention(const HostGraph& g, int H, int D, const AGNN&,
                                        const float* X, const float* beta, int beta_count, const float* X_dst,
                                        const ReferenceOptions& options) {
  if (!X_dst && g.bipartite() && g.num_nodes > 0)  // as the dispatch: left out where it has no rows
    throw Error("reference_attention: AGNN on a bipartite graph needs X_dst (X stands in for it on a square graph only)");
  const float* Y = X_dst ? X_dst : X;
  check_arguments("reference_attention", g, H, D, {X, beta, Y}, options);
  if (options.edge_features) throw Error("reference_attention: AGNN takes no edge features");
  if (beta_count != 1 && beta_count != H)
    throw Error("reference_attention: beta_count is " + std::to_string(beta_count) + ", expected 1 or H");
  auto row = [&](const float* x, node_t n, int h) { return x + (std::size_t(n) * H + h) * D; };
  return attend(g, H, D, X, options, [&](node_t v, node_t u, int h, edge_t) {
    const double nv = std::sqrt(dot(row(Y, v, h), row(Y, v, h), D));
    const double nu = std::sqrt(dot(row(X, u, h), row(X, u, h), D));
    const double cos = nv > 0 && nu > 0 ? dot(row(Y, v, h), row(X, u, h), D) / (nv * nu) : 0.0;
    return double(beta[beta_count == 1 ? 0 : h]) * cos;
  });
}

std::vector<double> reference_attention(const HostGraph& g, int H, int D, const GAT& model,
                                        const float* el, const float* er, const float* V,
                                        const ReferenceOptions& options) {
  check_arguments("reference_attention", g, H, D, {el, er, V}, options);
  const float* ee = options.edge_features;
  return attend(g, H, D, V, options, [&](node_t v, node_t u, int h, edge_t x) {
    const double z = double(el[std::size_t(u) * H + h]) + er[std::size_t(v) * H + h];
    return leaky_relu(ee ? z + ee[std::size_t(x) * H + h] : z, model.slope);
  });
}

std::vector<double> reference_attention(const HostGraph& g, int H, int D, const GATv2& model,
                                        const float* XL, const float* XR, const float* a,
                                        const ReferenceOptions& options) {
  check_arguments("reference_attention", g, H, D, {XL, XR, a}, options);
  const float* E = options.edge_features;
  return attend(g, H, D, XL, options, [&](node_t v, node_t u, int h, edge_t x) {
    const float* l = XL + (std::size_t(u) * H + h) * D;
    const float* r = XR + (std::size_t(v) * H + h) * D;
    const float* e = E ? E + (std::size_t(x) * H + h) * D : nullptr;
    double acc = 0;
    for (int d = 0; d < D; ++d)
      acc += double(a[h * D + d]) * leaky_relu(double(l[d]) + r[d] + (e ? e[d] : 0.0), model.slope);
    return acc;
  });
}

double max_relative_error(const float* out, const std::vector<double>& ref) {
  double scale = std::numeric_limits<double>::min(), err = 0;
  for (double r : ref) scale = std::max(scale, std::abs(r));
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(out[i])) return std::numeric_limits<double>::infinity();
    err = std::max(err, std::abs(double(out[i]) - ref[i]));
  }
  return err / scale;
}

}  // namespace dfgnn
