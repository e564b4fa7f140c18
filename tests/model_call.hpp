#pragma once
// One model's training forward and backward through the Kokkos API on host vectors, and random
// inputs for it: what the partition tests compare ranks' calls against.

#include "graphs.hpp"

#include <dfgnn/backward.hpp>

#include <limits>
#include <vector>

namespace dfgnn::test {

using Floats = std::vector<float>;

/// A call's host inputs: the model's arguments in order (an optional one left out: absent),
/// with `extras` edge values [E,1], the edge argument (a model with one) and dropout, dOut;
/// `counter` (uploaded for the call) the dropout's edge ids.
struct ModelInputs {
  std::vector<Floats> args;
  bool extras = false;
  Floats w, e, dout;
  Dropout dropout;
  std::vector<edge_t> counter;
};

/// Random inputs of `kind` on g (never zero: edge values in [0.5, 1.5]; a head vector one per
/// head), with or without edge values, edge features and dropout (rate 0.3); the optional
/// arguments only where they may not be left out (AGNN's X_dst on a bipartite graph) or with
/// `optional`.
inline ModelInputs random_inputs(ScoreKind kind, const HostGraph& g, int H, int D, bool extras, bool optional = false) {
  const ModelArgs& m = model_args(kind);
  const Op op{kind, DType::F32, H, D, g.num_src_nodes, g.num_nodes, g.num_edges()};
  ModelInputs r;
  r.extras = extras;
  for (int i = 0; i < m.count && (optional || !may_leave_out(op, i)); ++i)
    r.args.push_back(random_values(TensorRef::shaped(nullptr, op, m.inputs[i].extent, std::size_t(H)).entries(),
                                   10 + unsigned(i)));
  r.dout = random_values(std::size_t(g.num_nodes) * H * D, 20);
  if (extras) {
    r.w = random_values(std::size_t(g.num_edges()), 21, 0.5f, 1.5f);
    if (m.edge.name) r.e = random_values(TensorRef::shaped(nullptr, op, m.edge.extent).entries(), 22);
    r.dropout = Dropout{0.3f, 23};
  }
  return r;
}

/// Whether a call of `in` passes the model's edge argument.
inline bool passes_edges(const ModelArgs& m, const ModelInputs& in) { return in.extras && m.edge.name; }

/// One call's outcome: out, then the gradient of each input in model order, then dE.
struct Outcome {
  std::vector<Floats> tensors;
};

/// A model's forward (training mode) and backward through `plan` (a Plan, or a DistributedPlan
/// whose tensors hold its rank's rows): `in` sized for `shapes` (the op whose node counts the
/// tensors have), `rows` destinations.
template <class PlanType>
Outcome call(const PlanType& plan, const Op& shapes, const ModelInputs& in, std::size_t rows) {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;
  Exec exec;
  const ModelArgs& m = model_args(shapes.kind);
  std::vector<Kokkos::View<float*, Mem>> views, grads;
  Tensors x, dx;
  const auto add = [&](const Floats& host, Extent extent) {
    views.push_back(detail::upload<float, Mem>("in", host));
    grads.emplace_back("grad", host.size());
    Kokkos::deep_copy(grads.back(), std::numeric_limits<float>::quiet_NaN());
    x.refs[x.count++] = TensorRef::shaped(views.back().data(), shapes, extent, host.size());
    dx.refs[dx.count++] = TensorRef::shaped(grads.back().data(), shapes, extent, host.size());
  };
  for (std::size_t i = 0; i < in.args.size(); ++i) add(in.args[i], m.inputs[i].extent);
  if (passes_edges(m, in)) add(in.e, m.edge.extent);
  const std::size_t h = std::size_t(shapes.heads), d = std::size_t(shapes.dim);
  const auto wv = detail::upload<float, Mem>("w", in.w);
  const auto dy = detail::upload<float, Mem>("dout", in.dout);
  Options<Mem> o;
  if (in.extras) o.edge_values = EdgeValues<Mem>(wv.data(), in.w.size(), 1);
  const auto counter = detail::upload<edge_t, Mem>("counter", in.counter);
  o.dropout = in.dropout;
  if (!in.counter.empty()) o.dropout.counter = counter.data();
  o.logsumexp = decltype(o.logsumexp)("lse", rows, h);
  NodeOutput<Mem> out("out", rows, h, d);
  visit_model(shapes.kind, [&](auto model) {
    attention(exec, plan, model, x, out, o);
    attention_backward(exec, plan, model, x, out, o.logsumexp, NodeFeatures<Mem>(dy.data(), rows, h, d), dx, o);
  });
  exec.fence();
  const auto host = [](const auto& v) {
    const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    return Floats(c.data(), c.data() + c.size());
  };
  Outcome r{{host(out)}};
  for (const auto& g : grads) r.tensors.push_back(host(g));
  return r;
}

/// The call on the whole of `g` (its inputs sized for g's sides).
inline Outcome run(ScoreKind kind, const HostGraph& g, int H, int D, const ModelInputs& in) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const Plan<Exec> plan(Exec(), Graph<Exec::memory_space>(g), kind, H, D);
  return call(plan, plan.op(), in, std::size_t(g.num_nodes));
}

/// The extent of tensor t of a call's Outcome on `in`: out's, an argument's gradient, the edge
/// argument's.
inline Extent outcome_extent(const ModelArgs& m, const ModelInputs& in, std::size_t t) {
  return t == 0 ? Extent::DstFeatures : t - 1 < in.args.size() ? m.inputs[t - 1].extent : m.edge.extent;
}

}  // namespace dfgnn::test
