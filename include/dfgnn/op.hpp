#pragma once
/// \file op.hpp
/// The op description every entry hands to the dispatch (docs/design.md, "Layers"): what a
/// plan is built for (Op), each model's arguments (model_args), and one forward or backward
/// call on bare pointers (Call). Free of Kokkos and CUDA: the Kokkos API, the CUDA C++ API, the
/// C ABI and the CLI all describe their calls with it, and the backends' executors read it.
///
/// Widening an op (an element type, bipartite graphs, per-edge inputs) extends these types,
/// the one check (dispatch.hpp) and the executors, not every entry.

#include <dfgnn/dropout.hpp>
#include <dfgnn/half.hpp>
#include <dfgnn/types.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace dfgnn {

/// The element type of an op's tensors (half.hpp's storage types for the two-byte ones): every
/// tensor of a call has it but the logsumexp, which is float32 always. Sums, the softmax
/// statistics included, are float32 whatever it is (docs/design.md, "Element types").
enum class DType { F32, BF16, F16 };

/// Calls f(T{}) with the C++ type of t: float, or half.hpp's bf16 or f16 (the backends
/// instantiate their kernels per element type).
template <class F>
void with_element(DType t, F&& f) {
  switch (t) {
    case DType::BF16: return f(bf16{});
    case DType::F16: return f(f16{});
    case DType::F32: break;
  }
  f(float{});
}

/// The DType of the C++ element type T (with_element's inverse).
template <class T>
constexpr DType dtype_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>,
                "tensors are float, bf16 or f16");
  return std::is_same_v<T, float> ? DType::F32 : std::is_same_v<T, bf16> ? DType::BF16 : DType::F16;
}

/// Bytes of one element.
inline std::size_t size_of(DType t) { return t == DType::F32 ? 4 : 2; }

/// "f32", "bf16", "f16": the CLI's --dtype names.
const char* to_string(DType t);
/// The DType of such a name; Error for another.
DType parse_dtype(const std::string& text);

/// x in the two-byte type t (BF16 or F16), rounded to nearest even (half.hpp), and back: what
/// a host's floats become in a tensor of that type (the CLI's --dtype, the tests' inputs).
inline std::uint16_t to_bits(DType t, float x) { return t == DType::BF16 ? to_bf16(x).bits : to_f16(x).bits; }
inline float from_bits(DType t, std::uint16_t bits) {
  return t == DType::BF16 ? to_float(bf16{bits}) : to_float(f16{bits});
}
/// x rounded to the nearest value of type t (x itself for F32).
inline float rounded(DType t, float x) { return t == DType::F32 ? x : from_bits(t, to_bits(t, x)); }

/// Which walk of the backward recomputes the scores (docs/backward.md, "Two orders"): RowsFirst
/// (GT, AGNN, GATv2) or ColumnsFirst (GT, GAT; fewer gathered rows per edge, plus a pass over
/// dOut and out). Auto: GAT columns first, GT columns first from a mean in-degree of 52, else
/// rows first. The CUDA-native backend honours it (an order the score kind does not have throws
/// Error); the portable one has its own.
enum class BackwardOrder { Auto, RowsFirst, ColumnsFirst };

/// What a plan is built for: the model's score, the element type, H heads of D features, and
/// the graph's sides: sources (the nodes messages come from) and destinations (the rows that
/// aggregate them), equal in number for now, and its edges.
struct Op {
  ScoreKind kind = ScoreKind::GT;
  DType dtype = DType::F32;
  int heads = 1, dim = 1;
  node_t src_nodes = 0, dst_nodes = 0;
  edge_t edges = 0;
};

/// The arguments of `kind`'s model (its traits' `args`, types.hpp): GT (Q, K, V; scale), AGNN
/// (X, beta, optional X_dst), GAT (el, er, V; slope), GATv2 (XL, XR, a; slope).
const ModelArgs& model_args(ScoreKind kind);

/// Whether argument i of op's model may be left out: an optional one (ArgSpec::stand_in) whose
/// stand-in has its shape in op (AGNN's X on a square graph, for X_dst).
bool may_leave_out(const Op& op, int i);

/// A tensor argument: its data and extents (rank 0: none given). Views give their own extents;
/// bare pointers get the ones the op implies (TensorRef::shaped), so the check finds them right
/// and only tests for null.
struct TensorRef {
  const void* data = nullptr;
  DType dtype = DType::F32;
  int rank = 0;
  std::size_t extents[3] = {};
  bool strided = false;  ///< a View with gaps or not row-major: the kernels index every tensor densely, row-major

  std::size_t entries() const;
  /// Whether a call passes it: data or extents (an empty View with neither is none).
  bool given() const { return data || entries() > 0; }
  /// A bare pointer with the extents `extent` has in `op` (`count` entries for a HeadVector)
  /// and its element type.
  static TensorRef shaped(const void* data, const Op& op, Extent extent, std::size_t count = 0);
};

/// The extents [E, heads, width] of a row edge argument (Extent::EdgeFeatures): the op's H
/// and D, or for a model with edge columns (ModelArgs::edge_columns) heads 1 (one row for every
/// head) or H and width F <= D, added to each head's last F columns. 0: the op's.
struct EdgeShape {
  int heads = 0, width = 0;
  /// Of a checked call's edge argument (its extents; {0, 0} for none or a scalar one).
  static EdgeShape of(const TensorRef& edge) {
    return edge.rank == 3 ? EdgeShape{int(edge.extents[1]), int(edge.extents[2])} : EdgeShape{};
  }
};

/// A model's tensor arguments in its order (model_args), or their gradients: what the generic
/// entries take (dfgnn::tensors makes them of Views, attention.hpp). One more than the model's
/// count: the last is its edge argument (model_args' edge), or that argument's gradient.
struct Tensors {
  TensorRef refs[4];
  int count = 0;
};

/// One forward or backward call: what the dispatch checks once and the executor runs.
struct Call {
  float param = 0.0f;   ///< GT's scale (0: 1/sqrt(D)), GAT's and GATv2's slope
  /// The model's arguments, in model_args order; an optional one (ArgSpec::stand_in) may be
  /// left out. An executor never sees one left out: the dispatch hands it the stand-in there,
  /// the same tensor, and as its gradient the stand-in's, the same buffer, which then takes
  /// both arguments' terms (AGNN without X_dst: dX sums the source and destination sides).
  TensorRef inputs[3];
  TensorRef edge_values;   ///< [E, 1 or H] in the caller's edge order, or none
  /// The model's edge argument (model_args' edge: GT and GATv2 E [E,H,D], GAT ee [E,H]) in the
  /// caller's edge order, or none; its gradient (backward: written whenever it is given).
  TensorRef edge_features, edge_grad;
  Dropout dropout;
  /// Forward: written (logsumexp in training only). Backward: the forward's, read.
  TensorRef out, logsumexp;
  /// Forward, when given: written, the attention weights [E,H] in the caller's edge order: each
  /// edge's probability times its dropout factor, the coefficient the aggregation used. Computed
  /// from the logsumexp after the forward (so a call asking for them passes logsumexp too).
  TensorRef weights;
  TensorRef dout;          ///< backward: dLoss/dout
  TensorRef grads[3];      ///< backward: written, the gradient of each input given
  BackwardOrder backward_order = BackwardOrder::Auto;
  /// Where it runs: the Kokkos execution space instance of a portable executor (the Kokkos API
  /// sets it), the cudaStream_t of the native one.
  const void* space = nullptr;
  void* stream = nullptr;

  /// The tensors as their element type E (the op's: the check saw to it).
  template <class E = float>
  const E* input(int i) const { return static_cast<const E*>(inputs[i].data); }
  template <class E = float>
  const E* edges() const { return static_cast<const E*>(edge_features.data); }
  template <class E = float>
  E* edges_grad() const { return static_cast<E*>(const_cast<void*>(edge_grad.data)); }
  template <class E = float>
  E* grad(int i) const { return static_cast<E*>(const_cast<void*>(grads[i].data)); }
};

}  // namespace dfgnn
