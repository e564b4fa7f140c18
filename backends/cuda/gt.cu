// The GT score's calls: its functor and gradients made of a call's tensors (Q, K, V; E).
#include "attention.cuh"

namespace dfgnn::cuda::detail {

namespace {
template <class E>
GTScore<E> score(const Plan& plan, const Call& c) {
  return {c.input<E>(0), c.input<E>(1), c.input<E>(2), GT{c.param}.scale_for(plan.dim()), c.edges<E>(),
          edge_layout(c)};
}
}  // namespace

template <>
void forward<GT>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) { run(plan, score<decltype(e)>(plan, c), c); });
}

template <>
void backward<GT>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) {
    using E = decltype(e);
    run_backward(plan, score<E>(plan, c), c, Grads<E>{c.grad<E>(0), c.grad<E>(1), c.grad<E>(2), c.edges_grad<E>()},
                 static_cast<E*>(nullptr), 0);
  });
}

}  // namespace dfgnn::cuda::detail
