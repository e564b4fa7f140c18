// The portable executor's forward: a checked call's score functor, then the plan's strategy's
// kernel family. Instantiated for every enabled execution space.

#include "executor.hpp"
#include "spaces.hpp"
#include "online.hpp"
#include "pmf.hpp"
#include "sddmm.hpp"
#include "smmf.hpp"
#include "unfused.hpp"

namespace dfgnn {

namespace kokkos_impl {

namespace {

// The plan's strategy; two-byte elements run Online only (the plan saw to it:
// detail::element_strategy), so the other families are built for float alone.
template <class Exec, class Score>
void dispatch(const Exec& exec, const PortablePlan<Exec>& plan,
              const Problem<typename Exec::memory_space, typename Score::element>& p, const Score& score) {
  if constexpr (std::is_same_v<typename Score::element, float>) {
    switch (plan.strategy()) {
      case Strategy::SMMF: return smmf(exec, plan, p, score);
      case Strategy::PMF: return pmf(exec, plan, p, score);
      case Strategy::Unfused: return unfused(exec, plan, p, score);
      default: break;
    }
  }
  if (plan.strategy() == Strategy::Online) return online(exec, plan, p, score);
  throw Error(std::string("attention: no portable kernel for strategy ") + to_string(plan.strategy()));
}

}  // namespace

template <class Exec>
void PortablePlan<Exec>::forward(const Call& call) const {
  using Mem = memory_space;
  const Exec& exec = *static_cast<const Exec*>(call.space);
  with_element(op_.dtype, [&](auto element) {
    using T = decltype(element);
    const CallViews<Mem, T> t{call};
    const Problem<Mem, T> p = problem(*this, t.output(call.out), t.options(true));
    visit_model(op_.kind, [&](auto model) {
      const auto score = score_of(with_param<decltype(model)>(call.param), exec, *this, t);
      dispatch(exec, *this, p, score);
      if (call.weights.data) edge_weights(exec, *this, p, score, t.scalars_out(call.weights));
    });
  });
}

}  // namespace kokkos_impl

template <class Exec>
std::unique_ptr<detail::Builder> detail::portable_builder(const Exec& exec,
                                                          const Graph<typename Exec::memory_space>& graph,
                                                          const Op& op) {
  return std::make_unique<kokkos_impl::LayoutBuilder<Exec>>(exec, graph, op);
}

#define DFGNN_INSTANTIATE(EXEC)                                                        \
  template void kokkos_impl::PortablePlan<EXEC>::forward(const Call&) const;          \
  template std::unique_ptr<detail::Builder> detail::portable_builder<EXEC>(           \
      const EXEC&, const Graph<EXEC::memory_space>&, const Op&);

DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_INSTANTIATE)

}  // namespace dfgnn
