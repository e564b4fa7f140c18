// The portable executor's backward: a checked call's score and gradient functors, then the
// two gathers (and the parameter sums). Instantiated for every enabled execution space.

#include "backward.hpp"
#include "executor.hpp"
#include "spaces.hpp"

namespace dfgnn::kokkos_impl {

namespace {

// The plan's workspace for `model`: `slots` per-(edge, head) arrays (EdgeWork's, in its order),
// then the gathers' chunk partials, which the parameter sums (`parameters` floats) reuse, then
// `rows` floats (a two-byte AGNN call's float partial dX and row sums). Allocated by the plan's
// first backward (grown by a later one that needs more); its size depends only on the plan and
// type.
template <class Exec, class Model>
Workspace<typename Exec::memory_space> workspace(const PortablePlan<Exec>& plan, const Model& model, int slots,
                                                 std::size_t parameters, std::size_t rows = 0) {
  using View = Kokkos::View<float*, typename Exec::memory_space>;
  const edge_t E = plan.graph().num_edges();
  const std::size_t slot_size = std::size_t(E) * std::size_t(plan.heads());
  const std::size_t extra = std::max(partial_floats(E, plan.heads(), model), parameters);
  auto& all = plan.backward_workspace();
  if (all.extent(0) < slots * slot_size + extra + rows)
    all = View(Kokkos::view_alloc(Kokkos::WithoutInitializing, "dfgnn::backward_workspace"),
               slots * slot_size + extra + rows);
  auto slot = [&](int i) { return i < slots ? View(all.data() + i * slot_size, slot_size) : View(); };
  return {{slot(0), slot(1), slot(2), slot(3), slot(4)}, View(all.data() + slots * slot_size, extra),
          View(all.data() + slots * slot_size + extra, rows)};
}

// Each model's backward: its gradient functor, the two gathers, then its parameter sums (a new
// model adds its overload here; its score functor comes from score_of, executor.hpp).
template <class Exec, class T>
void backward_of(const GT& model, const Exec& exec, const PortablePlan<Exec>& plan,
                 const CallViews<typename Exec::memory_space, T>& t, const Problem<typename Exec::memory_space, T>& p,
                 const Upstream<typename Exec::memory_space, T>& up) {
  using Mem = typename Exec::memory_space;
  const Call& c = t.call;
  const GTGrad<Mem, T> grad{t.input(0), t.input(1), up.dout, t.output(c.grads[0]), t.output(c.grads[1]),
                            t.output(c.grads[2]), model.scale_for(plan.dim()), {},
                            {t.features(c.edge_features), t.output(c.edge_grad), plan.graph().edge_id()}};
  const auto s = workspace(plan, grad, 2, 0);
  backward(exec, plan, p, score_of(model, exec, plan, t), grad, up, s);
  if (grad.shared_edges()) {
    GTGrad<Mem, T> g = grad;
    g.work = s.work;
    Kokkos::parallel_for("dfgnn::backward_shared_edge_grad",
                         Range<Exec>(exec, 0, std::int64_t(p.src.extent(0)) * std::int64_t(grad.edge.in.extent(2))),
                         SharedEdgeGrad<Mem, T>{g, p.dst});
  }
}

template <class Exec, class T>
void backward_of(const AGNN& model, const Exec& exec, const PortablePlan<Exec>& plan,
                 const CallViews<typename Exec::memory_space, T>& t, const Problem<typename Exec::memory_space, T>& p,
                 const Upstream<typename Exec::memory_space, T>& up) {
  using Mem = typename Exec::memory_space;
  const Call& c = t.call;
  const AGNNScore<Mem, T> score = score_of(model, exec, plan, t);
  const int count = int(score.beta.extent(0));
  const auto dx = t.output(c.grads[0]);
  using Grad = AGNNGrad<Mem, T>;
  Grad grad{score.x, score.x_dst, up.dout, score.inv_norm, score.inv_norm_dst, score.beta, dx, t.output(c.grads[2]),
            {},      {},          {}};
  // The destination side's rows and sums (a float dx taking both sides keeps them in itself).
  const std::size_t N = std::size_t(plan.graph().num_nodes()), H = dx.extent(1), row_sums = N * H * Grad::kRowSums;
  const std::size_t part = grad.one_gradient() && Grad::kCentred ? dx.size() : 0;
  const edge_t items = Grad::kCentred ? edge_t(N) : plan.graph().num_edges();  // dbeta's
  const auto s = workspace(plan, grad, Grad::kCentred ? 5 : 3, std::size_t(slices_of(items)) * count,
                           Grad::kCentred ? part + row_sums : 0);
  if constexpr (Grad::kCentred) grad.row_sums = Output<Mem>(s.rows.data() + part, N, H, Grad::kRowSums);
  if (grad.one_gradient()) {
    if constexpr (Grad::kCentred)
      grad.part = Output<Mem>(s.rows.data(), N, H, dx.extent(2));
    else
      grad.part = dx;
  }
  backward(exec, plan, p, score, grad, up, s);
  const auto dbeta = t.vector_out(c.grads[1]);
  if constexpr (Grad::kCentred)
    sum_in_slices(exec, plan, items, RowBetaTerm<Mem>{grad.row_sums, count}, s.partials, dbeta);
  else
    sum_in_slices(exec, plan, items, BetaTerm<Mem>{s.work.dr, s.work.cos, plan.heads(), count}, s.partials, dbeta);
}

template <class Exec, class T>
void backward_of(const GAT& model, const Exec& exec, const PortablePlan<Exec>& plan,
                 const CallViews<typename Exec::memory_space, T>& t, const Problem<typename Exec::memory_space, T>& p,
                 const Upstream<typename Exec::memory_space, T>& up) {
  using Mem = typename Exec::memory_space;
  const Call& c = t.call;
  const GATGrad<Mem, T> grad{t.input_matrix(0), t.input_matrix(1), up.dout, t.scalars_out(c.grads[0]),
                             t.scalars_out(c.grads[1]), t.output(c.grads[2]), model.slope, {},
                             {t.matrix(c.edge_features), t.scalars_out(c.edge_grad), plan.graph().edge_id()}};
  backward(exec, plan, p, score_of(model, exec, plan, t), grad, up, workspace(plan, grad, 2, 0));
}

template <class Exec, class T>
void backward_of(const GATv2& model, const Exec& exec, const PortablePlan<Exec>& plan,
                 const CallViews<typename Exec::memory_space, T>& t, const Problem<typename Exec::memory_space, T>& p,
                 const Upstream<typename Exec::memory_space, T>& up) {
  using Mem = typename Exec::memory_space;
  const Call& c = t.call;
  const GATv2Score<Mem, T> score = score_of(model, exec, plan, t);
  const GATv2Grad<Mem, T> grad{score.xl, score.xr, up.dout, score.a, t.output(c.grads[0]), t.output(c.grads[1]),
                               model.slope, {}, {score.e, t.output(c.edge_grad), plan.graph().edge_id()}};
  const auto s = workspace(plan, grad, 2, std::size_t(slices_of(plan.graph().num_edges())) * score.a.size());
  backward(exec, plan, p, score, grad, up, s);
  const auto& g = plan.graph();
  sum_in_slices(exec, plan, g.num_edges(), WeightTerm<Mem, T>{s.work.dr, score, g.src(), g.dst(), g.edge_id()},
                s.partials, t.vector_out(c.grads[2]));
}

}  // namespace

template <class Exec>
void PortablePlan<Exec>::backward(const Call& call) const {
  using Mem = memory_space;
  const Exec& exec = *static_cast<const Exec*>(call.space);
  with_element(op_.dtype, [&](auto element) {
    using T = decltype(element);
    const CallViews<Mem, T> t{call};
    const Problem<Mem, T> p = problem(*this, Output<Mem, T>(), t.options(false));
    const Upstream<Mem, T> up{t.features(call.out), t.logsumexp(), t.features(call.dout)};
    visit_model(op_.kind, [&](auto model) {
      backward_of(with_param<decltype(model)>(call.param), exec, *this, t, p, up);
    });
  });
}

#define DFGNN_INSTANTIATE(EXEC) template void PortablePlan<EXEC>::backward(const Call&) const;

DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_INSTANTIATE)

}  // namespace dfgnn::kokkos_impl
