// Entry for the AGNN score.
#include "attention.cuh"

namespace dfgnn::cuda {

namespace {

void check_beta_count(const Plan& plan, int beta_count, const char* where) {
  if (beta_count != 1 && beta_count != plan.heads())
    throw Error(std::string(where) + "(agnn): beta_count is " + std::to_string(beta_count) + ", expected 1 or " +
                std::to_string(plan.heads()));
}

}  // namespace

void attention(cudaStream_t stream, const Plan& plan, const AGNN&, const float* X, const float* beta,
               int beta_count, float* out, const Options& o) {
  check_beta_count(plan, beta_count, "cuda::attention");
  const std::size_t nf = std::size_t(plan.graph().num_nodes) * plan.heads() * plan.dim();
  detail::check_forward(plan, ScoreKind::AGNN, out, {{X, nf, "X", true}, {beta, std::size_t(beta_count), "beta", true}}, o);
  detail::run(stream, plan, detail::AGNNScore{X, X, beta, beta_count}, o, out, detail::aligned16({X}));
}

void attention_backward(cudaStream_t stream, const Plan& plan, const AGNN&, const float* X, const float* beta,
                        int beta_count, const float* out, const float* logsumexp, const float* dOut, float* dX,
                        float* dbeta, const Options& o) {
  check_beta_count(plan, beta_count, "cuda::attention_backward");
  const std::size_t ns = std::size_t(plan.graph().num_nodes) * plan.heads(), nf = ns * plan.dim(),
                    nb = std::size_t(beta_count);
  detail::check_backward(plan, ScoreKind::AGNN,
                            {{X, nf, "X", true}, {beta, nb, "beta", true}, {out, nf, "out", true},
                             {logsumexp, ns, "logsumexp", true}, {dOut, nf, "dOut", true}},
                            {{dX, nf, "dX", true}, {dbeta, nb, "dbeta", true}}, o);
  detail::run_backward(stream, plan, detail::AGNNScore{X, X, beta, beta_count}, o, {out, logsumexp, dOut},
                       {dX, dX, nullptr}, dbeta, beta_count, detail::aligned16({X, out, dOut, dX}));
}

}  // namespace dfgnn::cuda
