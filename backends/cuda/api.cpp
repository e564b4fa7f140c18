// The CUDA C++ API's typed entries (include/dfgnn/cuda.hpp): each describes its call on bare
// pointers as a Call and hands it to the dispatch, which checks it once and runs the plan.

#include <dfgnn/cuda.hpp>

namespace dfgnn::cuda {

namespace {

using dfgnn::detail::pointer_call;
using dfgnn::detail::set_outputs;
using dfgnn::detail::set_upstream;

constexpr const char* kForward = "cuda::attention";
constexpr const char* kBackward = "cuda::attention_backward";

// A call of `model` on `stream` with o's edge values, dropout and order; `count`: a
// HeadVector input's entries.
Call call_of(cudaStream_t stream, const Plan& plan, ScoreKind model, std::initializer_list<const float*> inputs,
             const Options& o, float param, std::size_t count = 0) {
  Call c = pointer_call(plan.op(), model, inputs.begin(), count, o.edge_values.data, o.edge_values.heads, o.dropout);
  c.param = param;
  c.backward_order = o.backward_order;
  c.stream = stream;
  return c;
}

void forward(const Plan& plan, ScoreKind model, Call c, float* out, const Options& o) {
  set_outputs(c, plan.op(), out, o.logsumexp);
  dfgnn::detail::forward(kForward, plan, model, c);
}

void backward(const Plan& plan, ScoreKind model, Call c, const float* out, const float* logsumexp, const float* dOut,
              std::initializer_list<float*> grads) {
  set_upstream(c, plan.op(), model, out, logsumexp, dOut, grads.begin());
  dfgnn::detail::backward(kBackward, plan, model, c);
}

}  // namespace

void attention(cudaStream_t stream, const Plan& plan, const GT& model, const float* Q, const float* K, const float* V,
               float* out, const Options& o) {
  forward(plan, ScoreKind::GT, call_of(stream, plan, ScoreKind::GT, {Q, K, V}, o, model.scale), out, o);
}

void attention(cudaStream_t stream, const Plan& plan, const AGNN&, const float* X, const float* beta, int beta_count,
               float* out, const Options& o) {
  forward(plan, ScoreKind::AGNN, call_of(stream, plan, ScoreKind::AGNN, {X, beta}, o, 0, std::size_t(beta_count)),
          out, o);
}

void attention(cudaStream_t stream, const Plan& plan, const GAT& model, const float* el, const float* er,
               const float* V, float* out, const Options& o) {
  forward(plan, ScoreKind::GAT, call_of(stream, plan, ScoreKind::GAT, {el, er, V}, o, model.slope), out, o);
}

void attention(cudaStream_t stream, const Plan& plan, const GATv2& model, const float* XL, const float* XR,
               const float* a, float* out, const Options& o) {
  forward(plan, ScoreKind::GATv2, call_of(stream, plan, ScoreKind::GATv2, {XL, XR, a}, o, model.slope), out, o);
}

void attention_backward(cudaStream_t stream, const Plan& plan, const GT& model, const float* Q, const float* K,
                        const float* V, const float* out, const float* logsumexp, const float* dOut, float* dQ,
                        float* dK, float* dV, const Options& o) {
  backward(plan, ScoreKind::GT, call_of(stream, plan, ScoreKind::GT, {Q, K, V}, o, model.scale), out, logsumexp, dOut,
           {dQ, dK, dV});
}

void attention_backward(cudaStream_t stream, const Plan& plan, const AGNN&, const float* X, const float* beta,
                        int beta_count, const float* out, const float* logsumexp, const float* dOut, float* dX,
                        float* dbeta, const Options& o) {
  backward(plan, ScoreKind::AGNN, call_of(stream, plan, ScoreKind::AGNN, {X, beta}, o, 0, std::size_t(beta_count)),
           out, logsumexp, dOut, {dX, dbeta});
}

void attention_backward(cudaStream_t stream, const Plan& plan, const GAT& model, const float* el, const float* er,
                        const float* V, const float* out, const float* logsumexp, const float* dOut, float* del,
                        float* der, float* dV, const Options& o) {
  backward(plan, ScoreKind::GAT, call_of(stream, plan, ScoreKind::GAT, {el, er, V}, o, model.slope), out, logsumexp,
           dOut, {del, der, dV});
}

void attention_backward(cudaStream_t stream, const Plan& plan, const GATv2& model, const float* XL, const float* XR,
                        const float* a, const float* out, const float* logsumexp, const float* dOut, float* dXL,
                        float* dXR, float* da, const Options& o) {
  backward(plan, ScoreKind::GATv2, call_of(stream, plan, ScoreKind::GATv2, {XL, XR, a}, o, model.slope), out,
           logsumexp, dOut, {dXL, dXR, da});
}

}  // namespace dfgnn::cuda
