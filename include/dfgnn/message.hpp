#pragma once
/// \file message.hpp
/// Vocabulary of generalized message passing, shared by the Kokkos entries
/// (message_passing.hpp), the CUDA-native ones (cuda_message_passing.hpp) and the float64
/// reference (reference_message_passing.hpp). Kokkos-free.
///
/// g-SpMM:  out[v,h,d] = reduce over edges e = u -> v of message(u, e, v)[h,d], the message one
///          of copy_u (x_u), copy_e (w_e), u_OP_e (x_u OP w_e), u_OP_v (x_u OP y_v), OP in
///          add, sub, mul, div; reduce one of sum, mean, max, min. A node without in-edges gets 0.
/// g-SDDMM: out[e,h,:] = OP(x_u[h,:], y_v[h,:]) for every edge e = u -> v, OP in add, sub, mul,
///          div or dot (the sum over d of the products: out is [E,H,1]).
///
/// Every tensor is row-major float32 [rows, heads, dim]: rows are N for node operands and E for
/// edge operands (edges in the caller's order, as given to graph_from_edges). The output fixes
/// H and D; an operand's heads is 1 or H and its dim 1 or D, and an axis of extent 1 is
/// broadcast (numpy rules). So DGL's edge shapes [E], [E,H] and [E,H,D] are [E,1,1], [E,H,1]
/// and [E,H,D] here.

#include <dfgnn/detail/host_device.hpp>
#include <dfgnn/types.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>

namespace dfgnn {

/// The binary operator of a message or an SDDMM; Dot is SDDMM only.
enum class BinaryOp { Add, Sub, Mul, Div, Dot };

/// How g-SpMM combines the messages arriving at a node.
enum class Reduce { Sum, Mean, Max, Min };

/// Where an operand lives: on the source node (U), the edge (E), the destination node (V).
enum class Target { None, U, E, V };

/// The message of g-SpMM: copy_u, copy_e, u_OP_e or u_OP_v.
struct Message {
  Target lhs = Target::U;      ///< U, or E for copy_e
  Target rhs = Target::None;   ///< None (a copy), E or V
  BinaryOp op = BinaryOp::Add;  ///< used when rhs is not None

  static constexpr Message copy_u() { return {Target::U, Target::None, BinaryOp::Add}; }
  static constexpr Message copy_e() { return {Target::E, Target::None, BinaryOp::Add}; }
  static constexpr Message u_op_e(BinaryOp op) { return {Target::U, Target::E, op}; }
  static constexpr Message u_op_v(BinaryOp op) { return {Target::U, Target::V, op}; }
  bool is_copy() const { return rhs == Target::None; }
};

const char* to_string(BinaryOp op);
const char* to_string(Reduce r);
/// "copy_u", "copy_e", "u_mul_e", "u_sub_v", ...
std::string to_string(const Message& m);
/// Parse the names above (case-insensitive); throw Error listing the accepted ones otherwise.
BinaryOp parse_binary_op(const std::string& s);
Reduce parse_reduce(const std::string& s);
Message parse_message(const std::string& s);

/// a OP b for add, sub, mul, div; Dot's per-feature term is the product. The same expression in
/// the reference (double) and every kernel (float).
template <class T>
DFGNN_HOST_DEVICE inline T binary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Div: return a / b;
    default: return a * b;
  }
}
/// d(a OP b) / da.
template <class T>
DFGNN_HOST_DEVICE inline T binary_dlhs(BinaryOp op, T a, T b) {
  (void)a;
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub: return T(1);
    case BinaryOp::Div: return T(1) / b;
    default: return b;
  }
}
/// d(a OP b) / db.
template <class T>
DFGNN_HOST_DEVICE inline T binary_drhs(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::Add: return T(1);
    case BinaryOp::Sub: return T(-1);
    case BinaryOp::Div: return -a / (b * b);
    default: return a;
  }
}

/// A tensor [rows, heads, dim] given by pointer: host memory for the reference, device memory
/// for the CUDA-native entries. rows is implied by the target (N or E). heads = 0 means absent.
struct Operand {
  const float* data = nullptr;
  int heads = 0;
  int dim = 0;
};

namespace detail {

/// What the argument checks of every entry see of a tensor: its extents and bytes. A tensor
/// is absent when it has no data and heads = dim = 0 (a default-constructed Kokkos View).
struct Extents {
  const char* name;
  const void* data;
  std::size_t rows, heads, dim;
  std::size_t element_bytes = sizeof(float);

  bool present() const { return data != nullptr || heads != 0 || dim != 0; }
  std::size_t bytes() const { return rows * heads * dim * element_bytes; }
};

/// The checks of a g-SpMM forward (`who` starts every message). out is [N,H,D]; lhs and rhs
/// as the message says (rhs absent for a copy); arg, when present, [N,H,D] edge indices and
/// only with max/min. Outputs must not overlap inputs or each other.
void check_gspmm(const char* who, node_t N, edge_t E, const Message& m, Reduce r, const Extents& lhs,
                 const Extents& rhs, const Extents& out, const Extents& arg);
/// The checks of a g-SpMM backward: the forward's tensors (out's shape from dout), arg needed
/// by max/min, each present gradient shaped like its operand (dlhs needs lhs, drhs rhs).
void check_gspmm_backward(const char* who, node_t N, edge_t E, const Message& m, Reduce r, const Extents& lhs,
                          const Extents& rhs, const Extents& arg, const Extents& dout, const Extents& dlhs,
                          const Extents& drhs);
/// The checks of a g-SDDMM: x and y [N, 1|H, 1|D], out [E,H,D], or [E,H,1] for dot (D is then
/// the larger dim of x and y). Returns D.
std::size_t check_gsddmm(const char* who, node_t N, edge_t E, BinaryOp op, const Extents& x, const Extents& y,
                         const Extents& out);
/// The checks of a g-SDDMM backward: dout shaped like the forward's out, dx like x, dy like y.
std::size_t check_gsddmm_backward(const char* who, node_t N, edge_t E, BinaryOp op, const Extents& x,
                                  const Extents& y, const Extents& dout, const Extents& dx, const Extents& dy);
/// The checks of a node-to-node map (gcn_aggregate, its backward, permute_nodes): x and out
/// [N,H,D], disjoint.
void check_node_map(const char* who, node_t N, const Extents& x, const Extents& out);

/// Throws Error (prefixed `who`) for a graph of 2^32 or more edges: the CUDA message-passing
/// kernels index an edge operand's rows in 32 bits (message_passing.cuh, Access::at); the
/// portable kernels index in 64.
void check_edge_rows(const char* who, edge_t edges);

/// No written tensor shares a byte with a read one or another written one.
void check_disjoint(const char* who, std::initializer_list<Extents> written, std::initializer_list<Extents> read);

}  // namespace detail

}  // namespace dfgnn
