// Entry for the GT score.
#include "attention.cuh"

#include <cmath>

namespace dfgnn::cuda {

void attention(cudaStream_t stream, const Plan& plan, const GT& model, const float* Q, const float* K,
               const float* V, float* out, const Options& o) {
  const std::size_t nf = std::size_t(plan.graph().num_nodes) * plan.heads() * plan.dim();
  detail::validate(plan, ScoreKind::GT, out, {{Q, nf, "Q", true}, {K, nf, "K", true}, {V, nf, "V", true}}, o);
  const float scale = model.scale != 0.f ? model.scale : 1.f / std::sqrt(float(plan.dim()));
  detail::run(stream, plan, detail::GTScore{Q, K, V, scale}, o, out, detail::aligned16({Q, K, V}));
}

}  // namespace dfgnn::cuda
