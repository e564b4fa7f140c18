// The AGNN score's calls: its functor and gradients made of a call's tensors (X, beta, X_dst).
#include "attention.cuh"

namespace dfgnn::cuda::detail {

namespace {
template <class E>
AGNNScore<E> score(const Call& c) {
  return {c.input<E>(0), c.input<E>(0), c.input<E>(1), int(c.inputs[1].extents[0]), c.input<E>(2)};
}
}  // namespace

template <>
void forward<AGNN>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) { run(plan, score<decltype(e)>(c), c); });
}

// The destination side gathers into dX_dst, the source side into dX: one buffer where X stands
// in for X_dst (the dispatch's), which then sums both sides.
template <>
void backward<AGNN>(const Plan& plan, const Call& c) {
  with_element(plan.op().dtype, [&](auto e) {
    using E = decltype(e);
    run_backward(plan, score<E>(c), c, Grads<E>{c.grad<E>(2), c.grad<E>(0), nullptr}, c.grad<E>(1),
                 int(c.inputs[1].extents[0]));
  });
}

}  // namespace dfgnn::cuda::detail
