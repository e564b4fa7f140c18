// The CUDA C++ API's entries (include/dfgnn/cuda.hpp): the generic one describes its call on
// bare pointers as a Call and hands it to the dispatch, which checks it once and runs the plan;
// the typed ones call it.

#include <dfgnn/cuda.hpp>

#include <algorithm>

namespace dfgnn::cuda {

namespace {
constexpr const char* kForward = "cuda::attention";
constexpr const char* kBackward = "cuda::attention_backward";
}  // namespace

namespace {
/// Stamps the call's tensors with the caller's element type, for the check to compare with the
/// plan's (the logsumexp stays float32).
void stamp(Call& c, DType dtype) {
  for (TensorRef* t : {&c.inputs[0], &c.inputs[1], &c.inputs[2], &c.edge_values, &c.edge_features, &c.edge_grad,
                       &c.out, &c.weights, &c.dout, &c.grads[0], &c.grads[1], &c.grads[2]})
    t->dtype = dtype;
}
}  // namespace

void detail::attention(cudaStream_t stream, const Plan& plan, ScoreKind kind, float param, DType dtype,
                       const void* const* inputs, std::size_t count, void* out, const Options& o) {
  Call c = dfgnn::detail::pointer_call(plan.op(), kind, inputs, count, o.edge_values.data, o.edge_values.heads,
                                       o.dropout, o.edge_features, o.edge_shape);
  c.param = param;
  c.stream = stream;
  dfgnn::detail::set_outputs(c, plan.op(), out, o.logsumexp, o.attention_weights);
  stamp(c, dtype);
  dfgnn::detail::forward(kForward, plan, kind, c);
}

void detail::attention_backward(cudaStream_t stream, const Plan& plan, ScoreKind kind, float param, DType dtype,
                                const void* const* inputs, std::size_t count, const void* out,
                                const float* logsumexp, const void* dOut, void* const* grads, const Options& o) {
  Call c = dfgnn::detail::pointer_call(plan.op(), kind, inputs, count, o.edge_values.data, o.edge_values.heads,
                                       o.dropout, o.edge_features, o.edge_shape);
  c.param = param;
  c.backward_order = o.backward_order;
  c.stream = stream;
  dfgnn::detail::set_upstream(c, plan.op(), kind, out, logsumexp, dOut, grads, o.edge_grad);
  stamp(c, dtype);
  dfgnn::detail::backward(kBackward, plan, kind, c);
}

void attention(cudaStream_t stream, const Plan& plan, const GT& model, const float* Q, const float* K, const float* V,
               float* out, const Options& o) {
  attention(stream, plan, model, {Q, K, V}, out, o);
}

void attention(cudaStream_t stream, const Plan& plan, const AGNN& model, const float* X, const float* beta,
               int beta_count, float* out, const Options& o) {
  attention(stream, plan, model, {X, beta}, out, o, std::size_t(std::max(0, beta_count)));
}

void attention(cudaStream_t stream, const Plan& plan, const AGNN& model, const float* X, const float* beta,
               int beta_count, const float* X_dst, float* out, const Options& o) {
  attention(stream, plan, model, {X, beta, X_dst}, out, o, std::size_t(std::max(0, beta_count)));
}

void attention(cudaStream_t stream, const Plan& plan, const GAT& model, const float* el, const float* er,
               const float* V, float* out, const Options& o) {
  attention(stream, plan, model, {el, er, V}, out, o);
}

void attention(cudaStream_t stream, const Plan& plan, const GATv2& model, const float* XL, const float* XR,
               const float* a, float* out, const Options& o) {
  attention(stream, plan, model, {XL, XR, a}, out, o);
}

void attention_backward(cudaStream_t stream, const Plan& plan, const GT& model, const float* Q, const float* K,
                        const float* V, const float* out, const float* logsumexp, const float* dOut, float* dQ,
                        float* dK, float* dV, const Options& o) {
  attention_backward(stream, plan, model, {Q, K, V}, out, logsumexp, dOut, {dQ, dK, dV}, o);
}

void attention_backward(cudaStream_t stream, const Plan& plan, const AGNN& model, const float* X, const float* beta,
                        int beta_count, const float* out, const float* logsumexp, const float* dOut, float* dX,
                        float* dbeta, const Options& o) {
  attention_backward(stream, plan, model, {X, beta}, out, logsumexp, dOut, {dX, dbeta}, o,
                     std::size_t(std::max(0, beta_count)));
}

void attention_backward(cudaStream_t stream, const Plan& plan, const AGNN& model, const float* X, const float* beta,
                        int beta_count, const float* X_dst, const float* out, const float* logsumexp,
                        const float* dOut, float* dX, float* dbeta, float* dX_dst, const Options& o) {
  attention_backward(stream, plan, model, {X, beta, X_dst}, out, logsumexp, dOut, {dX, dbeta, dX_dst}, o,
                     std::size_t(std::max(0, beta_count)));
}

void attention_backward(cudaStream_t stream, const Plan& plan, const GAT& model, const float* el, const float* er,
                        const float* V, const float* out, const float* logsumexp, const float* dOut, float* del,
                        float* der, float* dV, const Options& o) {
  attention_backward(stream, plan, model, {el, er, V}, out, logsumexp, dOut, {del, der, dV}, o);
}

void attention_backward(cudaStream_t stream, const Plan& plan, const GATv2& model, const float* XL, const float* XR,
                        const float* a, const float* out, const float* logsumexp, const float* dOut, float* dXL,
                        float* dXR, float* da, const Options& o) {
  attention_backward(stream, plan, model, {XL, XR, a}, out, logsumexp, dOut, {dXL, dXR, da}, o);
}

}  // namespace dfgnn::cuda
