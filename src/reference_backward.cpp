#include "reference_math.hpp"

#include <dfgnn/reference_backward.hpp>

#include <cmath>

namespace dfgnn {

namespace {

using namespace reference_math;

// reference_attention's output, its row statistics landing in `lse`.
template <class Forward>
std::vector<double> forward(const ReferenceOptions& options, std::vector<double>& lse, Forward run) {
  ReferenceOptions o = options;
  o.logsumexp = &lse;
  return run(o);
}

// The loss is sum(out * dOut). Per edge e = (u -> v) of caller index x, head h, with
// s_e = score(v,u,h,x) * w_e: p_e = exp(s_e - lse_v), q_e = p_e keep_e, out_v = sum_e q_e m_e with
// the message m_e = value_u (+ message_x: GT's edge features), hence dvalue_u += q_e dOut_v (and
// dmessage_x likewise) and, through the softmax, dr_e = dLoss/dscore =
// w_e p_e (keep_e <dOut_v, m_e> - <dOut_v, out_v>), handed to grad(v, u, h, x, dr_e).
template <class Score, class Grad>
void backprop(const HostGraph& g, int H, int D, const float* values, const float* dOut,
              const std::vector<double>& out, const std::vector<double>& lse, const ReferenceOptions& options,
              std::vector<double>& dvalues, Score score, Grad grad, const float* message = nullptr,
              std::vector<double>* dmessage = nullptr) {
  const HostEdgeValues w = options.edge_values;
  for (node_t v = 0; v < g.num_nodes; ++v)
    for (int h = 0; h < H; ++h) {
      const std::size_t vh = std::size_t(v) * H + h;
      const float* dout = dOut + vh * D;
      double delta = 0;
      for (int d = 0; d < D; ++d)
        delta += dout[d] * (options.backward_out ? double(options.backward_out[vh * D + d]) : out[vh * D + d]);
      for (edge_t e = g.row_ptr[v]; e < g.row_ptr[v + 1]; ++e) {
        const node_t u = g.src[e];
        const edge_t x = g.edge_id[e];
        const double we = w.data ? w.data[x * w.heads + (w.heads == 1 ? 0 : h)] : 1.0;
        const double p = std::exp(score(v, u, h, x) * we - lse[vh]);
        const double keep = options.dropout.factor(x, h);
        const std::size_t uh = std::size_t(u) * H + h, xh = std::size_t(x) * H + h;
        const float* m = message ? message + xh * D : nullptr;
        double dq = 0;  // <dOut_v, the message>
        for (int d = 0; d < D; ++d) {
          dvalues[uh * D + d] += p * keep * dout[d];
          if (dmessage) (*dmessage)[xh * D + d] += p * keep * dout[d];
          dq += dout[d] * (double(values[uh * D + d]) + (m ? m[d] : 0.0));
        }
        grad(v, u, h, x, we * p * (keep * dq - delta));
      }
    }
}

}  // namespace

GTGradients reference_attention_backward(const HostGraph& g, int H, int D, const GT& model, const float* Q,
                                         const float* K, const float* V, const float* dOut,
                                         const ReferenceOptions& options) {
  check_present("reference_attention_backward", g.num_nodes > 0, {dOut});  // the forward checks the rest
  std::vector<double> lse;
  const auto out = forward(options, lse, [&](const ReferenceOptions& o) {
    return reference_attention(g, H, D, model, Q, K, V, o);
  });
  const double scale = model.scale_for<double>(D);
  const std::vector<float> rows = edge_rows(options, g.num_edges(), H, D);
  const float* E = options.edge_features ? rows.data() : nullptr;
  auto at = [&](std::size_t n, int h) { return (n * H + h) * D; };
  const std::size_t dst = std::size_t(g.num_nodes) * H * D, src = std::size_t(g.num_src_nodes) * H * D;
  GTGradients r{std::vector<double>(dst), std::vector<double>(src), std::vector<double>(src),
                std::vector<double>(E ? std::size_t(g.num_edges()) * H * D : 0)};
  backprop(
      g, H, D, V, dOut, out, lse, options, r.dV,
      [&](node_t v, node_t u, int h, edge_t x) {
        const double key = dot(Q + at(v, h), K + at(u, h), D);
        return scale * (E ? key + dot(Q + at(v, h), E + at(x, h), D) : key);
      },
      [&](node_t v, node_t u, int h, edge_t x, double dr) {
        for (int d = 0; d < D; ++d) {
          r.dQ[at(v, h) + d] += scale * dr * (double(K[at(u, h) + d]) + (E ? E[at(x, h) + d] : 0.0));
          r.dK[at(u, h) + d] += scale * dr * Q[at(v, h) + d];
          if (E) r.dE[at(x, h) + d] += scale * dr * Q[at(v, h) + d];
        }
      },
      E, E ? &r.dE : nullptr);
  if (E) r.dE = edge_columns_grad(options, r.dE, g.num_edges(), H, D);
  return r;
}

AGNNGradients reference_attention_backward(const HostGraph& g, int H, int D, const AGNN& model, const float* X,
                                           const float* beta, int beta_count, const float* dOut,
                                           const ReferenceOptions& options) {
  return reference_attention_backward(g, H, D, model, X, beta, beta_count, nullptr, dOut, options);
}

// X_dst null: left out, X is both ends', and its gradient takes the destination-side terms too.
AGNNGradients reference_attention_backward(const HostGraph& g, int H, int D, const AGNN& model, const float* X,
                                           const float* beta, int beta_count, const float* X_dst, const float* dOut,
                                           const ReferenceOptions& options) {
  check_present("reference_attention_backward", g.num_nodes > 0, {dOut});  // the forward checks the rest
  std::vector<double> lse;
  const auto out = forward(options, lse, [&](const ReferenceOptions& o) {
    return reference_attention(g, H, D, model, X, beta, beta_count, X_dst, o);
  });
  const float* Y = X_dst ? X_dst : X;
  auto at = [&](node_t n, int h) { return (std::size_t(n) * H + h) * D; };
  // inv[n,h] = 1/|x[n,h]|, 0 for a zero vector (whose cosine the forward takes as 0).
  const auto inverse_norms = [&](const float* x, node_t n) {
    std::vector<double> inv(std::size_t(n) * H);
    for (node_t i = 0; i < n; ++i)
      for (int h = 0; h < H; ++h) {
        const double norm = std::sqrt(dot(x + at(i, h), x + at(i, h), D));
        inv[std::size_t(i) * H + h] = norm > 0 ? 1.0 / norm : 0.0;
      }
    return inv;
  };
  const std::vector<double> inv_u = inverse_norms(X, g.num_src_nodes), inv_v = inverse_norms(Y, g.num_nodes);
  auto b = [&](int h) { return double(beta[beta_count == 1 ? 0 : h]); };
  auto cosine = [&](node_t v, node_t u, int h) {
    return dot(Y + at(v, h), X + at(u, h), D) * inv_v[std::size_t(v) * H + h] * inv_u[std::size_t(u) * H + h];
  };
  AGNNGradients r{std::vector<double>(std::size_t(g.num_src_nodes) * H * D),
                  std::vector<double>(std::size_t(beta_count)),
                  std::vector<double>(X_dst ? std::size_t(g.num_nodes) * H * D : 0)};
  std::vector<double>& dY = X_dst ? r.dX_dst : r.dX;
  backprop(
      g, H, D, X, dOut, out, lse, options, r.dX, [&](node_t v, node_t u, int h, edge_t) { return b(h) * cosine(v, u, h); },
      [&](node_t v, node_t u, int h, edge_t, double dr) {
        // d cos / d y_v = n_v n_u x_u - cos n_v^2 y_v, and symmetrically for x_u.
        const double nv = inv_v[std::size_t(v) * H + h], nu = inv_u[std::size_t(u) * H + h], c = cosine(v, u, h);
        for (int d = 0; d < D; ++d) {
          const double yv = Y[at(v, h) + d], xu = X[at(u, h) + d];
          dY[at(v, h) + d] += b(h) * dr * (nv * nu * xu - c * nv * nv * yv);
          r.dX[at(u, h) + d] += b(h) * dr * (nv * nu * yv - c * nu * nu * xu);
        }
        r.dbeta[beta_count == 1 ? 0 : h] += dr * c;
      });
  return r;
}

GATGradients reference_attention_backward(const HostGraph& g, int H, int D, const GAT& model, const float* el,
                                          const float* er, const float* V, const float* dOut,
                                          const ReferenceOptions& options) {
  check_present("reference_attention_backward", g.num_nodes > 0, {dOut});  // the forward checks the rest
  std::vector<double> lse;
  const auto out = forward(options, lse, [&](const ReferenceOptions& o) {
    return reference_attention(g, H, D, model, el, er, V, o);
  });
  const float* ee = options.edge_features;
  auto z = [&](node_t v, node_t u, int h, edge_t x) {
    const double t = double(el[std::size_t(u) * H + h]) + er[std::size_t(v) * H + h];
    return ee ? t + ee[std::size_t(x) * H + h] : t;
  };
  const std::size_t src = std::size_t(g.num_src_nodes) * H;
  GATGradients r{std::vector<double>(src), std::vector<double>(std::size_t(g.num_nodes) * H),
                 std::vector<double>(src * D), std::vector<double>(ee ? std::size_t(g.num_edges()) * H : 0)};
  backprop(
      g, H, D, V, dOut, out, lse, options, r.dV,
      [&](node_t v, node_t u, int h, edge_t x) { return leaky_relu(z(v, u, h, x), model.slope); },
      [&](node_t v, node_t u, int h, edge_t x, double dr) {
        const double dz = dr * leaky_relu_grad(z(v, u, h, x), model.slope);
        r.del[std::size_t(u) * H + h] += dz;
        r.der[std::size_t(v) * H + h] += dz;
        if (ee) r.dee[std::size_t(x) * H + h] += dz;
      });
  return r;
}

GATv2Gradients reference_attention_backward(const HostGraph& g, int H, int D, const GATv2& model, const float* XL,
                                            const float* XR, const float* a, const float* dOut,
                                            const ReferenceOptions& options) {
  check_present("reference_attention_backward", g.num_nodes > 0, {dOut});  // the forward checks the rest
  std::vector<double> lse;
  const auto out = forward(options, lse, [&](const ReferenceOptions& o) {
    return reference_attention(g, H, D, model, XL, XR, a, o);
  });
  const float* E = options.edge_features;
  auto at = [&](std::size_t n, int h) { return (n * H + h) * D; };
  auto z = [&](node_t v, node_t u, int h, edge_t x, int d) {
    const double t = double(XL[at(u, h) + d]) + XR[at(v, h) + d];
    return E ? t + E[at(x, h) + d] : t;
  };
  GATv2Gradients r{std::vector<double>(std::size_t(g.num_src_nodes) * H * D),
                   std::vector<double>(std::size_t(g.num_nodes) * H * D), std::vector<double>(std::size_t(H) * D),
                   std::vector<double>(E ? std::size_t(g.num_edges()) * H * D : 0)};
  backprop(
      g, H, D, XL, dOut, out, lse, options, r.dXL,
      [&](node_t v, node_t u, int h, edge_t x) {
        double acc = 0;
        for (int d = 0; d < D; ++d) acc += a[h * D + d] * leaky_relu(z(v, u, h, x, d), model.slope);
        return acc;
      },
      [&](node_t v, node_t u, int h, edge_t x, double dr) {
        for (int d = 0; d < D; ++d) {
          const double zd = z(v, u, h, x, d);
          const double dz = dr * a[h * D + d] * leaky_relu_grad(zd, model.slope);
          r.dXR[at(v, h) + d] += dz;
          r.dXL[at(u, h) + d] += dz;
          if (E) r.dE[at(x, h) + d] += dz;
          r.da[std::size_t(h) * D + d] += dr * leaky_relu(zd, model.slope);
        }
      });
  return r;
}

}  // namespace dfgnn
