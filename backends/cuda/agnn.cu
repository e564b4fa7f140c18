// Entry for the AGNN score.
#include "attention.cuh"

namespace dfgnn::cuda {

void attention(cudaStream_t stream, const Plan& plan, const AGNN&, const float* X, const float* beta,
               int beta_count, float* out, const Options& o) {
  if (beta_count != 1 && beta_count != plan.heads())
    throw Error("cuda::attention(agnn): beta_count is " + std::to_string(beta_count) + ", expected 1 or " +
                std::to_string(plan.heads()));
  const std::size_t nf = std::size_t(plan.graph().num_nodes) * plan.heads() * plan.dim();
  detail::validate(plan, ScoreKind::AGNN, out, {{X, nf, "X", true}, {beta, std::size_t(beta_count), "beta", true}}, o);
  detail::run(stream, plan, detail::AGNNScore{X, X, beta, beta_count}, o, out, detail::aligned16({X}));
}

}  // namespace dfgnn::cuda
