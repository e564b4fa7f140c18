// The Kokkos API's typed entries (include/dfgnn/attention.hpp, backward.hpp): each describes
// its call on Views as a Call and hands it to the dispatch, which checks it once and runs the
// plan's executor (the portable kernels, or the CUDA-native ones on Kokkos::Cuda).
// Instantiated for every enabled execution space.

#include <dfgnn/backward.hpp>
#include <dfgnn/dispatch.hpp>

#include <initializer_list>

namespace dfgnn {

namespace {

constexpr const char* kForward = "attention";
constexpr const char* kBackward = "attention_backward";

/// A View as a call's tensor: its data, extents and whether it has gaps (the kernels index
/// every tensor densely). Extents, not size(): Kokkos 4.6 reports size() 0 for an unmanaged
/// View made on a null pointer, whatever its extents.
template <class View>
TensorRef tensor_ref(const View& v) {
  TensorRef t;
  t.data = v.data();
  t.rank = int(View::rank);
  for (int r = 0; r < t.rank; ++r) t.extents[r] = v.extent(r);
  t.strided = v.span() != t.entries();
  return t;
}

/// A call on `exec` (a Kokkos::Cuda's stream too, for the native executor) with the options'
/// edge values and dropout.
template <class Exec>
Call call_on(const Exec& exec, std::initializer_list<TensorRef> inputs, const Options<typename Exec::memory_space>& o) {
  Call c;
  c.space = &exec;
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) c.stream = exec.cuda_stream();
#endif
  int i = 0;
  for (const TensorRef& t : inputs) c.inputs[i++] = t;
  if (o.edge_values.data() || o.edge_values.extent(0) * o.edge_values.extent(1) > 0)
    c.edge_values = tensor_ref(o.edge_values);
  c.dropout = o.dropout;
  return c;
}

template <class Exec, class Model>
void forward(const Plan<Exec>& plan, const Model&, Call c, const NodeOutput<typename Exec::memory_space>& out,
             const Options<typename Exec::memory_space>& o) {
  c.out = tensor_ref(out);
  if (o.logsumexp.data() || o.logsumexp.extent(0) * o.logsumexp.extent(1) > 0) c.logsumexp = tensor_ref(o.logsumexp);
  detail::forward(kForward, plan.executor(), Model::kind, c);
}

template <class Exec, class Model>
void backward(const Plan<Exec>& plan, const Model&, Call c, const NodeFeatures<typename Exec::memory_space>& out,
              const NodeScalars<typename Exec::memory_space>& logsumexp,
              const NodeFeatures<typename Exec::memory_space>& dOut, std::initializer_list<TensorRef> grads) {
  c.out = tensor_ref(out), c.logsumexp = tensor_ref(logsumexp), c.dout = tensor_ref(dOut);
  int i = 0;
  for (const TensorRef& g : grads) c.grads[i++] = g;
  detail::backward(kBackward, plan.executor(), Model::kind, c);
}

}  // namespace

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GT& model,
               const NodeFeatures<typename Exec::memory_space>& Q, const NodeFeatures<typename Exec::memory_space>& K,
               const NodeFeatures<typename Exec::memory_space>& V, const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  Call c = call_on(exec, {tensor_ref(Q), tensor_ref(K), tensor_ref(V)}, options);
  c.param = model.scale;
  forward(plan, model, c, out, options);
}

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const AGNN& model,
               const NodeFeatures<typename Exec::memory_space>& X, const HeadScalars<typename Exec::memory_space>& beta,
               const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  forward(plan, model, call_on(exec, {tensor_ref(X), tensor_ref(beta)}, options), out, options);
}

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GAT& model,
               const NodeScalars<typename Exec::memory_space>& el, const NodeScalars<typename Exec::memory_space>& er,
               const NodeFeatures<typename Exec::memory_space>& V, const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  Call c = call_on(exec, {tensor_ref(el), tensor_ref(er), tensor_ref(V)}, options);
  c.param = model.slope;
  forward(plan, model, c, out, options);
}

template <class Exec>
void attention(const Exec& exec, const Plan<Exec>& plan, const GATv2& model,
               const NodeFeatures<typename Exec::memory_space>& XL,
               const NodeFeatures<typename Exec::memory_space>& XR,
               const HeadFeatures<typename Exec::memory_space>& a, const NodeOutput<typename Exec::memory_space>& out,
               const Options<typename Exec::memory_space>& options) {
  Call c = call_on(exec, {tensor_ref(XL), tensor_ref(XR), tensor_ref(a)}, options);
  c.param = model.slope;
  forward(plan, model, c, out, options);
}

template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const GT& model,
                        const NodeFeatures<typename Exec::memory_space>& Q,
                        const NodeFeatures<typename Exec::memory_space>& K,
                        const NodeFeatures<typename Exec::memory_space>& V,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeOutput<typename Exec::memory_space>& dQ,
                        const NodeOutput<typename Exec::memory_space>& dK,
                        const NodeOutput<typename Exec::memory_space>& dV,
                        const Options<typename Exec::memory_space>& options) {
  Call c = call_on(exec, {tensor_ref(Q), tensor_ref(K), tensor_ref(V)}, options);
  c.param = model.scale;
  backward(plan, model, c, out, logsumexp, dOut, {tensor_ref(dQ), tensor_ref(dK), tensor_ref(dV)});
}

template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const AGNN& model,
                        const NodeFeatures<typename Exec::memory_space>& X,
                        const HeadScalars<typename Exec::memory_space>& beta,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeOutput<typename Exec::memory_space>& dX,
                        const HeadScalarsOutput<typename Exec::memory_space>& dbeta,
                        const Options<typename Exec::memory_space>& options) {
  backward(plan, model, call_on(exec, {tensor_ref(X), tensor_ref(beta)}, options), out, logsumexp, dOut,
           {tensor_ref(dX), tensor_ref(dbeta)});
}

template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const GAT& model,
                        const NodeScalars<typename Exec::memory_space>& el,
                        const NodeScalars<typename Exec::memory_space>& er,
                        const NodeFeatures<typename Exec::memory_space>& V,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeScalarsOutput<typename Exec::memory_space>& del,
                        const NodeScalarsOutput<typename Exec::memory_space>& der,
                        const NodeOutput<typename Exec::memory_space>& dV,
                        const Options<typename Exec::memory_space>& options) {
  Call c = call_on(exec, {tensor_ref(el), tensor_ref(er), tensor_ref(V)}, options);
  c.param = model.slope;
  backward(plan, model, c, out, logsumexp, dOut, {tensor_ref(del), tensor_ref(der), tensor_ref(dV)});
}

template <class Exec>
void attention_backward(const Exec& exec, const Plan<Exec>& plan, const GATv2& model,
                        const NodeFeatures<typename Exec::memory_space>& XL,
                        const NodeFeatures<typename Exec::memory_space>& XR,
                        const HeadFeatures<typename Exec::memory_space>& a,
                        const NodeFeatures<typename Exec::memory_space>& out,
                        const NodeScalars<typename Exec::memory_space>& logsumexp,
                        const NodeFeatures<typename Exec::memory_space>& dOut,
                        const NodeOutput<typename Exec::memory_space>& dXL,
                        const NodeOutput<typename Exec::memory_space>& dXR,
                        const HeadFeaturesOutput<typename Exec::memory_space>& da,
                        const Options<typename Exec::memory_space>& options) {
  Call c = call_on(exec, {tensor_ref(XL), tensor_ref(XR), tensor_ref(a)}, options);
  c.param = model.slope;
  backward(plan, model, c, out, logsumexp, dOut, {tensor_ref(dXL), tensor_ref(dXR), tensor_ref(da)});
}

#define DFGNN_INSTANTIATE(EXEC)                                                                                     \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const GT&, const NodeFeatures<EXEC::memory_space>&, \
                                const NodeFeatures<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,   \
                                const NodeOutput<EXEC::memory_space>&, const Options<EXEC::memory_space>&);         \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const AGNN&, const NodeFeatures<EXEC::memory_space>&, \
                                const HeadScalars<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,      \
                                const Options<EXEC::memory_space>&);                                                \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const GAT&, const NodeScalars<EXEC::memory_space>&, \
                                const NodeScalars<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,    \
                                const NodeOutput<EXEC::memory_space>&, const Options<EXEC::memory_space>&);         \
  template void attention<EXEC>(const EXEC&, const Plan<EXEC>&, const GATv2&,                                       \
                                const NodeFeatures<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,   \
                                const HeadFeatures<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,     \
                                const Options<EXEC::memory_space>&);                                                \
  template void attention_backward<EXEC>(                                                                           \
      const EXEC&, const Plan<EXEC>&, const GT&, const NodeFeatures<EXEC::memory_space>&,                           \
      const NodeFeatures<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,                             \
      const NodeFeatures<EXEC::memory_space>&, const NodeScalars<EXEC::memory_space>&,                              \
      const NodeFeatures<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,                               \
      const NodeOutput<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,                                 \
      const Options<EXEC::memory_space>&);                                                                          \
  template void attention_backward<EXEC>(                                                                           \
      const EXEC&, const Plan<EXEC>&, const AGNN&, const NodeFeatures<EXEC::memory_space>&,                         \
      const HeadScalars<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,                              \
      const NodeScalars<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,                              \
      const NodeOutput<EXEC::memory_space>&, const HeadScalarsOutput<EXEC::memory_space>&,                          \
      const Options<EXEC::memory_space>&);                                                                          \
  template void attention_backward<EXEC>(                                                                           \
      const EXEC&, const Plan<EXEC>&, const GAT&, const NodeScalars<EXEC::memory_space>&,                           \
      const NodeScalars<EXEC::memory_space>&, const NodeFeatures<EXEC::memory_space>&,                              \
      const NodeFeatures<EXEC::memory_space>&, const NodeScalars<EXEC::memory_space>&,                              \
      const NodeFeatures<EXEC::memory_space>&, const NodeScalarsOutput<EXEC::memory_space>&,                        \
      const NodeScalarsOutput<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,                          \
      const Options<EXEC::memory_space>&);                                                                          \
  template void attention_backward<EXEC>(                                                                           \
      const EXEC&, const Plan<EXEC>&, const GATv2&, const NodeFeatures<EXEC::memory_space>&,                        \
      const NodeFeatures<EXEC::memory_space>&, const HeadFeatures<EXEC::memory_space>&,                             \
      const NodeFeatures<EXEC::memory_space>&, const NodeScalars<EXEC::memory_space>&,                              \
      const NodeFeatures<EXEC::memory_space>&, const NodeOutput<EXEC::memory_space>&,                               \
      const NodeOutput<EXEC::memory_space>&, const HeadFeaturesOutput<EXEC::memory_space>&,                         \
      const Options<EXEC::memory_space>&);

DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_INSTANTIATE)

}  // namespace dfgnn
