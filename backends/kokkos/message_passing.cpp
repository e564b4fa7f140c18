// The portable kernels' message-passing plan (detail/messages.hpp): a checked call -> its
// kernels. Instantiated for every enabled execution space.

#include "message_passing.hpp"
#include "spaces.hpp"


namespace dfgnn {

namespace {

using namespace kokkos_impl;

template <class Mem>
InEdges<Mem> in_edges(const Graph<Mem>& g) {
  return {g.row_ptr(), g.edge_id(), g.src()};
}

template <class Mem>
OutEdges<Mem> out_edges(const Graph<Mem>& g) {
  const auto& t = g.transposed();
  return {t.col_ptr, t.csr_edge, g.edge_id(), t.dst};
}

template <class Mem>
OneEdge<Mem> one_edge(const Graph<Mem>& g) {
  return {g.edge_id(), g.src(), g.dst()};
}

/// Gathers `term` into `out`, a tensor on `target`: over the CSC for sources, the CSR for
/// destinations, edge by edge for edges. H and D are the terms' full extents.
template <class Exec, class Term>
void gather(const Exec& exec, const char* name, const Graph<typename Exec::memory_space>& g, Target target,
            const Term& term, const TensorOutput<typename Exec::memory_space>& out, int H, int D) {
  using Mem = typename Exec::memory_space;
  const int heads = int(out.extent(1));
  switch (target) {
    case Target::U:
      return for_segments(exec, name, g.num_nodes(), heads, D,
                          Gather<OutEdges<Mem>, Term, Mem>{out_edges(g), term, out, H, D});
    case Target::V:
      return for_segments(exec, name, g.num_nodes(), heads, D,
                          Gather<InEdges<Mem>, Term, Mem>{in_edges(g), term, out, H, D});
    case Target::E:
      return for_segments(exec, name, g.num_edges(), heads, D,
                          Gather<OneEdge<Mem>, Term, Mem>{one_edge(g), term, out, H, D});
    case Target::None: break;
  }
}

/// The portable kernels' message-passing plan: the graph (its CSC built on first use, shared
/// by every plan of the graph), and the runs of the calls the dispatch checked.
template <class Exec>
class PortableMessages final : public detail::MessageExecutor {
 public:
  using Mem = typename Exec::memory_space;

  explicit PortableMessages(const Graph<Mem>& graph) : graph_(graph) {}

  node_t num_nodes() const override { return graph_.num_nodes(); }
  edge_t num_edges() const override { return graph_.num_edges(); }
  Backend backend() const override { return Backend::Portable; }

  void run(const detail::MessageCall& c) const override {
    const Exec& exec = *static_cast<const Exec*>(c.space);
    const Graph<Mem>& g = graph_;
    const int H = c.heads, D = c.dim;
    switch (c.pass) {
      case detail::MessagePass::Spmm: {
        const TensorOutput<Mem> out = output(c.out);
        const MessageOf<Mem> m{c.message.lhs, c.message.rhs, c.message.op, {input(c.lhs)}, {input(c.rhs)}};
        return for_segments(exec, "dfgnn::gspmm", g.num_nodes(), H, D,
                            SpmmRows<Mem>{in_edges(g), m, c.reduce, out, arg_output(c.arg)});
      }
      case detail::MessagePass::SpmmBackward: {
        SpmmTerm<Mem> term{{c.message.lhs, c.message.rhs, c.message.op, {input(c.lhs)}, {input(c.rhs)}},
                           c.reduce, {input(c.dout)}, arg_input(c.arg), g.row_ptr(), false};
        if (c.dlhs.bytes() > 0) gather(exec, "dfgnn::gspmm_backward_lhs", g, c.message.lhs, term, output(c.dlhs), H, D);
        term.wrt_rhs = true;
        if (c.drhs.bytes() > 0) gather(exec, "dfgnn::gspmm_backward_rhs", g, c.message.rhs, term, output(c.drhs), H, D);
        return;
      }
      case detail::MessagePass::Sddmm:
        return for_segments(exec, "dfgnn::gsddmm", g.num_edges(), H, D,
                            SddmmEdges<Mem>{one_edge(g), c.op, {input(c.lhs)}, {input(c.rhs)}, output(c.out), D});
      case detail::MessagePass::SddmmBackward: {
        SddmmTerm<Mem> term{c.op, {input(c.lhs)}, {input(c.rhs)}, input(c.dout), false};
        if (c.dlhs.bytes() > 0) gather(exec, "dfgnn::gsddmm_backward_x", g, Target::U, term, output(c.dlhs), H, D);
        term.wrt_y = true;
        if (c.drhs.bytes() > 0) gather(exec, "dfgnn::gsddmm_backward_y", g, Target::V, term, output(c.drhs), H, D);
        return;
      }
      case detail::MessagePass::Gcn:
        return gather(exec, "dfgnn::gcn_aggregate", g, Target::V,
                      GcnTerm<Mem>{g.row_ptr(), g.transposed().col_ptr, input(c.lhs), false}, output(c.out), H, D);
      case detail::MessagePass::GcnBackward:
        return gather(exec, "dfgnn::gcn_aggregate_backward", g, Target::U,
                      GcnTerm<Mem>{g.row_ptr(), g.transposed().col_ptr, input(c.dout), true}, output(c.dlhs), H, D);
    }
  }

 private:
  // A checked tensor as the View the kernels read (unmanaged; the caller's memory).
  static Tensor<Mem> input(const detail::Extents& t) {
    return Tensor<Mem>(static_cast<const float*>(t.data), t.rows, t.heads, t.dim);
  }
  static TensorOutput<Mem> output(const detail::Extents& t) {
    return TensorOutput<Mem>(static_cast<float*>(const_cast<void*>(t.data)), t.rows, t.heads, t.dim);
  }
  static ArgOutput<Mem> arg_output(const detail::Extents& t) {
    return ArgOutput<Mem>(static_cast<edge_t*>(const_cast<void*>(t.data)), t.rows, t.heads, t.dim);
  }
  static ArgInput<Mem> arg_input(const detail::Extents& t) {
    return ArgInput<Mem>(static_cast<const edge_t*>(t.data), t.rows, t.heads, t.dim);
  }

  Graph<Mem> graph_;
};

template <class Exec>
class PortableMessageBuilder final : public detail::MessageBuilder {
 public:
  explicit PortableMessageBuilder(const Graph<typename Exec::memory_space>& graph) : graph_(graph) {}
  std::shared_ptr<const detail::MessageExecutor> build() override {
    return std::make_shared<const PortableMessages<Exec>>(graph_);
  }

 private:
  Graph<typename Exec::memory_space> graph_;
};

}  // namespace

template <class Exec>
std::unique_ptr<detail::MessageBuilder> detail::portable_message_builder(
    const Exec&, const Graph<typename Exec::memory_space>& graph) {
  return std::make_unique<PortableMessageBuilder<Exec>>(graph);
}

template <class Exec>
void permute_nodes(const Exec& exec, const Kokkos::View<const node_t*, typename Exec::memory_space>& index,
                   const Tensor<typename Exec::memory_space>& in, const TensorOutput<typename Exec::memory_space>& out) {
  const std::size_t N = index.extent(0);
  detail::check_node_map("permute_nodes", node_t(N), detail::extents("in", in), detail::extents("out", out));
  const std::size_t W = out.extent(1) * out.extent(2);
  const int D = int(out.extent(2));
  Kokkos::parallel_for(
      "dfgnn::permute_nodes", kokkos_impl::Range<Exec>(exec, 0, N * W), KOKKOS_LAMBDA(std::size_t i) {
        const std::size_t k = i % W;
        out(i / W, k / D, k % D) = in(index(i / W), k / D, k % D);
      });
}

#define DFGNN_INSTANTIATE(EXEC)                                                                       \
  template std::unique_ptr<detail::MessageBuilder> detail::portable_message_builder<EXEC>(                 \
      const EXEC&, const Graph<EXEC::memory_space>&);                                                       \
  template void permute_nodes<EXEC>(const EXEC&, const Kokkos::View<const node_t*, EXEC::memory_space>&, \
                                    const Tensor<EXEC::memory_space>&, const TensorOutput<EXEC::memory_space>&);

DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_INSTANTIATE)

}  // namespace dfgnn
