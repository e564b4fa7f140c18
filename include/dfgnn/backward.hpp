#pragma once
/// \file backward.hpp
/// Fused attention backward on Kokkos: the gradients of every input of attention() from the
/// gradient of its output, recomputing scores and probabilities from the forward's per-row
/// logsumexp instead of storing an [E,H] probability tensor (docs/backward.md).
///
/// \code
///   dfgnn::Options<Mem> opt;
///   opt.logsumexp = lse;                                              // [N,H], training mode
///   dfgnn::attention(exec, plan, dfgnn::GT{}, Q, K, V, out, opt);
///   dfgnn::attention_backward(exec, plan, dfgnn::GT{}, Q, K, V, out, lse, dOut, dQ, dK, dV, opt);
/// \endcode
///
/// Call it with the plan, model, inputs and Options of the forward (its edge values and
/// dropout are used again, its logsumexp member is ignored), the forward's `out` and
/// `logsumexp`, and dOut = dLoss/dout. Gradients are overwritten, not accumulated. All tensors
/// are LayoutRight Views on the plan's memory space, shaped like the forward's inputs; every
/// shape is checked, and a gradient overlapping an input or another gradient throws
/// dfgnn::Error naming both. Results are bitwise reproducible: no atomics, every sum in a
/// fixed order. The first call through a plan allocates O(E*H) workspace that later calls
/// reuse; kernels run asynchronously on `exec`.

#include <dfgnn/attention.hpp>

namespace dfgnn {

template <class MemorySpace>
using NodeScalarsOutput = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using HeadFeaturesOutput = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>;
template <class MemorySpace>
using HeadScalarsOutput = Kokkos::View<float*, Kokkos::LayoutRight, MemorySpace>;

/// Any model on its inputs and gradients in order, e.g. attention_backward(exec, plan, GT{},
/// tensors(Q, K, V), out, logsumexp, dOut, tensors(dQ, dK, dV)): what the typed entries below call.
/// (The options' logsumexp is the forward's output: ignored.) With edge features,
/// tensors(Q, K, V, E) and tensors(dQ, dK, dV, dE): their gradient is always written.
namespace detail {

template <class Exec, class Model, class T>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const Model& model, const Tensors& inputs,
                        const Kokkos::View<const T***, Kokkos::LayoutRight, typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const Kokkos::View<const T***, Kokkos::LayoutRight, typename Exec::memory_space>& dOut,
                        const Tensors& grads, const Options<typename Exec::memory_space, T>& options) {
  Call c = kokkos_call("attention_backward", exec, model, inputs, options);
  c.out = tensor_ref(out), c.logsumexp = tensor_ref(logsumexp), c.dout = tensor_ref(dOut);
  place("attention_backward", Model::args, grads, c.grads, c.edge_grad);
  backward("attention_backward", plan.executor(), Model::kind, c);
}

}  // namespace detail

template <class Exec, class Model>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const Model& model, const Tensors& inputs,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut, const Tensors& grads,
                        const Options<typename Exec::memory_space>& options = {}) {
  detail::attention_backward(exec, plan, model, inputs, out, logsumexp, dOut, grads, options);
}

/// The same on tensors of a two-byte type T (bf16 or f16: the plan's element type): out, dOut,
/// the gradients and the options' edge values of that type too, the logsumexp float32.
template <class Exec, class Model, class T, class U,
          std::enable_if_t<!std::is_same_v<std::remove_const_t<T>, float>, int> = 0>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const Model& model, const Tensors& inputs,
                        const Kokkos::View<T***, Kokkos::LayoutRight, typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const Kokkos::View<U***, Kokkos::LayoutRight, typename Exec::memory_space>& dOut,
                        const Tensors& grads,
                        const Options<typename Exec::memory_space, std::remove_const_t<T>>& options = {}) {
  using E = std::remove_const_t<T>;
  static_assert(std::is_same_v<E, std::remove_const_t<U>>, "out and dOut have one element type");
  detail::attention_backward<Exec, Model, E>(exec, plan, model, inputs, out, logsumexp, dOut, grads, options);
}

/// Graph Transformer: dQ, dK, dV [N,H,D].
template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const GT& model,
                        const NodeFeatures<typename Exec::memory_space>& Q,
                        const NodeFeatures<typename Exec::memory_space>& K,
                        const NodeFeatures<typename Exec::memory_space>& V,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeOutput<typename Exec::memory_space>& dQ,
                        const NodeOutput<typename Exec::memory_space>& dK,
                        const NodeOutput<typename Exec::memory_space>& dV,
                        const Options<typename Exec::memory_space>& options = {}) {
  attention_backward(exec, plan, model, tensors(Q, K, V), out, logsumexp, dOut, tensors(dQ, dK, dV), options);
}

/// AGNN: dX [N,H,D] (X is both ends' score input and the values) and dbeta, as long as beta
/// (a shared beta gets the sum over heads).
template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const AGNN& model,
                        const NodeFeatures<typename Exec::memory_space>& X,
                        const HeadScalars<typename Exec::memory_space>& beta,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeOutput<typename Exec::memory_space>& dX,
                        const HeadScalarsOutput<typename Exec::memory_space>& dbeta,
                        const Options<typename Exec::memory_space>& options = {}) {
  attention_backward(exec, plan, model, tensors(X, beta), out, logsumexp, dOut, tensors(dX, dbeta), options);
}

/// AGNN with the destinations' own X_dst: dX [NS,H,D] gets the values' and the source-side
/// cosine terms, dX_dst [N,H,D] the destination-side ones.
template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const AGNN& model,
                        const NodeFeatures<typename Exec::memory_space>& X,
                        const HeadScalars<typename Exec::memory_space>& beta,
                        const NodeFeatures<typename Exec::memory_space>& X_dst,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeOutput<typename Exec::memory_space>& dX,
                        const HeadScalarsOutput<typename Exec::memory_space>& dbeta,
                        const NodeOutput<typename Exec::memory_space>& dX_dst,
                        const Options<typename Exec::memory_space>& options = {}) {
  attention_backward(exec, plan, model, tensors(X, beta, X_dst), out, logsumexp, dOut, tensors(dX, dbeta, dX_dst),
                     options);
}

/// GAT: del, der [N,H] and dV [N,H,D].
template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const GAT& model,
                        const NodeScalars<typename Exec::memory_space>& el,
                        const NodeScalars<typename Exec::memory_space>& er,
                        const NodeFeatures<typename Exec::memory_space>& V,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeScalarsOutput<typename Exec::memory_space>& del,
                        const NodeScalarsOutput<typename Exec::memory_space>& der,
                        const NodeOutput<typename Exec::memory_space>& dV,
                        const Options<typename Exec::memory_space>& options = {}) {
  attention_backward(exec, plan, model, tensors(el, er, V), out, logsumexp, dOut, tensors(del, der, dV), options);
}

/// GATv2: dXL, dXR [N,H,D] (XL is both a score input and the values) and da [H,D].
template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const GATv2& model,
                        const NodeFeatures<typename Exec::memory_space>& XL,
                        const NodeFeatures<typename Exec::memory_space>& XR,
                        const HeadFeatures<typename Exec::memory_space>& a,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeOutput<typename Exec::memory_space>& dXL,
                        const NodeOutput<typename Exec::memory_space>& dXR,
                        const HeadFeaturesOutput<typename Exec::memory_space>& da,
                        const Options<typename Exec::memory_space>& options = {}) {
  attention_backward(exec, plan, model, tensors(XL, XR, a), out, logsumexp, dOut, tensors(dXL, dXR, da), options);
}

}  // namespace dfgnn
