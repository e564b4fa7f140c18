#pragma once
// The portable backend's executor (include/dfgnn/detail/dispatch.hpp): a plan's graph, op,
// strategy and layout (layout.hpp), and the runs of the calls the dispatch checked
// (attention.cpp, backward.cpp); the kernel families read it. Also what both passes share: a
// call's tensors as Views, the Problem a call hands to the kernels, and AGNN's norms.

#include "layout.hpp"
#include "scores.hpp"

#include <dfgnn/attention.hpp>
#include <dfgnn/detail/dispatch.hpp>

namespace dfgnn::kokkos_impl {

template <class Exec>
class PortablePlan final : public detail::Executor {
 public:
  using memory_space = typename Exec::memory_space;

  PortablePlan(const Graph<memory_space>& graph, const Op& op, Strategy strategy, Layout<memory_space> layout)
      : graph_(graph), op_(op), strategy_(strategy), layout_(std::move(layout)) {}

  const Op& op() const override { return op_; }
  Strategy strategy() const override { return strategy_; }
  Backend backend() const override { return Backend::Portable; }
  /// Call::space is the Exec instance the kernels run on.
  void forward(const Call& call) const override;
  void backward(const Call& call) const override;

  const Graph<memory_space>& graph() const { return graph_; }
  const Layout<memory_space>& layout() const { return layout_; }
  ScoreKind kind() const { return op_.kind; }
  int heads() const { return op_.heads; }
  int dim() const { return op_.dim; }
  /// Workspace of the backward pass (backward.cpp): sized by its first call through this plan,
  /// reused by every later one.
  Kokkos::View<float*, memory_space>& backward_workspace() const { return workspace_; }

 private:
  Graph<memory_space> graph_;
  Op op_;
  Strategy strategy_;
  Layout<memory_space> layout_;
  mutable Kokkos::View<float*, memory_space> workspace_;
};

template <class Exec>
std::shared_ptr<const detail::Executor> LayoutBuilder<Exec>::build(Strategy resolved) {
  return std::make_shared<const PortablePlan<Exec>>(graph_, op_, resolved, layout(resolved));
}

/// The layout of a plan that runs the portable kernels.
template <class Exec>
const Layout<typename Exec::memory_space>& layout_of(const Plan<Exec>& plan) {
  return dynamic_cast<const PortablePlan<Exec>&>(plan.executor()).layout();
}

/// A checked call's tensors as the Views the kernels read (extents as the dispatch found them),
/// of element type T (the op's: the check saw to it) but for the float32 logsumexp.
template <class Mem, class T>
struct CallViews {
  const Call& call;

  static const T* ptr(const TensorRef& t) { return static_cast<const T*>(t.data); }
  static T* writable(const TensorRef& t) { return static_cast<T*>(const_cast<void*>(t.data)); }

  Features<Mem, T> features(const TensorRef& t) const {
    return Features<Mem, T>(ptr(t), t.extents[0], t.extents[1], t.extents[2]);
  }
  Matrix<Mem, T> matrix(const TensorRef& t) const { return Matrix<Mem, T>(ptr(t), t.extents[0], t.extents[1]); }
  Vector<Mem, T> vector(const TensorRef& t) const { return Vector<Mem, T>(ptr(t), t.extents[0]); }
  Output<Mem, T> output(const TensorRef& t) const {
    return Output<Mem, T>(writable(t), t.extents[0], t.extents[1], t.extents[2]);
  }
  ScalarsOut<Mem, T> scalars_out(const TensorRef& t) const {
    return ScalarsOut<Mem, T>(writable(t), t.extents[0], t.extents[1]);
  }
  Kokkos::View<T*, Kokkos::LayoutRight, Mem> vector_out(const TensorRef& t) const {
    return Kokkos::View<T*, Kokkos::LayoutRight, Mem>(writable(t), t.entries());
  }
  Features<Mem, T> input(int i) const { return features(call.inputs[i]); }
  Matrix<Mem, T> input_matrix(int i) const { return matrix(call.inputs[i]); }
  /// The logsumexp [N,H], float32 whatever T is.
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> logsumexp() const {
    const TensorRef& t = call.logsumexp;
    return Kokkos::View<float**, Kokkos::LayoutRight, Mem>(static_cast<float*>(const_cast<void*>(t.data)),
                                                          t.extents[0], t.extents[1]);
  }

  /// Edge values, the training forward's logsumexp output (`training`: a forward with one),
  /// the dropout.
  Options<Mem, T> options(bool training) const {
    Options<Mem, T> o;
    if (call.edge_values.data) o.edge_values = matrix(call.edge_values);
    if (training && call.logsumexp.data) o.logsumexp = logsumexp();
    o.dropout = call.dropout;
    return o;
  }
};

template <class Exec, class T>
Problem<typename Exec::memory_space, T> problem(const PortablePlan<Exec>& plan,
                                                const Output<typename Exec::memory_space, T>& out,
                                                const Options<typename Exec::memory_space, T>& o) {
  const auto& g = plan.graph();
  return {g.row_ptr(), g.src(), g.dst(), g.edge_id(), o.edge_values, o.logsumexp, o.dropout,
          out, plan.heads(), plan.dim()};
}

// 1/|X[n,h]| per node and head into `inv` (0 for a zero vector), so a cosine costs one dot product.
template <class Exec, class T>
Kokkos::View<const float**, Kokkos::LayoutRight, typename Exec::memory_space> inverse_norms(
    const Exec& exec, const PortablePlan<Exec>& plan, const Features<typename Exec::memory_space, T>& X,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space>& inv) {
  const int H = plan.heads(), D = plan.dim();
  Kokkos::parallel_for(
      "dfgnn::inverse_norms", Range<Exec>(exec, 0, inv.size()),
      KOKKOS_LAMBDA(std::size_t k) {
        const node_t n = node_t(k / H);
        const int h = int(k % H);
        float sq = 0.0f;
        for (int d = 0; d < D; ++d) sq += to_float(X(n, h, d)) * to_float(X(n, h, d));
        inv(n, h) = sq > 0.0f ? 1.0f / sqrt(sq) : 0.0f;
      });
  return inv;
}

// Each model's score functor made of a checked call's tensors (`t`), for the forward and the
// backward: a new model adds its overload here (docs/design.md, "Adding a model").
template <class Exec, class T>
GTScore<typename Exec::memory_space, T> score_of(const GT& model, const Exec&, const PortablePlan<Exec>& plan,
                                                 const CallViews<typename Exec::memory_space, T>& t) {
  return {t.input(0), t.input(1), t.input(2), model.scale_for(plan.dim()), t.features(t.call.edge_features)};
}

template <class Exec, class T>
AGNNScore<typename Exec::memory_space, T> score_of(const AGNN&, const Exec& exec, const PortablePlan<Exec>& plan,
                                                   const CallViews<typename Exec::memory_space, T>& t) {
  const auto X = t.input(0), X_dst = t.input(2);
  const auto& L = plan.layout();
  const auto inv = inverse_norms(exec, plan, X, L.inv_norms);
  // X_dst on X's data within its rows (X standing in for it, or a rank's rows of it) has X's norms.
  const bool same = X_dst.data() == X.data() && X_dst.extent(0) <= X.extent(0);
  return {X, X_dst, inv, same ? inv : inverse_norms(exec, plan, X_dst, L.inv_norms_dst), t.vector(t.call.inputs[1])};
}

template <class Exec, class T>
GATScore<typename Exec::memory_space, T> score_of(const GAT& model, const Exec&, const PortablePlan<Exec>&,
                                                  const CallViews<typename Exec::memory_space, T>& t) {
  return {t.input_matrix(0), t.input_matrix(1), t.input(2), model.slope, t.matrix(t.call.edge_features)};
}

template <class Exec, class T>
GATv2Score<typename Exec::memory_space, T> score_of(const GATv2& model, const Exec&, const PortablePlan<Exec>&,
                                                    const CallViews<typename Exec::memory_space, T>& t) {
  return {t.input(0), t.input(1), t.input_matrix(2), model.slope, t.features(t.call.edge_features)};
}

}  // namespace dfgnn::kokkos_impl
