// Public backward entries -> checks -> the two passes (and the parameter sums), instantiated
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

/// Backward workspace: `slots` per-(edge, head) arrays, then `extra` floats.
template <class Mem>
struct Workspace {
  Kokkos::View<float*, Mem> all;
  std::size_t slot_size;
  Kokkos::View<float*, Mem> slot(int i) const {
    return Kokkos::View<float*, Mem>(all.data() + i * slot_size, slot_size);
  }
  Kokkos::View<float*, Mem> extra(int slots) const {
    return Kokkos::View<float*, Mem>(all.data() + slots * slot_size, all.extent(0) - slots * slot_size);
  }
};

// The plan's workspace: allocated by its first backward, grown if a later one needs more.
template <class Exec>
Workspace<typename Exec::memory_space> workspace(const Plan<Exec>& plan, int slots, std::size_t extra) {
  const std::size_t slot_size = std::size_t(plan.graph().num_edges()) * std::size_t(plan.heads());
  auto& all = plan.backward_workspace();
  if (all.extent(0) < slots * slot_size + extra)
    all = Kokkos::View<float*, typename Exec::memory_space>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "dfgnn::backward_workspace"), slots * slot_size + extra);
  return {all, slot_size};
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
  check.features("Q", Q), check.features("K", K), check.features("V", V);
  const Options<Mem> o = check_upstream(check, out, logsumexp, dOut, options);
  check.features("dQ", dQ), check.features("dK", dK), check.features("dV", dV);
  check.disjoint({{"dQ", dQ}, {"dK", dK}, {"dV", dV}},
                 {{"Q", Q}, {"K", K}, {"V", V}, {"out", out}, {"logsumexp", logsumexp}, {"dOut", dOut},
                  {"edge_values", o.edge_values}});
  const float scale = dot_scale(model, plan.dim());
  const auto s = workspace(plan, 2, 0);
  backward(exec, plan, problem(plan, NodeOutput<Mem>(), o), DotScore<Mem>{Q, K, V, scale},
           DotGrad<Mem>{Q, K, dOut, dQ, dK, dV, scale}, Upstream<Mem>{out, logsumexp, dOut},
           EdgeWork<Mem>{s.slot(0), s.slot(1)});
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
  const auto s = workspace(plan, 3, std::size_t(edge_slices(plan.graph().num_edges())) * count);
  const EdgeWork<Mem> work{s.slot(0), s.slot(1)};
  const auto cos = s.slot(2);
  const auto inv = inverse_norms(exec, plan, X);
  backward(exec, plan, problem(plan, NodeOutput<Mem>(), o), CosineScore<Mem>{X, inv, beta},
           CosineGrad<Mem>{X, dOut, inv, beta, dX, cos}, Upstream<Mem>{out, logsumexp, dOut}, work);
  sum_over_edges(exec, plan, BetaTerm<Mem>{work.dr, cos, plan.heads(), count}, s.extra(3), dbeta);
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
  check.scalars("el", el), check.scalars("er", er), check.features("V", V);
  const Options<Mem> o = check_upstream(check, out, logsumexp, dOut, options);
  check.scalars("del", del), check.scalars("der", der), check.features("dV", dV);
  check.disjoint({{"del", del}, {"der", der}, {"dV", dV}},
                 {{"el", el}, {"er", er}, {"V", V}, {"out", out}, {"logsumexp", logsumexp}, {"dOut", dOut},
                  {"edge_values", o.edge_values}});
  const auto s = workspace(plan, 2, 0);
  backward(exec, plan, problem(plan, NodeOutput<Mem>(), o), AdditiveScore<Mem>{el, er, V, model.slope},
           AdditiveGrad<Mem>{el, er, dOut, del, der, dV, model.slope}, Upstream<Mem>{out, logsumexp, dOut},
           EdgeWork<Mem>{s.slot(0), s.slot(1)});
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
  check.features("XL", XL), check.features("XR", XR), check.shape("a", a, {check.H, check.D}, "[H,D]");
  const Options<Mem> o = check_upstream(check, out, logsumexp, dOut, options);
  check.features("dXL", dXL), check.features("dXR", dXR), check.shape("da", da, {check.H, check.D}, "[H,D]");
  check.disjoint({{"dXL", dXL}, {"dXR", dXR}, {"da", da}},
                 {{"XL", XL}, {"XR", XR}, {"a", a}, {"out", out}, {"logsumexp", logsumexp}, {"dOut", dOut},
                  {"edge_values", o.edge_values}});
  const auto& g = plan.graph();
  const auto s = workspace(plan, 2, std::size_t(edge_slices(g.num_edges())) * da.size());
  const EdgeWork<Mem> work{s.slot(0), s.slot(1)};
  backward(exec, plan, problem(plan, NodeOutput<Mem>(), o), AdditiveV2Score<Mem>{XL, XR, a, model.slope},
           AdditiveV2Grad<Mem>{XL, XR, dOut, a, dXL, dXR, model.slope}, Upstream<Mem>{out, logsumexp, dOut}, work);
  sum_over_edges(exec, plan, WeightTerm<Mem>{work.dr, XL, XR, g.src(), g.dst(), model.slope}, s.extra(2),
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

#ifdef KOKKOS_ENABLE_SERIAL
DFGNN_INSTANTIATE(Kokkos::Serial)
#endif
#ifdef KOKKOS_ENABLE_OPENMP
DFGNN_INSTANTIATE(Kokkos::OpenMP)
#endif
#ifdef KOKKOS_ENABLE_THREADS
DFGNN_INSTANTIATE(Kokkos::Threads)
#endif
#ifdef KOKKOS_ENABLE_CUDA
DFGNN_INSTANTIATE(Kokkos::Cuda)
#endif

}  // namespace dfgnn
