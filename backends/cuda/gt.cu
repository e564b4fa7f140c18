// Entry for the GT score.
#include "attention.cuh"

namespace dfgnn::cuda {

void attention(cudaStream_t stream, const Plan& plan, const GT& model, const float* Q, const float* K,
               const float* V, float* out, const Options& o) {
  const std::size_t nf = std::size_t(plan.graph().num_nodes) * plan.heads() * plan.dim();
  detail::check_forward(plan, ScoreKind::GT, out, {{Q, nf, "Q", true}, {K, nf, "K", true}, {V, nf, "V", true}}, o);
  detail::run(stream, plan, detail::GTScore{Q, K, V, model.scale_for(plan.dim())}, o, out, detail::aligned16({Q, K, V}));
}

void attention_backward(cudaStream_t stream, const Plan& plan, const GT& model, const float* Q, const float* K,
                        const float* V, const float* out, const float* logsumexp, const float* dOut, float* dQ,
                        float* dK, float* dV, const Options& o) {
  const std::size_t ns = std::size_t(plan.graph().num_nodes) * plan.heads(), nf = ns * plan.dim();
  detail::check_backward(plan, ScoreKind::GT,
                            {{Q, nf, "Q", true}, {K, nf, "K", true}, {V, nf, "V", true}, {out, nf, "out", true},
                             {logsumexp, ns, "logsumexp", true}, {dOut, nf, "dOut", true}},
                            {{dQ, nf, "dQ", true}, {dK, nf, "dK", true}, {dV, nf, "dV", true}}, o);
  detail::run_backward(stream, plan, detail::GTScore{Q, K, V, model.scale_for(plan.dim())}, o, {out, logsumexp, dOut},
                       {dQ, dK, dV}, nullptr, 0, detail::aligned16({Q, K, V, out, dOut, dQ, dK, dV}));
}

}  // namespace dfgnn::cuda
