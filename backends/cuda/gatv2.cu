// The GATv2 score's calls: its functor and gradients made of a call's tensors (XL, XR, a; E).
#include "attention.cuh"

namespace dfgnn::cuda::detail {

namespace {
template <class E>
GATv2Score<E> score(const Call& c) {
  return {c.input<E>(0), c.input<E>(0), c.input<E>(1), c.input<E>(2), c.param, c.edges<E>(), edge_layout(c)};
}
}  // namespace

template <>
void forward<GATv2>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) { run(plan, score<decltype(e)>(c), c); });
}

// XR is the destination's input, XL the source's (and the values); da sums over the edges.
template <>
void backward<GATv2>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) {
    using E = decltype(e);
    run_backward(plan, score<E>(c), c, Grads<E>{c.grad<E>(1), c.grad<E>(0), nullptr, c.edges_grad<E>()}, c.grad<E>(2),
                 plan.heads() * plan.dim());
  });
}

}  // namespace dfgnn::cuda::detail
