// Public backward entries -> checks -> the two gathers (and the parameter sums), instantiated
// for every enabled execution space.

#include "backward.hpp"
#include "entry.hpp"

#include <dfgnn/backward.hpp>

namespace dfgnn {

namespace {

using namespace kokkos_impl;

constexpr const char* kEntry = "attention_backward";

/// Checks what every model reads from the forward; returns its options without the logsumexp
/// output, which the backward ignores (the statistics come as an argument).
template <class Exec>
Options<typename Exec::memory_space> check_upstream(const Checker<Exec>& check,
                                                    const NodeFeatures<typename Exec::memory_space>& out,
                                                    const NodeScalars<typename Exec::memory_space>& logsumexp,
                                                    const NodeFeatures<typename Exec::memory_space>& dOut,
                                                    Options<typename Exec::memory_space> options) {
  check.features("out", out), check.scalars("logsumexp", logsumexp), check.features("dOut", dOut);
  options.logsumexp = {};
  check.options(options);
  return options;
}

// The plan's workspace for `model`: `slots` per-(edge, head) arrays (dr, q and AGNN's cos),
// then the gathers' chunk partials, which the parameter sums (`parameters` floats) reuse.
// Allocated by the plan's first backward; its size depends only on the plan (model, H, D, E).
template <class Exec, class Model>
Workspace<typename Exec::memory_space> workspace(const Plan<Exec>& plan, const Model& model, int slots,
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
                        const Options<typename Exec::memory_space>& options) {
  using Mem = typename Exec::memory_space;
  const Checker<Exec> check(kEntry, plan, ScoreKind::GT);
  check.finite("GT::scale", model.scale);
  check.features("Q", Q), check.features("K", K), check.features("V", V);
  const Options<Mem> o = check_upstream(check, out, logsumexp, dOut, options);
  check.features("dQ", dQ), check.features("dK", dK), check.features("dV", dV);
  check.disjoint({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
                 {{"Q", Q}, {"K", K}, {"V", V}, {"out", out}, {"logsumexp", logsumexp}, {"dOut", dOut},
                  {"edge_values", o.edge_values}});
  const float scale = model.scale_for(plan.dim());
  if (run_native(exec, plan, o, [&](auto stream, const auto& native, const auto& no) {
        cuda::attention_backward(stream, native, GT{scale}, Q.data(), K.data(), V.data(), out.data(),
                                 logsumexp.data(), dOut.data(), dQ.data(), dK.data(), dV.data(), no);
      }))
    return;
  const GTGrad<Mem> grad{Q, K, dOut, dQ, dK, dV, scale, {}};
  backward(exec, plan, problem(plan, NodeOutput<Mem>(), o), GTScore<Mem>{Q, K, V, scale}, grad,
           Upstream<Mem>{out, logsumexp, dOut}, workspace(plan, grad, 2, 0));
}

template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const AGNN&,
                        const NodeFeatures<typename Exec::memory_space>& X,
                        const HeadScalars<typename Exec::memory_space>& beta,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeOutput<typename Exec::memory_space>& dX,
                        const HeadScalarsOutput<typename Exec::memory_space>& dbeta,
                        const Options<typename Exec::memory_space>& options) {
  using Mem = typename Exec::memory_space;
  const Checker<Exec> check(kEntry, plan, ScoreKind::AGNN);
  check.features("X", X), check.head_vector("beta", beta);
  const Options<Mem> o = check_upstream(check, out, logsumexp, dOut, options);
  check.features("dX", dX), check.shape("dbeta", dbeta, {beta.extent(0)}, "[beta's length]");
  check.disjoint({{"dX", dX}, {"dbeta", dbeta}},
                 {{"X", X}, {"beta", beta}, {"out", out}, {"logsumexp", logsumexp}, {"dOut", dOut},
                  {"edge_values", o.edge_values}});
  const int count = int(beta.extent(0));
  if (run_native(exec, plan, o, [&](auto stream, const auto& native, const auto& no) {
        cuda::attention_backward(stream, native, AGNN{}, X.data(), beta.data(), count, out.data(),
                                 logsumexp.data(), dOut.data(), dX.data(), dbeta.data(), no);
      }))
    return;
  const auto inv = inverse_norms(exec, plan, X);
  const AGNNGrad<Mem> grad{X, dOut, inv, beta, dX, {}};
  const auto s = workspace(plan, grad, 3, std::size_t(edge_slices(plan.graph().num_edges())) * count);
  backward(exec, plan, problem(plan, NodeOutput<Mem>(), o), AGNNScore<Mem>{X, inv, beta}, grad,
           Upstream<Mem>{out, logsumexp, dOut}, s);
  sum_over_edges(exec, plan, BetaTerm<Mem>{s.work.dr, s.work.cos, plan.heads(), count}, s.partials, dbeta);
}

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
                        const Options<typename Exec::memory_space>& options) {
  using Mem = typename Exec::memory_space;
  const Checker<Exec> check(kEntry, plan, ScoreKind::GAT);
  check.finite("GAT::slope", model.slope);
  check.scalars("el", el), check.scalars("er", er), check.features("V", V);
  const Options<Mem> o = check_upstream(check, out, logsumexp, dOut, options);
  check.scalars("del", del), check.scalars("der", der), check.features("dV", dV);
  check.disjoint({{"del", del}, {"der", der}, {"dV", dV}},
                 {{"el", el}, {"er", er}, {"V", V}, {"out", out}, {"logsumexp", logsumexp}, {"dOut", dOut},
                  {"edge_values", o.edge_values}});
  if (run_native(exec, plan, o, [&](auto stream, const auto& native, const auto& no) {
        cuda::attention_backward(stream, native, model, el.data(), er.data(), V.data(), out.data(),
                                 logsumexp.data(), dOut.data(), del.data(), der.data(), dV.data(), no);
      }))
    return;
  const GATGrad<Mem> grad{el, er, dOut, del, der, dV, model.slope, {}};
  backward(exec, plan, problem(plan, NodeOutput<Mem>(), o), GATScore<Mem>{el, er, V, model.slope}, grad,
           Upstream<Mem>{out, logsumexp, dOut}, workspace(plan, grad, 2, 0));
}

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
                        const Options<typename Exec::memory_space>& options) {
  using Mem = typename Exec::memory_space;
  const Checker<Exec> check(kEntry, plan, ScoreKind::GATv2);
  check.finite("GATv2::slope", model.slope);
  check.features("XL", XL), check.features("XR", XR), check.shape("a", a, {check.H, check.D}, "[H,D]");
  const Options<Mem> o = check_upstream(check, out, logsumexp, dOut, options);
  check.features("dXL", dXL), check.features("dXR", dXR), check.shape("da", da, {check.H, check.D}, "[H,D]");
  check.disjoint({{"dXL", dXL}, {"dXR", dXR}, {"da", da}},
                 {{"XL", XL}, {"XR", XR}, {"a", a}, {"out", out}, {"logsumexp", logsumexp}, {"dOut", dOut},
                  {"edge_values", o.edge_values}});
  if (run_native(exec, plan, o, [&](auto stream, const auto& native, const auto& no) {
        cuda::attention_backward(stream, native, model, XL.data(), XR.data(), a.data(), out.data(),
                                 logsumexp.data(), dOut.data(), dXL.data(), dXR.data(), da.data(), no);
      }))
    return;
  const auto& g = plan.graph();
  const GATv2Grad<Mem> grad{XL, XR, dOut, a, dXL, dXR, model.slope, {}};
  const auto s = workspace(plan, grad, 2, std::size_t(edge_slices(g.num_edges())) * da.size());
  backward(exec, plan, problem(plan, NodeOutput<Mem>(), o), GATv2Score<Mem>{XL, XR, a, model.slope}, grad,
           Upstream<Mem>{out, logsumexp, dOut}, s);
  sum_over_edges(exec, plan, WeightTerm<Mem>{s.work.dr, XL, XR, g.src(), g.dst(), model.slope}, s.partials,
                 Kokkos::View<float*, Kokkos::LayoutRight, Mem>(da.data(), da.size()));
}

#define DFGNN_INSTANTIATE(EXEC)                                                                    \
  template void attention_backward<EXEC>(                                                         \
      const EXEC&, const Plan<EXEC>&, const GT&, const NodeFeatures<EXEC::memory_space>&,        \
      const NodeFeatures<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,          \
      const NodeFeatures<EXEC::memory_space>&, const NodeScalars<EXEC::memory_space>&,           \
      const NodeFeatures<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,            \
      const NodeOutput<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,              \
      const Options<EXEC::memory_space>&);                                                       \
  template void attention_backward<EXEC>(                                                         \
      const EXEC&, const Plan<EXEC>&, const AGNN&, const NodeFeatures<EXEC::memory_space>&,      \
      const HeadScalars<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,           \
      const NodeScalars<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,           \
      const NodeOutput<EXEC::memory_space>&, const HeadScalarsOutput<EXEC::memory_space>&,       \
      const Options<EXEC::memory_space>&);                                                       \
  template void attention_backward<EXEC>(                                                         \
      const EXEC&, const Plan<EXEC>&, const GAT&, const NodeScalars<EXEC::memory_space>&,        \
      const NodeScalars<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,           \
      const NodeFeatures<EXEC::memory_space>&, const NodeScalars<EXEC::memory_space>&,           \
      const NodeFeatures<EXEC::memory_space>&, const NodeScalarsOutput<EXEC::memory_space>&,     \
      const NodeScalarsOutput<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,       \
      const Options<EXEC::memory_space>&);                                                       \
  template void attention_backward<EXEC>(                                                         \
      const EXEC&, const Plan<EXEC>&, const GATv2&, const NodeFeatures<EXEC::memory_space>&,     \
      const NodeFeatures<EXEC::memory_space>&, const HeadFeatures<EXEC::memory_space>&,          \
      const NodeFeatures<EXEC::memory_space>&, const NodeScalars<EXEC::memory_space>&,           \
      const NodeFeatures<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,            \
      const NodeOutput<EXEC::memory_space>&, const HeadFeaturesOutput<EXEC::memory_space>&,      \
      const Options<EXEC::memory_space>&);

DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_INSTANTIATE)

}  // namespace dfgnn
