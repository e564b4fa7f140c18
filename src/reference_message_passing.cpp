#include <dfgnn/reference_message_passing.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace dfgnn {

namespace {

using detail::Extents;

std::size_t rows(Target t, const HostGraph& g) {
  return t == Target::E ? std::size_t(g.num_edges()) : std::size_t(g.num_nodes);
}

Extents extents(const char* name, const Operand& t, std::size_t rows) {
  return {name, t.data, rows, std::size_t(t.heads), std::size_t(t.dim)};
}

Extents result(const char* name, const std::vector<double>& t, std::size_t rows, int H, int D) {
  return {name, t.data(), rows, std::size_t(H), std::size_t(D), sizeof(double)};
}

// Entry (h, d) of row `row` of t, broadcast along its axes of extent 1.
std::size_t index(const Operand& t, std::size_t row, int h, int d) {
  return (row * std::size_t(t.heads) + std::size_t(t.heads == 1 ? 0 : h)) * std::size_t(t.dim) +
         std::size_t(t.dim == 1 ? 0 : d);
}
double at(const Operand& t, std::size_t row, int h, int d) { return t.data[index(t, row, h, d)]; }

// The row of CSR edge e in a tensor on target t.
std::size_t row_of(Target t, const HostGraph& g, edge_t e) {
  switch (t) {
    case Target::U: return std::size_t(g.src[e]);
    case Target::E: return std::size_t(g.edge_id[e]);
    default: return std::size_t(g.dst[e]);
  }
}

// The graph and the widths every reference takes.
void check_shape(const char* who, const HostGraph& g, int H, int D) {
  validate(g);
  if (H < 1 || D < 1)
    throw Error(std::string(who) + ": H and D must be >= 1, got H = " + std::to_string(H) + ", D = " + std::to_string(D));
}

bool is_extreme(Reduce r) { return r == Reduce::Max || r == Reduce::Min; }

// 1/sqrt(max(1, degree)) of every node's in-degree (CSR rows) and out-degree (sources).
struct GcnScales {
  std::vector<double> in, out;
  explicit GcnScales(const HostGraph& g) : in(std::size_t(g.num_nodes)), out(std::size_t(g.num_nodes)) {
    std::vector<edge_t> sent(std::size_t(g.num_nodes), 0);
    for (node_t u : g.src) ++sent[std::size_t(u)];
    for (node_t v = 0; v < g.num_nodes; ++v) {
      in[v] = 1.0 / std::sqrt(double(std::max<edge_t>(1, g.row_ptr[v + 1] - g.row_ptr[v])));
      out[v] = 1.0 / std::sqrt(double(std::max<edge_t>(1, sent[v])));
    }
  }
};

}  // namespace

std::vector<double> reference_gspmm(const HostGraph& g, const Message& m, Reduce r, int H, int D, const Operand& lhs,
                                    const Operand& rhs, std::vector<edge_t>* arg) {
  constexpr const char* who = "reference_gspmm";
  check_shape(who, g, H, D);
  const std::size_t N = std::size_t(g.num_nodes);
  std::vector<double> out(N * H * D, 0.0);
  std::vector<edge_t> args;
  if (is_extreme(r)) args.assign(out.size(), -1);
  detail::check_gspmm(who, g.num_nodes, g.num_edges(), m, r, extents("lhs", lhs, rows(m.lhs, g)),
                      extents("rhs", rhs, rows(m.rhs, g)), result("out", out, N, H, D), {"arg", nullptr, 0, 0, 0});
  auto message = [&](edge_t e, int h, int d) {
    const double a = at(lhs, row_of(m.lhs, g, e), h, d);
    return m.is_copy() ? a : binary(m.op, a, at(rhs, row_of(m.rhs, g, e), h, d));
  };
  for (node_t v = 0; v < g.num_nodes; ++v) {
    const edge_t e0 = g.row_ptr[v], e1 = g.row_ptr[v + 1];
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < D; ++d) {
        const std::size_t o = (std::size_t(v) * H + h) * D + d;
        if (!is_extreme(r)) {
          double acc = 0;
          for (edge_t e = e0; e < e1; ++e) acc += message(e, h, d);
          out[o] = r == Reduce::Mean && e1 > e0 ? acc / double(e1 - e0) : acc;
          continue;
        }
        edge_t win = -1;
        double best = 0;
        for (edge_t e = e0; e < e1; ++e) {
          const double x = message(e, h, d);
          if (win < 0 || (r == Reduce::Max ? x > best : x < best)) best = x, win = e;
        }
        out[o] = best;
        args[o] = win < 0 ? -1 : g.edge_id[win];
      }
  }
  if (arg) *arg = std::move(args);
  return out;
}

GspmmGradients reference_gspmm_backward(const HostGraph& g, const Message& m, Reduce r, int H, int D,
                                        const Operand& lhs, const Operand& rhs, const edge_t* arg,
                                        const float* dout) {
  constexpr const char* who = "reference_gspmm_backward";
  check_shape(who, g, H, D);
  const std::size_t N = std::size_t(g.num_nodes);
  const bool extreme = is_extreme(r);
  const Extents args = extreme ? Extents{"arg", arg, N, std::size_t(H), std::size_t(D), sizeof(edge_t)}
                               : Extents{"arg", nullptr, 0, 0, 0};
  detail::check_gspmm_backward(who, g.num_nodes, g.num_edges(), m, r, extents("lhs", lhs, rows(m.lhs, g)),
                               extents("rhs", rhs, rows(m.rhs, g)), args,
                               {"dout", dout, N, std::size_t(H), std::size_t(D)}, {"dlhs", nullptr, 0, 0, 0},
                               {"drhs", nullptr, 0, 0, 0});
  GspmmGradients grad;
  grad.dlhs.assign(rows(m.lhs, g) * lhs.heads * lhs.dim, 0.0);
  if (!m.is_copy()) grad.drhs.assign(rows(m.rhs, g) * rhs.heads * rhs.dim, 0.0);
  for (node_t v = 0; v < g.num_nodes; ++v) {
    const edge_t e0 = g.row_ptr[v], e1 = g.row_ptr[v + 1];
    const double scale = r == Reduce::Mean ? 1.0 / double(e1 - e0) : 1.0;
    for (edge_t e = e0; e < e1; ++e) {
      const std::size_t l = row_of(m.lhs, g, e);
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d) {
          const std::size_t o = (std::size_t(v) * H + h) * D + d;
          if (extreme && arg[o] != g.edge_id[e]) continue;  // only the winning message has a gradient
          const double dm = scale * dout[o];
          if (m.is_copy()) {
            grad.dlhs[index(lhs, l, h, d)] += dm;
            continue;
          }
          const std::size_t k = row_of(m.rhs, g, e);
          const double a = at(lhs, l, h, d), b = at(rhs, k, h, d);
          grad.dlhs[index(lhs, l, h, d)] += dm * binary_dlhs(m.op, a, b);
          grad.drhs[index(rhs, k, h, d)] += dm * binary_drhs(m.op, a, b);
        }
    }
  }
  return grad;
}

namespace {

// The checks of both g-SDDMM references; out is [E,H,1] for dot, whose D must be x's and y's.
void check_sddmm_width(const char* who, BinaryOp op, int D, std::size_t checked) {
  if (op == BinaryOp::Dot && checked != std::size_t(D))
    throw Error(std::string(who) + ": x and y have dim " + std::to_string(checked) + ", expected D = " +
                std::to_string(D));
}

}  // namespace

std::vector<double> reference_gsddmm(const HostGraph& g, BinaryOp op, int H, int D, const Operand& x,
                                     const Operand& y) {
  constexpr const char* who = "reference_gsddmm";
  check_shape(who, g, H, D);
  const bool dot = op == BinaryOp::Dot;
  const int width = dot ? 1 : D;
  const std::size_t N = std::size_t(g.num_nodes), E = std::size_t(g.num_edges());
  std::vector<double> out(E * H * width, 0.0);
  check_sddmm_width(who, op, D,
                    detail::check_gsddmm(who, g.num_nodes, g.num_edges(), op, extents("x", x, N),
                                         extents("y", y, N), result("out", out, E, H, width)));
  for (edge_t e = 0; e < g.num_edges(); ++e) {
    const std::size_t u = std::size_t(g.src[e]), v = std::size_t(g.dst[e]), row = std::size_t(g.edge_id[e]);
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < D; ++d) {
        const double term = binary(op, at(x, u, h, d), at(y, v, h, d));
        if (dot)
          out[row * H + h] += term;
        else
          out[(row * H + h) * D + d] = term;
      }
  }
  return out;
}

GsddmmGradients reference_gsddmm_backward(const HostGraph& g, BinaryOp op, int H, int D, const Operand& x,
                                          const Operand& y, const float* dout) {
  constexpr const char* who = "reference_gsddmm_backward";
  check_shape(who, g, H, D);
  const bool dot = op == BinaryOp::Dot;
  const int width = dot ? 1 : D;
  const std::size_t N = std::size_t(g.num_nodes), E = std::size_t(g.num_edges());
  check_sddmm_width(who, op, D,
                    detail::check_gsddmm_backward(who, g.num_nodes, g.num_edges(), op, extents("x", x, N),
                                                  extents("y", y, N),
                                                  {"dout", dout, E, std::size_t(H), std::size_t(width)},
                                                  {"dx", nullptr, 0, 0, 0}, {"dy", nullptr, 0, 0, 0}));
  GsddmmGradients grad{std::vector<double>(N * x.heads * x.dim), std::vector<double>(N * y.heads * y.dim)};
  for (edge_t e = 0; e < g.num_edges(); ++e) {
    const std::size_t u = std::size_t(g.src[e]), v = std::size_t(g.dst[e]), row = std::size_t(g.edge_id[e]);
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < D; ++d) {
        const double a = at(x, u, h, d), b = at(y, v, h, d);
        const double de = dout[(row * H + h) * width + (dot ? 0 : d)];
        grad.dx[index(x, u, h, d)] += de * binary_dlhs(op, a, b);
        grad.dy[index(y, v, h, d)] += de * binary_drhs(op, a, b);
      }
  }
  return grad;
}

std::vector<double> reference_gcn_aggregate(const HostGraph& g, int H, int D, const float* x) {
  constexpr const char* who = "reference_gcn_aggregate";
  check_shape(who, g, H, D);
  const std::size_t N = std::size_t(g.num_nodes), W = std::size_t(H) * D;
  std::vector<double> out(N * W, 0.0);
  detail::check_node_map(who, g.num_nodes, {"x", x, N, std::size_t(H), std::size_t(D)}, result("out", out, N, H, D));
  const GcnScales s(g);
  for (edge_t e = 0; e < g.num_edges(); ++e) {
    const std::size_t u = std::size_t(g.src[e]), v = std::size_t(g.dst[e]);
    for (std::size_t k = 0; k < W; ++k) out[v * W + k] += s.out[u] * s.in[v] * x[u * W + k];
  }
  return out;
}

std::vector<double> reference_gcn_aggregate_backward(const HostGraph& g, int H, int D, const float* dout) {
  constexpr const char* who = "reference_gcn_aggregate_backward";
  check_shape(who, g, H, D);
  const std::size_t N = std::size_t(g.num_nodes), W = std::size_t(H) * D;
  std::vector<double> dx(N * W, 0.0);
  detail::check_node_map(who, g.num_nodes, {"dout", dout, N, std::size_t(H), std::size_t(D)}, result("dx", dx, N, H, D));
  const GcnScales s(g);
  for (edge_t e = 0; e < g.num_edges(); ++e) {
    const std::size_t u = std::size_t(g.src[e]), v = std::size_t(g.dst[e]);
    for (std::size_t k = 0; k < W; ++k) dx[u * W + k] += s.out[u] * s.in[v] * dout[v * W + k];
  }
  return dx;
}

}  // namespace dfgnn
