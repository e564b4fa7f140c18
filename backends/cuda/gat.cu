// Entry for the GAT score.
#include "attention.cuh"

namespace dfgnn::cuda {

void attention(cudaStream_t stream, const Plan& plan, const GAT& model, const float* el, const float* er,
               const float* V, float* out, const Options& o) {
  const std::size_t ns = std::size_t(plan.graph().num_nodes) * plan.heads();
  detail::check_forward(plan, ScoreKind::GAT, out,
                   {{el, ns, "el", true}, {er, ns, "er", true}, {V, ns * plan.dim(), "V", true}}, o);
  detail::run(stream, plan, detail::GATScore{el, er, V, model.slope}, o, out, detail::aligned16({V}));
}

void attention_backward(cudaStream_t stream, const Plan& plan, const GAT& model, const float* el, const float* er,
                        const float* V, const float* out, const float* logsumexp, const float* dOut, float* del,
                        float* der, float* dV, const Options& o) {
  const std::size_t ns = std::size_t(plan.graph().num_nodes) * plan.heads(), nf = ns * plan.dim();
  detail::check_backward(plan, ScoreKind::GAT,
                            {{el, ns, "el", true}, {er, ns, "er", true}, {V, nf, "V", true}, {out, nf, "out", true},
                             {logsumexp, ns, "logsumexp", true}, {dOut, nf, "dOut", true}},
                            {{del, ns, "del", true}, {der, ns, "der", true}, {dV, nf, "dV", true}}, o);
  detail::run_backward(stream, plan, detail::GATScore{el, er, V, model.slope}, o, {out, logsumexp, dOut},
                       {der, del, dV}, nullptr, 0, detail::aligned16({V, out, dOut, dV}));
}

}  // namespace dfgnn::cuda
