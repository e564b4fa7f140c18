// The op description's tables and the one check of every call (include/dfgnn/detail/dispatch.hpp).

#include <dfgnn/detail/dispatch.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

namespace dfgnn {

const char* to_string(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
  }
  return "?";
}

DType parse_dtype(const std::string& text) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    if (text == to_string(t)) return t;
  throw Error("unknown element type '" + text + "' (expected f32, bf16 or f16)");
}

const ModelArgs& model_args(ScoreKind kind) {
  return visit_model(kind, [](auto model) -> const ModelArgs& { return decltype(model)::args; });
}

bool may_leave_out(const Op& op, int i) {
  const ModelArgs& args = model_args(op.kind);
  const int s = args.inputs[i].stand_in;
  if (s < 0) return false;
  const TensorRef own = TensorRef::shaped(nullptr, op, args.inputs[i].extent),
                  stand_in = TensorRef::shaped(nullptr, op, args.inputs[s].extent);
  return own.rank == stand_in.rank && std::equal(own.extents, own.extents + own.rank, stand_in.extents);
}

std::size_t TensorRef::entries() const {
  if (rank == 0) return 0;
  std::size_t n = 1;
  for (int r = 0; r < rank; ++r) n *= extents[r];
  return n;
}

TensorRef TensorRef::shaped(const void* data, const Op& op, Extent extent, std::size_t count) {
  const std::size_t S = std::size_t(op.src_nodes), T = std::size_t(op.dst_nodes), H = std::size_t(op.heads),
                    D = std::size_t(op.dim);
  TensorRef t;
  t.data = data;
  t.dtype = op.dtype;
  const auto set = [&](std::initializer_list<std::size_t> e) {
    for (std::size_t x : e) t.extents[t.rank++] = x;
  };
  switch (extent) {
    case Extent::SrcFeatures: set({S, H, D}); break;
    case Extent::DstFeatures: set({T, H, D}); break;
    case Extent::SrcScalars: set({S, H}); break;
    case Extent::DstScalars: set({T, H}); break;
    case Extent::HeadFeatures: set({H, D}); break;
    case Extent::HeadVector: set({count}); break;
    case Extent::EdgeFeatures: set({std::size_t(op.edges), H, D}); break;
    case Extent::EdgeScalars: set({std::size_t(op.edges), H}); break;
  }
  return t;
}

namespace detail {

void check_op(const char* who, const Op& op) {
  if (std::string(to_string(op.kind)) == "?")
    throw Error(std::string(who) + ": score kind " + std::to_string(int(op.kind)) + " is none of the enum's values");
  const std::string w(who);
  if (op.heads < 1) throw Error(w + ": heads must be >= 1, got " + std::to_string(op.heads));
  if (op.dim < 1) throw Error(w + ": dim must be >= 1, got " + std::to_string(op.dim));
  for (const node_t nodes : {op.src_nodes, op.dst_nodes})
    checked_product(w + ": nodes x heads x dim x element bytes",
                    {std::uint64_t(nodes), std::uint64_t(op.heads), std::uint64_t(op.dim), size_of(op.dtype)});
}

namespace {

/// A per-edge tensor [E, width] of `op` (edge values, attention weights) at `data`.
TensorRef per_edge(const void* data, const Op& op, std::size_t width) {
  TensorRef t;
  t.data = data;
  t.dtype = op.dtype;
  t.rank = 2, t.extents[0] = std::size_t(op.edges), t.extents[1] = width;
  return t;
}

/// The logsumexp [N,H] of `op` at `data`: float32 whatever the op's element type.
TensorRef statistic(const void* data, const Op& op) {
  TensorRef t = TensorRef::shaped(data, op, Extent::DstScalars);
  t.dtype = DType::F32;
  return t;
}

std::string shape_of(const TensorRef& t) {
  std::string s = "[";
  for (int r = 0; r < t.rank; ++r) s += (r ? "," : "") + std::to_string(t.extents[r]);
  return s + "]";
}

/// Whether the call leaves out argument i, an optional one (ArgSpec::stand_in).
bool left_out(const ModelArgs& args, const Call& call, int i) {
  return args.inputs[i].stand_in >= 0 && !call.inputs[i].given();
}

/// A tensor's bytes, for the overlap checks.
struct Region {
  const char* name;
  const TensorRef* t;
  std::size_t bytes() const { return t->entries() * size_of(t->dtype); }
  bool overlaps(const Region& o) const {
    const char *x = static_cast<const char*>(t->data), *y = static_cast<const char*>(o.t->data);
    return x && y && bytes() > 0 && o.bytes() > 0 && x < y + o.bytes() && y < x + bytes();
  }
};

/// The checks of one call to the entry `who` (every message starts with it).
class Checker {
 public:
  Checker(const char* who, const Op& op, ScoreKind model, const Call& call)
      : who_(who), op_(op), args_(model_args(model)), call_(call) {
    if (op.kind != model) fail(std::string("the plan was made for ") + to_string(op.kind) + ", not " + to_string(model));
    if (args_.param && !std::isfinite(call.param))
      fail(std::string(args_.param) + " is " + std::to_string(call.param) + ", not a finite number");
    for (int i = 0; i < args_.count; ++i) {
      if (left_out(args_, call, i))
        stand_in(i);
      else
        argument(args_.inputs[i].name, call.inputs[i], args_.inputs[i].extent);
    }
  }

  [[noreturn]] void fail(const std::string& what) const { throw Error(std::string(who_) + ": " + what); }

  /// Left-out argument i: Error unless its stand-in serves, or it would have no entries.
  void stand_in(int i) const {
    const ArgSpec& a = args_.inputs[i];
    const TensorRef own = TensorRef::shaped(nullptr, op_, a.extent);
    if (own.entries() > 0 && !may_leave_out(op_, i))
      fail(std::string(a.name) + " is missing: " + args_.inputs[a.stand_in].name +
           " stands in for it on a square graph only; pass " + a.name + " " + dims(a.extent) + " = " + shape_of(own));
  }

  /// t has the shape `extent` gives it in the op, and the op's element type.
  void argument(const char* name, const TensorRef& t, Extent extent) const {
    if (extent != Extent::HeadVector) return shape(name, t, TensorRef::shaped(nullptr, op_, extent), dims(extent));
    element(name, t, op_.dtype);
    const std::size_t n = t.rank == 1 ? t.extents[0] : 0;
    if ((n != 1 && n != std::size_t(op_.heads)) || !t.data)
      fail(std::string(name) + " has " + std::to_string(n) + (t.data ? "" : " unallocated") +
           " entries, expected 1 or H = " + std::to_string(op_.heads));
    contiguous(name, t);
  }

  /// t is the model's edge argument: of the model's extent or, for a model with edge columns,
  /// [E, 1 or H, F] with 1 <= F <= D.
  void edge_argument(const char* name, const TensorRef& t) const {
    const TensorRef full = TensorRef::shaped(nullptr, op_, args_.edge.extent);
    if (!args_.edge_columns || t.rank != 3) return shape(name, t, full, dims(args_.edge.extent));
    const std::size_t heads = t.extents[1], width = t.extents[2];
    if (t.extents[0] != full.extents[0] || (heads != 1 && heads != full.extents[1]) || width < 1 ||
        width > full.extents[2])
      fail(std::string(name) + " has shape " + shape_of(t) + ", expected [E,H,D] = " + shape_of(full) +
           " or edge columns [E,1 or H,F] with F <= D = " + std::to_string(op_.dim));
    TensorRef want = full;
    want.extents[1] = heads, want.extents[2] = width;
    shape(name, t, want, "[E,1 or H,F]");
  }

  /// t has want's extents (named `dims`) and data, unless it is empty, and no gaps.
  void shape(const char* name, const TensorRef& t, const TensorRef& want, const char* dims) const {
    bool ok = t.rank == want.rank;
    for (int r = 0; ok && r < want.rank; ++r) ok = t.extents[r] == want.extents[r];
    if (!ok)
      fail(std::string(name) + " has shape " + shape_of(t) + ", expected " + dims + " = " + shape_of(want));
    if (!t.data && t.entries() > 0) fail(std::string(name) + " is null");
    element(name, t, want.dtype);
    contiguous(name, t);
  }

  /// Mixed element types: the tensor that differs is named.
  void element(const char* name, const TensorRef& t, DType want) const {
    if (t.dtype != want)
      fail(std::string(name) + " is " + to_string(t.dtype) + ", expected " + to_string(want) +
           (want == op_.dtype ? " (the plan's element type)" : " (always)"));
  }

  void contiguous(const char* name, const TensorRef& t) const {
    if (t.strided)
      fail(std::string(name) + " is strided (a subview with gaps, or a LayoutStride View not in row-major order); "
           "pass a contiguous LayoutRight View");
  }

  /// The edge values, when given, and the dropout rate.
  void options() const {
    const TensorRef& w = call_.edge_values;
    if (w.given()) {
      const std::size_t E = std::size_t(op_.edges), H = std::size_t(op_.heads);
      if (!w.data && E > 0) fail("edge_values has shape " + shape_of(w) + " but no data");
      if (w.rank != 2 || w.extents[0] != E || (w.extents[1] != 1 && w.extents[1] != H))
        fail("edge_values has shape " + shape_of(w) + ", expected [E,1] or [E,H] with E = " + std::to_string(E) +
             ", H = " + std::to_string(H));
      element("edge_values", w, op_.dtype);
      contiguous("edge_values", w);
    }
    const TensorRef& ef = call_.edge_features;
    if (ef.given()) {
      if (!args_.edge.name) fail(std::string(to_string(op_.kind)) + " takes no edge features");
      edge_argument(args_.edge.name, ef);
    }
    const float rate = call_.dropout.rate;
    if (!(rate >= 0.0f && rate < 1.0f)) fail("dropout rate " + std::to_string(rate) + " is outside [0, 1)");
  }

  /// No written tensor shares a byte with a read one or with another written one.
  void disjoint(std::initializer_list<Region> written, std::initializer_list<Region> read) const {
    for (auto w = written.begin(); w != written.end(); ++w) {
      for (const Region& r : read)
        if (w->overlaps(r)) fail(std::string(w->name) + " overlaps " + r.name);
      for (auto o = w + 1; o != written.end(); ++o)
        if (w->overlaps(*o)) fail(std::string(w->name) + " overlaps " + o->name);
    }
  }

  const ModelArgs& args() const { return args_; }

  /// The name of a checked edge argument's shape: the model's extent, or edge columns.
  const char* edge_dims(const TensorRef& edge) const {
    const TensorRef full = TensorRef::shaped(nullptr, op_, args_.edge.extent);
    for (int r = 0; r < full.rank; ++r)
      if (edge.extents[r] != full.extents[r]) return "[E,1 or H,F] as E";
    return dims(args_.edge.extent);
  }

 private:
  // A bipartite op names its sources NS.
  const char* dims(Extent e) const {
    const bool bipartite = op_.src_nodes != op_.dst_nodes;
    switch (e) {
      case Extent::SrcFeatures: return bipartite ? "[NS,H,D]" : "[N,H,D]";
      case Extent::DstFeatures: return "[N,H,D]";
      case Extent::SrcScalars: return bipartite ? "[NS,H]" : "[N,H]";
      case Extent::DstScalars: return "[N,H]";
      case Extent::HeadFeatures: return "[H,D]";
      case Extent::EdgeFeatures: return "[E,H,D]";
      case Extent::EdgeScalars: return "[E,H]";
      case Extent::HeadVector: break;
    }
    return "[1 or H]";
  }

  const char* who_;
  const Op& op_;
  const ModelArgs& args_;
  const Call& call_;
};

/// The model's inputs as read regions (the third of a two-argument model is empty).
Region input(const Checker& c, const Call& call, int i) {
  return {i < c.args().count ? c.args().inputs[i].name : "", &call.inputs[i]};
}

/// The edge argument as a read region (empty for a model without one: the check refused it).
Region edge_input(const Checker& c, const Call& call) {
  return {c.args().edge.name ? c.args().edge.name : "", &call.edge_features};
}

}  // namespace

void check_forward(const char* who, const Op& op, ScoreKind model, const Call& call) {
  const Checker check(who, op, model, call);
  check.argument("out", call.out, Extent::DstFeatures);
  const bool lse = call.logsumexp.given();
  if (lse) check.shape("logsumexp", call.logsumexp, statistic(nullptr, op), "[N,H]");
  if (call.weights.given()) {
    if (!lse) check.fail("weights are computed from the logsumexp: pass logsumexp too");
    check.shape("weights", call.weights, per_edge(nullptr, op, std::size_t(op.heads)), "[E,H]");
  }
  check.options();
  check.disjoint({{"out", &call.out}, {"logsumexp", &call.logsumexp}, {"weights", &call.weights}},
                 {input(check, call, 0), input(check, call, 1), input(check, call, 2),
                  {"edge_values", &call.edge_values}, edge_input(check, call)});
}

void check_backward(const char* who, const Op& op, ScoreKind model, const Call& call) {
  const Checker check(who, op, model, call);
  check.argument("out", call.out, Extent::DstFeatures);
  check.shape("logsumexp", call.logsumexp, statistic(nullptr, op), "[N,H]");
  check.argument("dOut", call.dout, Extent::DstFeatures);
  check.options();
  const ModelArgs& args = check.args();
  for (int i = 0; i < args.count; ++i) {
    if (left_out(args, call, i)) {  // its terms go to its stand-in's gradient
      if (call.grads[i].given())
        check.fail(std::string(args.gradients[i]) + " was passed without " + args.inputs[i].name);
    } else if (args.inputs[i].extent == Extent::HeadVector) {  // as long as the input it is the gradient of
      TensorRef want;
      want.dtype = op.dtype;
      want.rank = 1, want.extents[0] = call.inputs[i].extents[0];
      check.shape(args.gradients[i], call.grads[i], want, "[beta's length]");
    } else {
      check.argument(args.gradients[i], call.grads[i], args.inputs[i].extent);
    }
  }
  // The edge argument's gradient goes with it: given exactly when the edge argument is.
  const bool edges = call.edge_features.given();
  const bool edge_grad = call.edge_grad.given();
  if (edges)
    check.shape(args.edge_gradient, call.edge_grad, call.edge_features, check.edge_dims(call.edge_features));
  else if (edge_grad)
    check.fail(std::string("an edge-feature gradient was passed without edge features"));
  const char* none = "";
  check.disjoint({{args.gradients[0], &call.grads[0]}, {args.gradients[1], &call.grads[1]},
                  {args.count > 2 ? args.gradients[2] : none, &call.grads[2]},
                  {args.edge_gradient ? args.edge_gradient : none, &call.edge_grad}},
                 {input(check, call, 0), input(check, call, 1), input(check, call, 2), {"out", &call.out},
                  {"logsumexp", &call.logsumexp}, {"dOut", &call.dout}, {"edge_values", &call.edge_values},
                  edge_input(check, call)});
}

Call pointer_call(const Op& op, ScoreKind model, const void* const* inputs, std::size_t count,
                  const void* edge_values, int edge_heads, const Dropout& dropout, const void* edge_features,
                  EdgeShape edge_shape) {
  const ModelArgs& args = model_args(model);
  Call c;
  for (int i = 0; i < args.count; ++i)  // a null optional argument: left out
    if (inputs[i] || args.inputs[i].stand_in < 0)
      c.inputs[i] = TensorRef::shaped(inputs[i], op, args.inputs[i].extent, count);
  if (edge_values) c.edge_values = per_edge(edge_values, op, std::size_t(edge_heads));
  if (edge_features) {
    c.edge_features = TensorRef::shaped(edge_features, op, args.edge.extent);
    if (c.edge_features.rank == 3 && edge_shape.heads > 0) c.edge_features.extents[1] = std::size_t(edge_shape.heads);
    if (c.edge_features.rank == 3 && edge_shape.width > 0) c.edge_features.extents[2] = std::size_t(edge_shape.width);
  }
  c.dropout = dropout;
  return c;
}

void set_outputs(Call& c, const Op& op, void* out, float* logsumexp, void* weights) {
  c.out = TensorRef::shaped(out, op, Extent::DstFeatures);
  if (logsumexp) c.logsumexp = statistic(logsumexp, op);
  if (weights) c.weights = per_edge(weights, op, std::size_t(op.heads));
}

void set_upstream(Call& c, const Op& op, ScoreKind model, const void* out, const float* logsumexp,
                  const void* dout, void* const* grads, void* edge_grad) {
  const ModelArgs& args = model_args(model);
  if (edge_grad) {
    c.edge_grad = c.edge_features.rank ? c.edge_features : TensorRef::shaped(nullptr, op, args.edge.extent);
    c.edge_grad.data = edge_grad;
  }
  c.out = TensorRef::shaped(out, op, Extent::DstFeatures);
  c.logsumexp = statistic(logsumexp, op);
  c.dout = TensorRef::shaped(dout, op, Extent::DstFeatures);
  for (int i = 0; i < args.count; ++i)  // a left-out argument's gradient: none, unless passed
    if (grads[i] || !left_out(args, c, i))
      c.grads[i] = TensorRef::shaped(grads[i], op, args.inputs[i].extent, c.inputs[i].extents[0]);
}

namespace {

/// The checked `call` as the executor runs it (Call::inputs): each left-out argument its
/// stand-in, and its gradient the stand-in's. Where the stand-in has another shape, the check
/// found the argument without entries (a bipartite graph of no destinations): then an empty
/// tensor of its own shape, and no gradient to write.
Call with_stand_ins(const Op& op, const Call& call) {
  const ModelArgs& args = model_args(op.kind);
  Call c = call;
  for (int i = 0; i < args.count; ++i) {
    if (!left_out(args, call, i)) continue;
    const int s = args.inputs[i].stand_in;
    if (may_leave_out(op, i)) {
      c.inputs[i] = call.inputs[s], c.grads[i] = call.grads[s];
    } else {
      c.inputs[i] = TensorRef::shaped(nullptr, op, args.inputs[i].extent);
      c.grads[i] = c.inputs[i];
    }
  }
  return c;
}

}  // namespace

void forward(const char* who, const Executor& executor, ScoreKind model, const Call& call) {
  check_forward(who, executor.op(), model, call);
  executor.forward(with_stand_ins(executor.op(), call));
}

void backward(const char* who, const Executor& executor, ScoreKind model, const Call& call) {
  check_backward(who, executor.op(), model, call);
  executor.backward(with_stand_ins(executor.op(), call));
}

}  // namespace detail
}  // namespace dfgnn
