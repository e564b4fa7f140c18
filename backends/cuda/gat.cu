// The GAT score's calls: its functor and gradients made of a call's tensors (el, er, V; ee).
#include "attention.cuh"

namespace dfgnn::cuda::detail {

namespace {
template <class E>
GATScore<E> score(const Call& c) {
  return {c.input<E>(0), c.input<E>(1), c.input<E>(2), c.param, c.edges<E>()};
}
}  // namespace

template <>
void forward<GAT>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) { run(plan, score<decltype(e)>(c), c); });
}

// er is the destination's input, el the source's.
template <>
void backward<GAT>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) {
    using E = decltype(e);
    run_backward(plan, score<E>(c), c, Grads<E>{c.grad<E>(1), c.grad<E>(0), c.grad<E>(2), c.edges_grad<E>()},
                 static_cast<E*>(nullptr), 0);
  });
}

}  // namespace dfgnn::cuda::detail
