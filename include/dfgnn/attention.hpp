#pragma once
/// \file attention.hpp
/// Fused attention forward on Kokkos: out[v,h,:] = sum_{u->v} softmax_u(score(v,u,h)) V[u,h,:].
///
/// \code
///   dfgnn::Graph<Mem> graph(dfgnn::graph_from_edges(N, src, dst));
///   dfgnn::Plan<Exec> plan(exec, graph, dfgnn::ScoreKind::GT, H, D);   // host preprocessing
///   dfgnn::attention(exec, plan, dfgnn::GT{}, Q, K, V, out);            // kernels only
/// \endcode
///
/// Tensors are LayoutRight Views on the plan's memory space: node features [N,H,D], node
/// scalars [N,H], GATv2's a [H,D], AGNN's beta [H] or [1] (a bipartite graph's source-side
/// tensors have its NS rows); Options adds edge values, the
/// training-mode statistics and dropout. Every shape is checked; a mismatch, or an output that
/// overlaps an input, throws dfgnn::Error naming the argument (the dispatch's one check,
/// dispatch.hpp). Kernels run asynchronously on `exec`; with Kokkos::Cuda and DFGNN_ENABLE_CUDA
/// they are the CUDA-native ones.

#include <dfgnn/detail/dispatch.hpp>
#include <dfgnn/dropout.hpp>
#include <dfgnn/plan.hpp>

#include <type_traits>

namespace dfgnn {

template <class MemorySpace>
using NodeFeatures = Kokkos::View<const float***, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using NodeOutput = Kokkos::View<float***, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using NodeScalars = Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using HeadFeatures = Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using HeadScalars = Kokkos::View<const float*, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using EdgeValues = Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>;

/// Optional inputs and outputs of a forward call, of the call's element type T (float, or
/// half.hpp's bf16 or f16: the plan's) but for the float32 logsumexp.
template <class MemorySpace, class T = float>
struct Options {
  /// Per-edge score multipliers [E,1] or [E,H] in the caller's edge order; empty: none.
  Kokkos::View<const T**, Kokkos::LayoutRight, MemorySpace> edge_values;
  /// Training mode: receives the per-row softmax statistic logsumexp_u(score) [N,H] that the
  /// backward needs (0 for rows without in-edges); empty: inference.
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> logsumexp;
  /// Attention dropout on the probabilities (training); rate 0: none.
  Dropout dropout;
  /// When given, receives the attention weights [E,H] in the caller's edge order (Call::weights:
  /// probability times dropout factor); needs logsumexp. Empty: none computed.
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> attention_weights;
};

namespace detail {

/// Whether a View of this type may hold its entries in row-major order, the order the kernels
/// read every tensor in: LayoutRight, LayoutStride (whose strides tensor_ref checks), or any
/// layout at rank 1. LayoutLeft (Kokkos::Cuda's default) is column-major from rank 2 on.
template <class View>
constexpr bool row_major_layout() {
  using Layout = typename View::array_layout;
  return std::is_same_v<Layout, Kokkos::LayoutRight> || std::is_same_v<Layout, Kokkos::LayoutStride> ||
         int(View::rank) <= 1;
}

/// A View as a call's tensor: its data, extents and whether its entries are other than dense
/// and row-major (`strided`: gaps, or a LayoutStride View of another order). Extents, not
/// size(): Kokkos 4.6 reports size() 0 for an unmanaged View made on a null pointer, whatever
/// its extents.
template <class View>
TensorRef tensor_ref(const View& v) {
  static_assert(row_major_layout<View>(),
                "dfgnn: tensors are read in row-major order: pass Kokkos::LayoutRight Views (a LayoutLeft View, "
                "Kokkos::Cuda's default layout, would be read transposed)");
  TensorRef t;
  t.data = v.data();
  t.dtype = dtype_of<typename View::non_const_value_type>();
  t.rank = int(View::rank);
  for (int r = 0; r < t.rank; ++r) t.extents[r] = v.extent(r);
  t.strided = v.span() != t.entries();
  // Row-major: stride 1 in the last extent, in each other the product of the extents after it.
  std::size_t stride = 1;
  for (int r = t.rank - 1; r >= 0 && t.entries() && !t.strided; --r) {
    t.strided = t.extents[r] > 1 && v.stride(r) != stride;
    stride *= t.extents[r];
  }
  return t;
}

/// Places a model's tensors (`t`: its arguments in order, then optionally its edge argument)
/// in `slots` and `edge`: Error naming `who` for more than that.
inline void place(const char* who, const ModelArgs& args, const Tensors& t, TensorRef* slots, TensorRef& edge) {
  if (t.count > args.count + 1 || (t.count == args.count + 1 && !args.edge.name))
    throw Error(std::string(who) + ": " + std::to_string(t.count) + " tensors, the model takes " +
                std::to_string(args.count) + (args.edge.name ? " and its edge argument " + std::string(args.edge.name)
                                                             : std::string(" and no edge argument")));
  for (int i = 0; i < t.count && i < args.count; ++i) slots[i] = t.refs[i];
  if (t.count > args.count) edge = t.refs[args.count];
}

/// A call of the Kokkos API on `exec` (a Kokkos::Cuda's stream too, for the native executor):
/// the model's arguments (and edge argument), its scale or slope, the options' edge values and
/// dropout.
template <class Exec, class Model, class T>
Call kokkos_call(const char* who, const Exec& exec, const Model& model, const Tensors& inputs,
                 const Options<typename Exec::memory_space, T>& o) {
  Call c;
  c.space = &exec;
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) c.stream = exec.cuda_stream();
#endif
  place(who, Model::args, inputs, c.inputs, c.edge_features);
  c.param = model.param();
  c.edge_values = tensor_ref(o.edge_values);  // an empty View is no edge values (the check, the executors)
  c.dropout = o.dropout;
  return c;
}

template <class Exec, class Model, class T>
void attention(const Exec& exec, const Plan<Exec>& plan, const Model& model, const Tensors& inputs,
               const Kokkos::View<T***, Kokkos::LayoutRight, typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space, T>& options) {
  Call c = kokkos_call("attention", exec, model, inputs, options);
  c.out = tensor_ref(out), c.logsumexp = tensor_ref(options.logsumexp);  // empty: inference
  c.weights = tensor_ref(options.attention_weights);
  forward("attention", plan.executor(), Model::kind, c);
}

}  // namespace detail

/// A model's tensors for the generic entries: Views in the model's order (model_args, types.hpp),
/// then optionally its edge argument (GT and GATv2 E [E,H,D], GAT ee [E,H]).
template <class... Views>
Tensors tensors(const Views&... views) {
  static_assert(sizeof...(Views) <= 4, "a model has at most three arguments and an edge argument");
  return Tensors{{detail::tensor_ref(views)...}, int(sizeof...(Views))};
}

/// Any model (a traits type of types.hpp) on its inputs in order, e.g.
/// attention(exec, plan, GT{}, tensors(Q, K, V), out): what the typed entries below call, and all
/// a new model needs. Edge features (PyG's edge_dim) come last: tensors(Q, K, V, E).
template <class Exec, class Model>
void attention(const Exec& exec, const Plan<Exec>& plan, const Model& model, const Tensors& inputs,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {}) {
  detail::attention(exec, plan, model, inputs, out, options);
}

/// The same on tensors of a two-byte type T (bf16 or f16, half.hpp: the plan's element type),
/// out and the options' edge values and attention weights of that type too.
template <class Exec, class Model, class T, std::enable_if_t<!std::is_same_v<T, float>, int> = 0>
void attention(const Exec& exec, const Plan<Exec>& plan, const Model& model, const Tensors& inputs,
               const Kokkos::View<T***, Kokkos::LayoutRight, typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space, T>& options = {}) {
  detail::attention(exec, plan, model, inputs, out, options);
}

/// Graph Transformer: score = scale * <Q[v,h], K[u,h]>.
template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GT& model,
               const NodeFeatures<typename Exec::memory_space>& Q,
               const NodeFeatures<typename Exec::memory_space>& K,
               const NodeFeatures<typename Exec::memory_space>& V,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {}) {
  attention(exec, plan, model, tensors(Q, K, V), out, options);
}

/// AGNN: score = beta[h] * cos(X[v,h], X[u,h]); the values are X.
template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const AGNN& model,
               const NodeFeatures<typename Exec::memory_space>& X,
               const HeadScalars<typename Exec::memory_space>& beta,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {}) {
  attention(exec, plan, model, tensors(X, beta), out, options);
}

/// AGNN with the destinations' own X_dst [N,H,D] (a bipartite graph's, or other features of a
/// square graph's rows): score = beta[h] * cos(X_dst[v,h], X[u,h]); the values are X [NS,H,D].
template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const AGNN& model,
               const NodeFeatures<typename Exec::memory_space>& X,
               const HeadScalars<typename Exec::memory_space>& beta,
               const NodeFeatures<typename Exec::memory_space>& X_dst,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {}) {
  attention(exec, plan, model, tensors(X, beta, X_dst), out, options);
}

/// GAT: score = LeakyReLU(el[u,h] + er[v,h], slope).
template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GAT& model,
               const NodeScalars<typename Exec::memory_space>& el,
               const NodeScalars<typename Exec::memory_space>& er,
               const NodeFeatures<typename Exec::memory_space>& V,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {}) {
  attention(exec, plan, model, tensors(el, er, V), out, options);
}

/// GATv2: score = sum_d a[h,d] * LeakyReLU(XL[u,h,d] + XR[v,h,d], slope); the values are XL.
template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GATv2& model,
               const NodeFeatures<typename Exec::memory_space>& XL,
               const NodeFeatures<typename Exec::memory_space>& XR,
               const HeadFeatures<typename Exec::memory_space>& a,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options = {}) {
  attention(exec, plan, model, tensors(XL, XR, a), out, options);
}

}  // namespace dfgnn
