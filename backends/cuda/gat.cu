// The GAT score's calls: its functor and gradients made of a call's tensors (el, er, V; ee).
#include "attention.cuh"

namespace dfgnn::cuda::detail {

namespace {
GATScore score(const Call& c) { return {c.input(0), c.input(1), c.input(2), c.param, c.edges()}; }
}  // namespace

template <>
void forward<GAT>(const Plan& plan, const Call& c) {
  run(plan, score(c), c);
}

// er is the destination's input, el the source's.
template <>
void backward<GAT>(const Plan& plan, const Call& c) {
  run_backward(plan, score(c), c, {c.grad(1), c.grad(0), c.grad(2), c.edges_grad()}, nullptr, 0);
}

}  // namespace dfgnn::cuda::detail
