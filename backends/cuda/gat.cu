// Entry for the GAT score.
#include "attention.cuh"

namespace dfgnn::cuda {

void attention(cudaStream_t stream, const Plan& plan, const GAT& model, const float* el, const float* er,
               const float* V, float* out, const Options& o) {
  const std::size_t ns = std::size_t(plan.graph().num_nodes) * plan.heads();
  detail::validate(plan, ScoreKind::GAT, out,
                   {{el, ns, "el", true}, {er, ns, "er", true}, {V, ns * plan.dim(), "V", true}}, o);
  detail::run(stream, plan, detail::GATScore{el, er, V, model.slope}, o, out, detail::aligned16({V}));
}

}  // namespace dfgnn::cuda
