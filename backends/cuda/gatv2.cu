// Entry for the GATv2 score.
#include "attention.cuh"

namespace dfgnn::cuda {

void attention(cudaStream_t stream, const Plan& plan, const GATv2& model, const float* XL, const float* XR,
               const float* a, float* out, const Options& o) {
  const std::size_t nf = std::size_t(plan.graph().num_nodes) * plan.heads() * plan.dim();
  detail::validate(plan, ScoreKind::GATv2, out,
                   {{XL, nf, "XL", true}, {XR, nf, "XR", true},
                    {a, std::size_t(plan.heads()) * plan.dim(), "a", true}}, o);
  detail::run(stream, plan, detail::GATv2Score{XL, XL, XR, a, model.slope}, o, out,
              detail::aligned16({XL, XR, a}));
}

}  // namespace dfgnn::cuda
