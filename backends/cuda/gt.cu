// The GT score's calls: its functor and gradients made of a call's tensors (Q, K, V; E).
#include "attention.cuh"

namespace dfgnn::cuda::detail {

namespace {
GTScore score(const Plan& plan, const Call& c) {
  return {c.input(0), c.input(1), c.input(2), GT{c.param}.scale_for(plan.dim()), c.edges()};
}
}  // namespace

template <>
void forward<GT>(const Plan& plan, const Call& c) {
  run(plan, score(plan, c), c);
}

template <>
void backward<GT>(const Plan& plan, const Call& c) {
  run_backward(plan, score(plan, c), c, {c.grad(0), c.grad(1), c.grad(2), c.edges_grad()}, nullptr, 0);
}

}  // namespace dfgnn::cuda::detail
