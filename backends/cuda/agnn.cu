// The AGNN score's calls: its functor and gradients made of a call's tensors (X, beta).
#include "attention.cuh"

namespace dfgnn::cuda::detail {

namespace {
template <class E>
AGNNScore<E> score(const Call& c) {
  return {c.input<E>(0), c.input<E>(0), c.input<E>(1), int(c.inputs[1].extents[0])};
}
}  // namespace

template <>
void forward<AGNN>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) { run(plan, score<decltype(e)>(c), c); });
}

// X is both sides' input: its gradient gathers at destinations and at sources.
template <>
void backward<AGNN>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) {
    using E = decltype(e);
    run_backward(plan, score<E>(c), c, Grads<E>{c.grad<E>(0), c.grad<E>(0), nullptr}, c.grad<E>(1),
                 int(c.inputs[1].extents[0]));
  });
}

}  // namespace dfgnn::cuda::detail
