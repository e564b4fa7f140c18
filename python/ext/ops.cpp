// dfgnn._ops: the native half of the Python ops (docs/python.md, "Per-call overhead"), a
// PyTorch extension. The Python functions check the user's arguments; this module allocates
// out and logsumexp, makes the call through the C ABI (dfgnn_forward / dfgnn_backward, whose
// addresses Python hands over from the library it loaded) and, when autograd records the
// call, makes the backward node in C++: a torch.autograd.Function costs ~10 us a call in
// Python, more than the kernels of a small graph.

#include "dfgnn_capi.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/extension.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

// The C ABI functions this module calls, bound once by Python (dfgnn._lib).
struct Natives {
  int (*forward)(const dfgnn_plan*, intptr_t, const dfgnn_call*) = nullptr;
  int (*backward)(const dfgnn_plan*, intptr_t, const dfgnn_call*) = nullptr;
  const char* (*last_error)() = nullptr;
  void (*plan_free)(dfgnn_plan*) = nullptr;
} natives;

void bind(int64_t forward, int64_t backward, int64_t last_error, int64_t plan_free) {
  natives.forward = reinterpret_cast<decltype(natives.forward)>(forward);
  natives.backward = reinterpret_cast<decltype(natives.backward)>(backward);
  natives.last_error = reinterpret_cast<decltype(natives.last_error)>(last_error);
  natives.plan_free = reinterpret_cast<decltype(natives.plan_free)>(plan_free);
}

// PyTorch's CUDA allocator (the caching one, on the current device and stream) for the
// library's graphs and plans (dfgnn_set_device_allocator): no cudaMalloc, and no cudaFree that
// waits for the whole device, per batch. Reached through c10's registry, so this module links no
// CUDA library.
void* torch_allocate(size_t bytes) {
  return c10::GetAllocator(c10::DeviceType::CUDA)->raw_allocate(bytes);
}
void torch_deallocate(void* p) { c10::GetAllocator(c10::DeviceType::CUDA)->raw_deallocate(p); }

// A native call's failure as Python sees it: ValueError for a user error (status 1), else
// RuntimeError, with the library's message.
void check(int status) {
  if (status == 0) return;
  const std::string message = natives.last_error();
  TORCH_CHECK_VALUE(status != 1, message);
  TORCH_CHECK(false, message);
}

// A plan handle and what each call needs of it: its sizes, and the tensors it reads that Python
// made (a CUDA plan's graph arrays, the dropout ids). It frees the handle when the last of the Graph's cache and
// the backward nodes that use it lets go.
struct PlanState {
  dfgnn_plan* handle;
  std::vector<at::Tensor> arrays;
  int64_t nodes, heads, dim;

  PlanState(dfgnn_plan* handle, std::vector<at::Tensor> arrays, int64_t nodes, int64_t heads, int64_t dim)
      : handle(handle), arrays(std::move(arrays)), nodes(nodes), heads(heads), dim(dim) {}
  PlanState(const PlanState&) = delete;
  PlanState& operator=(const PlanState&) = delete;
  ~PlanState() { natives.plan_free(handle); }
};

struct Plan {
  std::shared_ptr<const PlanState> state;
};

Plan make_plan(int64_t handle, std::vector<at::Tensor> arrays, int64_t nodes, int64_t heads, int64_t dim) {
  return {std::make_shared<const PlanState>(reinterpret_cast<dfgnn_plan*>(handle), std::move(arrays), nodes, heads,
                                            dim)};
}

// The current stream of t's device, as PyTorch's own CUDA ops find it (0 on the CPU).
intptr_t stream_of(const at::Tensor& t) {
  if (!t.is_cuda()) return 0;
  const c10::Stream s = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(t.device());
  return reinterpret_cast<intptr_t>(s.native_handle());
}

// The options of a call besides its tensors.
struct Options {
  double param;  // GT's scale, the GATs' slope
  int64_t count;  // entries of a per-head input (AGNN's beta)
  at::Tensor edge_values;  // [E, 1 or H], or undefined
  double dropout;
  int64_t seed;
  at::Tensor seed_at;  // [1] int64 where the call runs: the seed the kernels read in place of `seed`, or undefined
  bool packed = false;  // the first tensor holds the first two inputs (GATConv's el and er)
  at::Tensor weights;   // [E, H]: receives the attention weights (forward), or undefined
  bool edges = false;   // the last tensor is the model's edge argument (edge features)
};

// The model's inputs (or their gradients) from `tensors`, less the edge argument: one each or,
// `packed`, the first two from the halves of the first tensor (GATConv's el and er, stacked as
// [2, N, H]). Returns the edge argument's pointer (null without one).
template <class Pointer>
Pointer fill(Pointer* slots, const std::vector<at::Tensor>& tensors, const Options& o) {
  const std::size_t n = tensors.size() - (o.edges ? 1 : 0);
  int i = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const at::Tensor& t = tensors[k];
    char* p = static_cast<char*>(t.data_ptr());
    if (o.packed && i == 0) slots[i++] = p, slots[i++] = p + t.numel() / 2 * t.element_size();
    else slots[i++] = p;
  }
  return o.edges ? static_cast<Pointer>(tensors.back().data_ptr()) : nullptr;
}

dfgnn_call call_of(const std::vector<at::Tensor>& tensors, const Options& o) {
  dfgnn_call c{};
  c.param = float(o.param);
  c.edge_features = fill(c.inputs, tensors, o);
  if (o.edges && tensors.back().dim() == 3) {  // GT's may be edge columns [E, 1 or H, F]
    c.edge_features_heads = int(tensors.back().size(1));
    c.edge_features_width = int(tensors.back().size(2));
  }
  c.count = o.count;
  if (o.edge_values.defined()) {
    c.edge_values = o.edge_values.data_ptr();
    c.edge_heads = int(o.edge_values.size(1));
  }
  c.dropout = float(o.dropout);
  c.seed = uint64_t(o.seed);
  if (o.seed_at.defined()) c.seed_at = static_cast<const uint64_t*>(o.seed_at.data_ptr());
  return c;
}

// The forward: out [N, H, D] of the inputs' type and, in training or when it writes the
// attention weights (they are computed from it), logsumexp [N, H] in float32 (else undefined).
std::pair<at::Tensor, at::Tensor> run_forward(const PlanState& plan, const std::vector<at::Tensor>& tensors,
                                              const Options& o, bool train) {
  const at::Tensor& first = tensors[0];
  const bool stats = train || o.weights.defined();
  at::Tensor out = at::empty({plan.nodes, plan.heads, plan.dim}, first.options());
  at::Tensor lse = stats ? at::empty({plan.nodes, plan.heads}, first.options().dtype(at::kFloat)) : at::Tensor();
  dfgnn_call c = call_of(tensors, o);
  c.out = out.data_ptr();
  c.logsumexp = stats ? lse.data_ptr<float>() : nullptr;
  c.attention_weights = o.weights.defined() ? o.weights.data_ptr() : nullptr;
  check(natives.forward(plan.handle, stream_of(first), &c));
  return {std::move(out), std::move(lse)};
}

// The backward: the gradient of each tensor, shaped as it is.
std::vector<at::Tensor> run_backward(const PlanState& plan, const std::vector<at::Tensor>& tensors, const Options& o,
                                     const at::Tensor& out, const at::Tensor& lse, const at::Tensor& grad) {
  std::vector<at::Tensor> grads;
  grads.reserve(tensors.size());
  for (const at::Tensor& t : tensors) grads.push_back(at::empty_like(t));
  const at::Tensor dout = grad.contiguous();
  dfgnn_call c = call_of(tensors, o);
  c.out = const_cast<void*>(out.data_ptr());
  c.logsumexp = const_cast<float*>(lse.data_ptr<float>());
  c.dout = dout.data_ptr();
  c.edge_grad = fill(c.grads, grads, o);
  check(natives.backward(plan.handle, stream_of(out), &c));
  return grads;
}

// Marks a backward's gradients so that differentiating them raises, when autograd records the
// backward (create_graph=True), also where the incoming gradient needs none: the kernels have
// no double backward (docs/python.md, "Eager path").
variable_list first_order(variable_list grads) {
  if (!at::GradMode::is_enabled()) return grads;
  for (at::Tensor& g : grads)
    if (g.defined()) g = g.detach().requires_grad_();
  auto error = std::make_shared<torch::autograd::DelayedError>(
      "dfgnn: the attention backward has no derivative (no double backward)", int64_t(grads.size()));
  return (*error)(std::move(grads));
}

// Refuses an input with a tangent at forward-mode AD level `level` (-1: none active): the
// kernels have no forward-mode derivative.
void no_tangents(const std::vector<at::Tensor>& tensors, int64_t level) {
  if (level < 0) return;
  for (const at::Tensor& t : tensors)
    TORCH_CHECK(!t._fw_grad(uint64_t(level)).defined(), "dfgnn: the attention has no forward-mode derivative");
}

// What the backward nodes hold of their forward call: the plan (alive with them), the call's
// options, out (saved, autograd's in-place check) and logsumexp.
struct CallNode : Node {
  std::shared_ptr<const PlanState> plan;
  Options options;
  SavedVariable out;
  at::Tensor lse;

  void release_variables() override {
    out.reset_data();
    lse.reset();
  }

  /// The training forward of the call on `tensors`, its out recorded as this node's output.
  at::Tensor record(const Plan& p, const std::vector<at::Tensor>& tensors, const Options& o) {
    const at::AutoGradMode no_grad(false);
    auto [o_out, o_lse] = run_forward(*p.state, tensors, o, true);
    torch::autograd::set_history(o_out, shared_from_this());
    plan = p.state;
    options = o;
    out = SavedVariable(o_out, true);
    lse = std::move(o_lse);
    return o_out;
  }

  /// The backward of the call on `tensors` for dLoss/dout grads[0] (zeros when autograd hands
  /// none), not recorded.
  std::vector<at::Tensor> gradients(const std::vector<at::Tensor>& tensors, const variable_list& grads) {
    const at::AutoGradMode no_grad(false);
    const at::Tensor o = out.unpack(shared_from_this());
    return run_backward(*plan, tensors, options, o, lse, grads[0].defined() ? grads[0] : at::zeros_like(o));
  }
};

// The node of an eager call: its saved inputs besides.
struct AttentionBackward final : CallNode {
  std::vector<SavedVariable> inputs;

  std::string name() const override { return "DfgnnAttentionBackward"; }

  void release_variables() override {
    for (SavedVariable& v : inputs) v.reset_data();
    CallNode::release_variables();
  }

  variable_list apply(variable_list&& grads) override {
    std::vector<at::Tensor> tensors;
    tensors.reserve(inputs.size());
    for (const SavedVariable& v : inputs) tensors.push_back(v.unpack());
    return first_order(gradients(tensors, grads));
  }
};

// The eager op: out, with a backward node when autograd records the call (grad mode on and an
// input requiring grad). `level`: the active forward-mode AD level (-1: none); an input with a
// tangent there is refused, the kernels have no forward-mode derivative.
at::Tensor attention(const Plan& plan, const std::vector<at::Tensor>& tensors, const Options& o, int64_t level) {
  no_tangents(tensors, level);
  bool needs_grad = false;
  for (const at::Tensor& t : tensors) needs_grad = needs_grad || t.requires_grad();
  if (!needs_grad || !at::GradMode::is_enabled()) return run_forward(*plan.state, tensors, o, false).first;

  std::shared_ptr<AttentionBackward> node(new AttentionBackward(), torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(tensors));
  at::Tensor out = node->record(plan, tensors, o);
  node->inputs.reserve(tensors.size());
  for (const at::Tensor& t : tensors) node->inputs.emplace_back(t, false);
  return out;
}

// GATConv's attention as one node (the layer's call, python/dfgnn/nn.py): the score terms
// el = <h, att_src> and er = <h, att_dst> as one [2, N, H] tensor, the fused kernels on its
// halves (and the edge term ee [E, H], the model's edge argument, when the layer has edge_dim),
// and a backward that adds the terms' share into dh and reduces d(att): no autograd nodes for
// the products, sums and cat (five kernels and six nodes when autograd records them).
struct GATLayerBackward final : CallNode {
  SavedVariable h, att_src, att_dst, ee;
  at::Tensor terms;

  std::string name() const override { return "DfgnnGATLayerBackward"; }

  void release_variables() override {
    h.reset_data(), att_src.reset_data(), att_dst.reset_data(), ee.reset_data();
    terms.reset();
    CallNode::release_variables();
  }

  variable_list apply(variable_list&& grads) override {
    const at::Tensor x = h.unpack(), src = att_src.unpack(), dst = att_dst.unpack(), e = ee.unpack();
    const std::vector<at::Tensor> d = gradients(e.defined() ? std::vector<at::Tensor>{terms, x, e}
                                                            : std::vector<at::Tensor>{terms, x},
                                                grads);
    variable_list result(e.defined() ? 4 : 3);
    if (e.defined()) result[3] = d[2];
    {
      const at::AutoGradMode no_grad(false);
      const at::Tensor& dterms = d[0];
      result[0] = d[1].addcmul_(dterms[0].unsqueeze(-1), src).addcmul_(dterms[1].unsqueeze(-1), dst);
      if (task_should_compute_output(1) || task_should_compute_output(2)) {
        // In the score vectors' type (float32 under autocast): products and sum in float32.
        const at::Tensor datt = (dterms.to(src.scalar_type()).unsqueeze(-1) * x).sum(1, true);
        result[1] = datt[0], result[2] = datt[1];
      }
    }
    return first_order(std::move(result));
  }
};

// The score terms in h's type: under torch.autocast h is the autocast type and the score vectors
// float32, so the product is formed in float32 and rounded once, as the public path's casts do.
at::Tensor gat_terms(const at::Tensor& h, const at::Tensor& att_src, const at::Tensor& att_dst) {
  return (h * at::cat({att_src, att_dst}).unsqueeze(1)).sum(-1).to(h.scalar_type());
}

// `ee`: the edge term [E, H], or undefined (o.edges says which).
at::Tensor gat_layer(const Plan& plan, const at::Tensor& h, const at::Tensor& att_src, const at::Tensor& att_dst,
                     const at::Tensor& ee, const Options& o, int64_t level) {
  const std::vector<at::Tensor> inputs = ee.defined() ? std::vector<at::Tensor>{h, att_src, att_dst, ee}
                                                      : std::vector<at::Tensor>{h, att_src, att_dst};
  no_tangents(inputs, level);
  bool needs_grad = false;
  for (const at::Tensor& t : inputs) needs_grad = needs_grad || t.requires_grad();
  const auto call_tensors = [&](const at::Tensor& terms) {
    return ee.defined() ? std::vector<at::Tensor>{terms, h, ee} : std::vector<at::Tensor>{terms, h};
  };
  if (!at::GradMode::is_enabled() || !needs_grad)
    return run_forward(*plan.state, call_tensors(gat_terms(h, att_src, att_dst)), o, false).first;
  std::shared_ptr<GATLayerBackward> node(new GATLayerBackward(), torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  {
    const at::AutoGradMode no_grad(false);
    node->terms = gat_terms(h, att_src, att_dst);
  }
  at::Tensor out = node->record(plan, call_tensors(node->terms), o);
  node->h = SavedVariable(h, false), node->att_src = SavedVariable(att_src, false);
  node->att_dst = SavedVariable(att_dst, false);
  if (ee.defined()) node->ee = SavedVariable(ee, false);
  return out;
}

// Each call's options come positionally (param, count, edge_values or None, dropout, seed, and
// seed_at or None: the seed in memory, read when the kernels run, as a captured CUDA graph needs):
// a Python object per call would cost more than the arguments.
Options options(double param, int64_t count, const c10::optional<at::Tensor>& edge_values, double dropout,
                int64_t seed, const c10::optional<at::Tensor>& seed_at) {
  return {param, count, edge_values.value_or(at::Tensor()), dropout, seed, seed_at.value_or(at::Tensor())};
}

// The model's tensors and, when given, its edge argument last (Options::edges).
std::vector<at::Tensor> with_edges(std::vector<at::Tensor> tensors, const c10::optional<at::Tensor>& edge_features,
                                   Options& o) {
  if (edge_features) tensors.push_back(*edge_features), o.edges = true;
  return tensors;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using Tensors = std::vector<at::Tensor>;
  using EdgeValues = c10::optional<at::Tensor>;
  m.doc() = "dfgnn's attention calls from Python (python/ext/ops.cpp)";
  m.def("bind", &bind, "Takes the C ABI's dfgnn_forward, dfgnn_backward, dfgnn_last_error, dfgnn_plan_free");
  m.def(
      "allocator",
      [] { return std::pair<int64_t, int64_t>(reinterpret_cast<int64_t>(&torch_allocate), reinterpret_cast<int64_t>(&torch_deallocate)); },
      "Addresses of the functions that allocate and free through PyTorch's CUDA allocator");
  pybind11::class_<Plan>(m, "Plan");
  m.def("plan", &make_plan, "Takes over a plan handle: (handle, tensors it reads, N, H, D)");
  m.def(
      "attention",
      [](const Plan& plan, const Tensors& tensors, double param, int64_t count, const EdgeValues& edge_values,
         double dropout, int64_t seed, int64_t level, const EdgeValues& weights, const EdgeValues& edge_features,
         const EdgeValues& seed_at) {
        Options o = options(param, count, edge_values, dropout, seed, seed_at);
        if (weights) o.weights = *weights;
        return attention(plan, with_edges(tensors, edge_features, o), o, level);
      },
      "out, recorded for autograd when an input requires grad; `weights` [E, H] (or None) receives the "
      "attention weights; `edge_features` (or None) is the model's edge argument; `seed_at` (or None) the seed "
      "in memory",
      pybind11::arg("plan"), pybind11::arg("tensors"), pybind11::arg("param"), pybind11::arg("count"),
      pybind11::arg("edge_values"), pybind11::arg("dropout"), pybind11::arg("seed"), pybind11::arg("level"),
      pybind11::arg("weights"), pybind11::arg("edge_features") = c10::optional<at::Tensor>(),
      pybind11::arg("seed_at") = c10::optional<at::Tensor>());
  m.def(
      "gat_layer",
      [](const Plan& plan, const at::Tensor& h, const at::Tensor& att_src, const at::Tensor& att_dst, double slope,
         double dropout, int64_t seed, int64_t level, const EdgeValues& ee, const EdgeValues& seed_at) {
        Options o = options(slope, 0, c10::nullopt, dropout, seed, seed_at);
        o.packed = true, o.edges = ee.has_value();
        return gat_layer(plan, h, att_src, att_dst, ee.value_or(at::Tensor()), o, level);
      },
      "GATConv's attention of h [N, H, C] and att_src, att_dst [1, H, C] (and the edge term ee [E, H], or "
      "None), as one autograd node",
      pybind11::arg("plan"), pybind11::arg("h"), pybind11::arg("att_src"), pybind11::arg("att_dst"),
      pybind11::arg("slope"), pybind11::arg("dropout"), pybind11::arg("seed"), pybind11::arg("level"),
      pybind11::arg("ee") = c10::optional<at::Tensor>(), pybind11::arg("seed_at") = c10::optional<at::Tensor>());
  m.def(
      "forward",
      [](const Plan& plan, const Tensors& tensors, double param, int64_t count, const EdgeValues& edge_values,
         double dropout, int64_t seed, bool train, const EdgeValues& edge_features, const EdgeValues& weights,
         const EdgeValues& seed_at) {
        Options o = options(param, count, edge_values, dropout, seed, seed_at);
        if (weights) o.weights = *weights;
        auto [out, lse] = run_forward(*plan.state, with_edges(tensors, edge_features, o), o, train);
        return std::make_tuple(out, lse.defined() ? EdgeValues(lse) : c10::nullopt);
      },
      "(out, logsumexp or None): the native forward, not recorded; `weights` [E, H] (or None) receives the "
      "attention weights",
      pybind11::arg("plan"), pybind11::arg("tensors"), pybind11::arg("param"), pybind11::arg("count"),
      pybind11::arg("edge_values"), pybind11::arg("dropout"), pybind11::arg("seed"), pybind11::arg("train"),
      pybind11::arg("edge_features"), pybind11::arg("weights") = c10::optional<at::Tensor>(),
      pybind11::arg("seed_at") = c10::optional<at::Tensor>());
  m.def(
      "backward",
      [](const Plan& plan, const Tensors& tensors, double param, int64_t count, const EdgeValues& edge_values,
         double dropout, int64_t seed, const at::Tensor& out, const at::Tensor& lse, const at::Tensor& grad,
         const EdgeValues& edge_features, const EdgeValues& seed_at) {
        Options o = options(param, count, edge_values, dropout, seed, seed_at);
        return run_backward(*plan.state, with_edges(tensors, edge_features, o), o, out, lse, grad);
      },
      "the gradient of each tensor (the edge argument's last): the native backward",
      pybind11::arg("plan"), pybind11::arg("tensors"), pybind11::arg("param"), pybind11::arg("count"),
      pybind11::arg("edge_values"), pybind11::arg("dropout"), pybind11::arg("seed"), pybind11::arg("out"),
      pybind11::arg("lse"), pybind11::arg("grad"), pybind11::arg("edge_features"),
      pybind11::arg("seed_at") = c10::optional<at::Tensor>());
}
