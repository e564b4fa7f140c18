// Public entry -> checks -> strategy dispatch, instantiated for every enabled execution space.

#include "entry.hpp"
#include "online.hpp"
#include "pmf.hpp"
#include "smmf.hpp"
#include "unfused.hpp"

#include <dfgnn/attention.hpp>

namespace dfgnn {

namespace {

using namespace kokkos_impl;

constexpr const char* kEntry = "attention";

template <class Exec, class Score>
void dispatch(const Exec& exec, const Plan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
              const Score& score) {
  switch (plan.strategy()) {
    case Strategy::SMMF: return smmf(exec, plan, p, score);
    case Strategy::PMF: return pmf(exec, plan, p, score);
    case Strategy::Unfused: return unfused(exec, plan, p, score);
    case Strategy::Online: return online(exec, plan, p, score);
    default: break;
  }
  throw Error(std::string("attention: no portable kernel for strategy ") + to_string(plan.strategy()));
}

}  // namespace

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GT& model,
               const NodeFeatures<typename Exec::memory_space>& Q,
               const NodeFeatures<typename Exec::memory_space>& K,
               const NodeFeatures<typename Exec::memory_space>& V,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  const Checker<Exec> check(kEntry, plan, ScoreKind::GT);
  check.finite("GT::scale", model.scale);
  check.features("Q", Q), check.features("K", K), check.features("V", V), check.features("out", out);
  check.options(options);
  check.disjoint({{"out", out}, {"logsumexp", options.logsumexp}},
                 {{"Q", Q}, {"K", K}, {"V", V}, {"edge_values", options.edge_values}});
  const float scale = model.scale_for(plan.dim());
  if (run_native(exec, plan, options, [&](auto stream, const auto& native, const auto& o) {
        cuda::attention(stream, native, GT{scale}, Q.data(), K.data(), V.data(), out.data(), o);
      }))
    return;
  dispatch(exec, plan, problem(plan, out, options),
           GTScore<typename Exec::memory_space>{Q, K, V, scale});
}

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const AGNN&,
               const NodeFeatures<typename Exec::memory_space>& X,
               const HeadScalars<typename Exec::memory_space>& beta,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  const Checker<Exec> check(kEntry, plan, ScoreKind::AGNN);
  check.features("X", X), check.features("out", out), check.head_vector("beta", beta);
  check.options(options);
  check.disjoint({{"out", out}, {"logsumexp", options.logsumexp}},
                 {{"X", X}, {"beta", beta}, {"edge_values", options.edge_values}});
  if (run_native(exec, plan, options, [&](auto stream, const auto& native, const auto& o) {
        cuda::attention(stream, native, AGNN{}, X.data(), beta.data(), int(beta.extent(0)), out.data(), o);
      }))
    return;
  dispatch(exec, plan, problem(plan, out, options),
           AGNNScore<typename Exec::memory_space>{X, inverse_norms(exec, plan, X), beta});
}

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GAT& model,
               const NodeScalars<typename Exec::memory_space>& el,
               const NodeScalars<typename Exec::memory_space>& er,
               const NodeFeatures<typename Exec::memory_space>& V,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  const Checker<Exec> check(kEntry, plan, ScoreKind::GAT);
  check.finite("GAT::slope", model.slope);
  check.scalars("el", el), check.scalars("er", er), check.features("V", V), check.features("out", out);
  check.options(options);
  check.disjoint({{"out", out}, {"logsumexp", options.logsumexp}},
                 {{"el", el}, {"er", er}, {"V", V}, {"edge_values", options.edge_values}});
  if (run_native(exec, plan, options, [&](auto stream, const auto& native, const auto& o) {
        cuda::attention(stream, native, model, el.data(), er.data(), V.data(), out.data(), o);
      }))
    return;
  dispatch(exec, plan, problem(plan, out, options),
           GATScore<typename Exec::memory_space>{el, er, V, model.slope});
}

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GATv2& model,
               const NodeFeatures<typename Exec::memory_space>& XL,
               const NodeFeatures<typename Exec::memory_space>& XR,
               const HeadFeatures<typename Exec::memory_space>& a,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  const Checker<Exec> check(kEntry, plan, ScoreKind::GATv2);
  check.finite("GATv2::slope", model.slope);
  check.features("XL", XL), check.features("XR", XR), check.features("out", out);
  check.shape("a", a, {check.H, check.D}, "[H,D]");
  check.options(options);
  check.disjoint({{"out", out}, {"logsumexp", options.logsumexp}},
                 {{"XL", XL}, {"XR", XR}, {"a", a}, {"edge_values", options.edge_values}});
  if (run_native(exec, plan, options, [&](auto stream, const auto& native, const auto& o) {
        cuda::attention(stream, native, model, XL.data(), XR.data(), a.data(), out.data(), o);
      }))
    return;
  dispatch(exec, plan, problem(plan, out, options),
           GATv2Score<typename Exec::memory_space>{XL, XR, a, model.slope});
}

#define DFGNN_INSTANTIATE(EXEC)                                                                    \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const GT&,                          \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeOutput<EXEC::memory_space>&,                              \
                                const Options<EXEC::memory_space>&);                             \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const AGNN&,                        \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const HeadScalars<EXEC::memory_space>&,                             \
                                const NodeOutput<EXEC::memory_space>&,                              \
                                const Options<EXEC::memory_space>&);                             \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const GAT&,                         \
                                const NodeScalars<EXEC::memory_space>&,                             \
                                const NodeScalars<EXEC::memory_space>&,                             \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeOutput<EXEC::memory_space>&,                              \
                                const Options<EXEC::memory_space>&);                             \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const GATv2&,                       \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const NodeFeatures<EXEC::memory_space>&,                            \
                                const HeadFeatures<EXEC::memory_space>&,                            \
                                const NodeOutput<EXEC::memory_space>&,                              \
                                const Options<EXEC::memory_space>&);

DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_INSTANTIATE)

}  // namespace dfgnn
