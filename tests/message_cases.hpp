#pragma once
// The g-SpMM / g-SDDMM cases every message-passing test walks (reference, Kokkos, CUDA-native):
// all messages and reduces, operand shapes broadcast along heads and/or features, and random
// operands bounded away from 0 (they are divisors).

#include "graphs.hpp"

#include <dfgnn/message.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace dfgnn {
// GoogleTest prints parameters with these (found by argument-dependent lookup).
inline void PrintTo(const Message& m, std::ostream* os) { *os << to_string(m); }
inline void PrintTo(Reduce r, std::ostream* os) { *os << to_string(r); }
inline void PrintTo(BinaryOp op, std::ostream* os) { *os << to_string(op); }
}  // namespace dfgnn

namespace dfgnn::test {

/// Whether an operand has all H heads and D features (true) or one, broadcast (false).
struct OperandShape {
  bool per_head = true, per_feature = true;
  int heads(int H) const { return per_head ? H : 1; }
  int dim(int D) const { return per_feature ? D : 1; }
};

/// Shapes of lhs and rhs; for a copy only lhs counts.
struct Broadcast {
  std::string name;
  OperandShape lhs, rhs;
};

inline const std::vector<Broadcast>& broadcasts() {
  static const std::vector<Broadcast> b{
      {"full", {true, true}, {true, true}},          // [.,H,D] both
      {"rhs_per_head", {true, true}, {true, false}},  // DGL's [E,H] edge weights
      {"rhs_scalar", {true, true}, {false, false}},   // DGL's [E] edge weights
      {"lhs_shared", {false, true}, {true, true}},    // one row shared by every head
      {"crossed", {true, false}, {false, true}},      // [.,H,1] against [.,1,D]
  };
  return b;
}

inline const std::vector<Message>& messages() {
  static const std::vector<Message> m = [] {
    std::vector<Message> all{Message::copy_u(), Message::copy_e()};
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div})
      all.push_back(Message::u_op_e(op)), all.push_back(Message::u_op_v(op));
    return all;
  }();
  return m;
}

inline const std::vector<Reduce>& reduces() {
  static const std::vector<Reduce> r{Reduce::Sum, Reduce::Mean, Reduce::Max, Reduce::Min};
  return r;
}

/// A host tensor [rows, heads, dim] of values in +-[0.5, 1.5]. On the grid of multiples of 1/8
/// (`exact`), messages of two values are exact in float32 or (quotients) far from each other,
/// so float32 kernels and the float64 reference see the same ties and pick the same max/min.
struct HostTensor {
  std::vector<float> data;
  int heads = 0, dim = 0;

  HostTensor() = default;
  HostTensor(std::size_t rows, int h, int d, unsigned seed, bool exact = false)
      : data(random_values(rows * h * d, seed, 0.5f, 1.5f)), heads(h), dim(d) {
    const std::vector<float> sign = random_values(data.size(), seed + 1000);
    for (std::size_t i = 0; i < data.size(); ++i) {
      if (exact) data[i] = std::round(data[i] * 8.0f) / 8.0f;
      if (sign[i] < 0) data[i] = -data[i];
    }
  }
  Operand operand() const { return heads ? Operand{data.data(), heads, dim} : Operand{}; }
};

inline std::size_t rows_of(Target t, const HostGraph& g) {
  return t == Target::E ? std::size_t(g.num_edges()) : std::size_t(g.num_nodes);
}

/// The operands of a g-SpMM with output [N,H,D]: rhs is empty for a copy.
struct SpmmOperands {
  HostTensor lhs, rhs;
  SpmmOperands(const HostGraph& g, const Message& m, const Broadcast& b, int H, int D, unsigned seed,
               bool exact = false)
      : lhs(rows_of(m.lhs, g), b.lhs.heads(H), b.lhs.dim(D), seed, exact) {
    if (!m.is_copy()) rhs = HostTensor(rows_of(m.rhs, g), b.rhs.heads(H), b.rhs.dim(D), seed + 1, exact);
  }
};

/// Float32 sums of n same-sign terms drift by up to about n/2 ulps, so the tolerance grows with
/// the longest sum: the edges of the busiest node (in or out) times the (h, d) entries broadcast
/// onto one output entry.
inline double tolerance(const HostGraph& g, std::size_t broadcast = 1) {
  const HostCsc t = transpose(g);
  edge_t busiest = g.stats.max;
  for (std::size_t u = 0; u + 1 < t.col_ptr.size(); ++u) busiest = std::max(busiest, t.col_ptr[u + 1] - t.col_ptr[u]);
  return std::max(1e-5, 6e-8 * double(busiest) * double(broadcast));
}

/// max |new id of u - new id of v| over the edges: what RCM keeps small.
inline edge_t bandwidth(const HostGraph& g, const std::vector<node_t>& position) {
  edge_t b = 0;
  for (edge_t e = 0; e < g.num_edges(); ++e)
    b = std::max<edge_t>(b, std::abs(position[g.src[e]] - position[g.dst[e]]));
  return b;
}

/// A rows x cols grid (edges both ways) with shuffled node ids.
inline HostGraph shuffled_grid(node_t rows, node_t cols, unsigned seed) {
  std::vector<node_t> id(std::size_t(rows) * cols), src, dst;
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = node_t(i);
  std::shuffle(id.begin(), id.end(), std::mt19937(seed));
  auto link = [&](node_t a, node_t b) {
    src.push_back(id[a]), dst.push_back(id[b]), src.push_back(id[b]), dst.push_back(id[a]);
  };
  for (node_t r = 0; r < rows; ++r)
    for (node_t c = 0; c < cols; ++c) {
      if (c + 1 < cols) link(r * cols + c, r * cols + c + 1);
      if (r + 1 < rows) link(r * cols + c, (r + 1) * cols + c);
    }
  return graph_from_edges(rows * cols, src, dst);
}

inline std::string case_name(const Message& m, Reduce r) { return to_string(m) + "_" + to_string(r); }

/// The graphs the kernel tests of both backends walk: the 3000-edge super node is beyond a
/// thread group's share of the edges on every backend, so it is split; small enough for the
/// sanitizer builds.
inline const std::vector<NamedGraph>& kernel_graphs() {
  static const auto gs = test_graphs(3000);
  return gs;
}

/// The kernel tests' parameters, over every graph of kernel_graphs(), and their names:
/// (message, reduce, graph) for g-SpMM, (operator, graph) for g-SDDMM.
using SpmmParam = std::tuple<Message, Reduce, int>;
using SddmmParam = std::tuple<BinaryOp, int>;

inline auto spmm_params() {
  return ::testing::Combine(::testing::ValuesIn(messages()), ::testing::ValuesIn(reduces()),
                            ::testing::Range(0, int(kernel_graphs().size())));
}

inline auto sddmm_params() {
  return ::testing::Combine(
      ::testing::Values(BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Dot),
      ::testing::Range(0, int(kernel_graphs().size())));
}

inline std::string spmm_name(const ::testing::TestParamInfo<SpmmParam>& info) {
  return case_name(std::get<0>(info.param), std::get<1>(info.param)) + "_" +
         kernel_graphs()[std::size_t(std::get<2>(info.param))].name;
}

inline std::string sddmm_name(const ::testing::TestParamInfo<SddmmParam>& info) {
  return std::string(to_string(std::get<0>(info.param))) + "_" +
         kernel_graphs()[std::size_t(std::get<1>(info.param))].name;
}

}  // namespace dfgnn::test
