// Entry for the GATv2 score.
#include "attention.cuh"

namespace dfgnn::cuda {

void attention(cudaStream_t stream, const Plan& plan, const GATv2& model, const float* XL, const float* XR,
               const float* a, float* out, const Options& o) {
  const std::size_t nf = std::size_t(plan.graph().num_nodes) * plan.heads() * plan.dim();
  detail::check_forward(plan, ScoreKind::GATv2, out,
                   {{XL, nf, "XL", true}, {XR, nf, "XR", true},
                    {a, std::size_t(plan.heads()) * plan.dim(), "a", true}}, o);
  detail::run(stream, plan, detail::GATv2Score{XL, XL, XR, a, model.slope}, o, out,
              detail::aligned16({XL, XR, a}));
}

void attention_backward(cudaStream_t stream, const Plan& plan, const GATv2& model, const float* XL, const float* XR,
                        const float* a, const float* out, const float* logsumexp, const float* dOut, float* dXL,
                        float* dXR, float* da, const Options& o) {
  const std::size_t ns = std::size_t(plan.graph().num_nodes) * plan.heads(), nf = ns * plan.dim(),
                    na = std::size_t(plan.heads()) * plan.dim();
  detail::check_backward(plan, ScoreKind::GATv2,
                            {{XL, nf, "XL", true}, {XR, nf, "XR", true}, {a, na, "a", true}, {out, nf, "out", true},
                             {logsumexp, ns, "logsumexp", true}, {dOut, nf, "dOut", true}},
                            {{dXL, nf, "dXL", true}, {dXR, nf, "dXR", true}, {da, na, "da", true}}, o);
  detail::run_backward(stream, plan, detail::GATv2Score{XL, XL, XR, a, model.slope}, o, {out, logsumexp, dOut},
                       {dXR, dXL, nullptr}, da, int(na), detail::aligned16({XL, XR, a, out, dOut, dXL, dXR, da}));
}

}  // namespace dfgnn::cuda
