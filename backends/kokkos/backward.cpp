// The portable executor's backward: a checked call's score and gradient functors, then the
// two gathers (and the parameter sums). Instantiated for every enabled execution space.

#include "backward.hpp"
#include "executor.hpp"

namespace dfgnn::kokkos_impl {

namespace {

// The plan's workspace for `model`: `slots` per-(edge, head) arrays (dr, q and AGNN's cos),
// then the gathers' chunk partials, which the parameter sums (`parameters` floats) reuse.
// Allocated by the plan's first backward; its size depends only on the plan (model, H, D, E).
template <class Exec, class Model>
Workspace<typename Exec::memory_space> workspace(const PortablePlan<Exec>& plan, const Model& model, int slots,
                                                 std::size_t parameters) {
  using View = Kokkos::View<float*, typename Exec::memory_space>;
  const edge_t E = plan.graph().num_edges();
  const std::size_t slot_size = std::size_t(E) * std::size_t(plan.heads());
  const std::size_t extra = std::max(partial_floats(E, plan.heads(), model), parameters);
  auto& all = plan.backward_workspace();
  if (all.extent(0) < slots * slot_size + extra)
    all = View(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dfgnn::backward_workspace"), slots * slot_size + extra);
  auto slot = [&](int i) { return i < slots ? View(all.data() + i * slot_size, slot_size) : View(); };
  return {{slot(0), slot(1), slot(2)}, View(all.data() + slots * slot_size, extra)};
}

}  // namespace

template <class Exec>
void PortablePlan<Exec>::backward(const Call& call) const {
  using Mem = memory_space;
  const Exec& exec = *static_cast<const Exec*>(call.space);
  const CallViews<Mem> t{call};
  const Problem<Mem> p = problem(*this, NodeOutput<Mem>(), t.options(false));
  const Upstream<Mem> up{t.features(call.out), t.matrix(call.logsumexp), t.features(call.dout)};
  const edge_t E = graph_.num_edges();
  switch (op_.kind) {
    case ScoreKind::GT: {
      const float scale = GT{call.param}.scale_for(dim());
      const GTGrad<Mem> grad{t.input(0), t.input(1), up.dout, t.output(call.grads[0]), t.output(call.grads[1]),
                             t.output(call.grads[2]), scale, {}};
      return kokkos_impl::backward(exec, *this, p, GTScore<Mem>{t.input(0), t.input(1), t.input(2), scale}, grad, up,
                                   workspace(*this, grad, 2, 0));
    }
    case ScoreKind::AGNN: {
      const Features<Mem> X = t.input(0);
      const Vector<Mem> beta = t.vector(call.inputs[1]);
      const int count = int(beta.extent(0));
      const auto inv = inverse_norms(exec, *this, X);
      const AGNNGrad<Mem> grad{X, up.dout, inv, beta, t.output(call.grads[0]), {}};
      const auto s = workspace(*this, grad, 3, std::size_t(edge_slices(E)) * count);
      kokkos_impl::backward(exec, *this, p, AGNNScore<Mem>{X, inv, beta}, grad, up, s);
      return sum_over_edges(exec, *this, BetaTerm<Mem>{s.work.dr, s.work.cos, heads(), count}, s.partials,
                            t.vector_out(call.grads[1]));
    }
    case ScoreKind::GAT: {
      const GATGrad<Mem> grad{t.input_matrix(0), t.input_matrix(1), up.dout, t.scalars_out(call.grads[0]),
                              t.scalars_out(call.grads[1]), t.output(call.grads[2]), call.param, {}};
      return kokkos_impl::backward(exec, *this, p,
                                   GATScore<Mem>{t.input_matrix(0), t.input_matrix(1), t.input(2), call.param}, grad,
                                   up, workspace(*this, grad, 2, 0));
    }
    case ScoreKind::GATv2: {
      const Features<Mem> XL = t.input(0), XR = t.input(1);
      const Matrix<Mem> a = t.input_matrix(2);
      const GATv2Grad<Mem> grad{XL, XR, up.dout, a, t.output(call.grads[0]), t.output(call.grads[1]), call.param, {}};
      const auto s = workspace(*this, grad, 2, std::size_t(edge_slices(E)) * a.size());
      kokkos_impl::backward(exec, *this, p, GATv2Score<Mem>{XL, XR, a, call.param}, grad, up, s);
      return sum_over_edges(exec, *this, WeightTerm<Mem>{s.work.dr, XL, XR, graph_.src(), graph_.dst(), call.param},
                            s.partials, t.vector_out(call.grads[2]));
    }
  }
}

#define DFGNN_INSTANTIATE(EXEC) template void PortablePlan<EXEC>::backward(const Call&) const;

DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_INSTANTIATE)

}  // namespace dfgnn::kokkos_impl
