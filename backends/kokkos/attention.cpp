// The portable executor's forward: a checked call's score functor, then the plan's strategy's
// kernel family. Instantiated for every enabled execution space.

#include "executor.hpp"
#include "online.hpp"
#include "pmf.hpp"
#include "smmf.hpp"
#include "unfused.hpp"

namespace dfgnn {

namespace kokkos_impl {

namespace {

template <class Exec, class Score>
void dispatch(const Exec& exec, const PortablePlan<Exec>& plan, const Problem<typename Exec::memory_space>& p,
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
void PortablePlan<Exec>::forward(const Call& call) const {
  using Mem = memory_space;
  const Exec& exec = *static_cast<const Exec*>(call.space);
  const CallViews<Mem> t{call};
  const Problem<Mem> p = problem(*this, t.output(call.out), t.options(true));
  switch (op_.kind) {
    case ScoreKind::GT:
      return dispatch(exec, *this, p, GTScore<Mem>{t.input(0), t.input(1), t.input(2), GT{call.param}.scale_for(dim())});
    case ScoreKind::AGNN: {
      const Features<Mem> X = t.input(0);
      return dispatch(exec, *this, p, AGNNScore<Mem>{X, inverse_norms(exec, *this, X), t.vector(call.inputs[1])});
    }
    case ScoreKind::GAT:
      return dispatch(exec, *this, p, GATScore<Mem>{t.input_matrix(0), t.input_matrix(1), t.input(2), call.param});
    case ScoreKind::GATv2:
      return dispatch(exec, *this, p, GATv2Score<Mem>{t.input(0), t.input(1), t.input_matrix(2), call.param});
  }
}

}  // namespace kokkos_impl

template <class Exec>
std::shared_ptr<const detail::Executor> detail::portable_executor(const Plan<Exec>& plan, Strategy strategy) {
  return std::make_shared<const kokkos_impl::PortablePlan<Exec>>(plan, strategy);
}

#define DFGNN_INSTANTIATE(EXEC)                                                                           \
  template void kokkos_impl::PortablePlan<EXEC>::forward(const Call&) const;                             \
  template std::shared_ptr<const detail::Executor> detail::portable_executor<EXEC>(const Plan<EXEC>&, \
                                                                                   Strategy);

DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_INSTANTIATE)

}  // namespace dfgnn
