// Public message-passing entries -> argument checks -> kernels, instantiated for every enabled
// execution space.

#include "message_passing.hpp"
#include "spaces.hpp"


namespace dfgnn {

namespace {

using namespace kokkos_impl;

template <class View>
detail::Extents extents(const char* name, const View& t) {
  return {name, t.data(), t.extent(0), t.extent(1), t.extent(2), sizeof(typename View::value_type)};
}

/// The node count of a square graph: message passing reads its node tensors at both ends of an
/// edge with one row count (bipartite graphs: the attention entries only, for now).
template <class Mem>
node_t square_nodes(const char* who, const Graph<Mem>& g) {
  if (g.host().bipartite()) throw Error(std::string(who) + ": message passing needs a square graph, not a bipartite one");
  return g.num_nodes();
}

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

}  // namespace

template <class Exec>
void gspmm(const Exec& exec, const Graph<typename Exec::memory_space>& graph, const Message& message, Reduce reduce,
           const Tensor<typename Exec::memory_space>& lhs, const Tensor<typename Exec::memory_space>& rhs,
           const TensorOutput<typename Exec::memory_space>& out, const ArgOutput<typename Exec::memory_space>& arg) {
  using Mem = typename Exec::memory_space;
  detail::check_gspmm("gspmm", square_nodes("gspmm", graph), graph.num_edges(), message, reduce, extents("lhs", lhs),
                      extents("rhs", rhs), extents("out", out), extents("arg", arg));
  const MessageOf<Mem> m{message.lhs, message.rhs, message.op, {lhs}, {rhs}};
  for_segments(exec, "dfgnn::gspmm", graph.num_nodes(), int(out.extent(1)), int(out.extent(2)),
               SpmmRows<Mem>{in_edges(graph), m, reduce, out, arg});
}

template <class Exec>
void gspmm_backward(const Exec& exec, const Graph<typename Exec::memory_space>& graph, const Message& message,
                    Reduce reduce, const Tensor<typename Exec::memory_space>& lhs,
                    const Tensor<typename Exec::memory_space>& rhs, const ArgInput<typename Exec::memory_space>& arg,
                    const Tensor<typename Exec::memory_space>& dout,
                    const TensorOutput<typename Exec::memory_space>& dlhs,
                    const TensorOutput<typename Exec::memory_space>& drhs) {
  using Mem = typename Exec::memory_space;
  detail::check_gspmm_backward("gspmm_backward", square_nodes("gspmm_backward", graph), graph.num_edges(), message, reduce,
                               extents("lhs", lhs), extents("rhs", rhs), extents("arg", arg), extents("dout", dout),
                               extents("dlhs", dlhs), extents("drhs", drhs));
  const int H = int(dout.extent(1)), D = int(dout.extent(2));
  SpmmTerm<Mem> term{{message.lhs, message.rhs, message.op, {lhs}, {rhs}}, reduce, {dout}, arg, graph.row_ptr(), false};
  if (dlhs.size()) gather(exec, "dfgnn::gspmm_backward_lhs", graph, message.lhs, term, dlhs, H, D);
  term.wrt_rhs = true;
  if (drhs.size()) gather(exec, "dfgnn::gspmm_backward_rhs", graph, message.rhs, term, drhs, H, D);
}

template <class Exec>
void gsddmm(const Exec& exec, const Graph<typename Exec::memory_space>& graph, BinaryOp op,
            const Tensor<typename Exec::memory_space>& x, const Tensor<typename Exec::memory_space>& y,
            const TensorOutput<typename Exec::memory_space>& out) {
  using Mem = typename Exec::memory_space;
  const std::size_t D = detail::check_gsddmm("gsddmm", square_nodes("gsddmm", graph), graph.num_edges(), op, extents("x", x),
                                             extents("y", y), extents("out", out));
  for_segments(exec, "dfgnn::gsddmm", graph.num_edges(), int(out.extent(1)), int(D),
               SddmmEdges<Mem>{one_edge(graph), op, {x}, {y}, out, int(D)});
}

template <class Exec>
void gsddmm_backward(const Exec& exec, const Graph<typename Exec::memory_space>& graph, BinaryOp op,
                     const Tensor<typename Exec::memory_space>& x, const Tensor<typename Exec::memory_space>& y,
                     const Tensor<typename Exec::memory_space>& dout,
                     const TensorOutput<typename Exec::memory_space>& dx,
                     const TensorOutput<typename Exec::memory_space>& dy) {
  using Mem = typename Exec::memory_space;
  const int D = int(detail::check_gsddmm_backward("gsddmm_backward", square_nodes("gsddmm_backward", graph), graph.num_edges(), op,
                                                  extents("x", x), extents("y", y), extents("dout", dout),
                                                  extents("dx", dx), extents("dy", dy)));
  const int H = int(dout.extent(1));
  SddmmTerm<Mem> term{op, {x}, {y}, dout, false};
  if (dx.size()) gather(exec, "dfgnn::gsddmm_backward_x", graph, Target::U, term, dx, H, D);
  term.wrt_y = true;
  if (dy.size()) gather(exec, "dfgnn::gsddmm_backward_y", graph, Target::V, term, dy, H, D);
}

template <class Exec>
void gcn_aggregate(const Exec& exec, const Graph<typename Exec::memory_space>& graph,
                   const Tensor<typename Exec::memory_space>& x, const TensorOutput<typename Exec::memory_space>& out) {
  using Mem = typename Exec::memory_space;
  detail::check_node_map("gcn_aggregate", square_nodes("gcn_aggregate", graph), extents("x", x), extents("out", out));
  const GcnTerm<Mem> term{graph.row_ptr(), graph.transposed().col_ptr, x, false};
  gather(exec, "dfgnn::gcn_aggregate", graph, Target::V, term, out, int(out.extent(1)), int(out.extent(2)));
}

template <class Exec>
void gcn_aggregate_backward(const Exec& exec, const Graph<typename Exec::memory_space>& graph,
                            const Tensor<typename Exec::memory_space>& dout,
                            const TensorOutput<typename Exec::memory_space>& dx) {
  using Mem = typename Exec::memory_space;
  detail::check_node_map("gcn_aggregate_backward", square_nodes("gcn_aggregate_backward", graph), extents("dout", dout), extents("dx", dx));
  const GcnTerm<Mem> term{graph.row_ptr(), graph.transposed().col_ptr, dout, true};
  gather(exec, "dfgnn::gcn_aggregate_backward", graph, Target::U, term, dx, int(dx.extent(1)), int(dx.extent(2)));
}

template <class Exec>
void permute_nodes(const Exec& exec, const Kokkos::View<const node_t*, typename Exec::memory_space>& index,
                   const Tensor<typename Exec::memory_space>& in, const TensorOutput<typename Exec::memory_space>& out) {
  const std::size_t N = index.extent(0);
  detail::check_node_map("permute_nodes", node_t(N), extents("in", in), extents("out", out));
  const std::size_t W = out.extent(1) * out.extent(2);
  const int D = int(out.extent(2));
  Kokkos::parallel_for(
      "dfgnn::permute_nodes", Kokkos::RangePolicy<Exec>(exec, 0, N * W), KOKKOS_LAMBDA(std::size_t i) {
        const std::size_t k = i % W;
        out(i / W, k / D, k % D) = in(index(i / W), k / D, k % D);
      });
}

#define DFGNN_INSTANTIATE(EXEC)                                                                                     \
  template void gspmm<EXEC>(const EXEC&, const Graph<EXEC::memory_space>&, const Message&, Reduce,                 \
                            const Tensor<EXEC::memory_space>&, const Tensor<EXEC::memory_space>&,                   \
                            const TensorOutput<EXEC::memory_space>&, const ArgOutput<EXEC::memory_space>&);         \
  template void gspmm_backward<EXEC>(const EXEC&, const Graph<EXEC::memory_space>&, const Message&, Reduce,        \
                                     const Tensor<EXEC::memory_space>&, const Tensor<EXEC::memory_space>&,          \
                                     const ArgInput<EXEC::memory_space>&, const Tensor<EXEC::memory_space>&,        \
                                     const TensorOutput<EXEC::memory_space>&, const TensorOutput<EXEC::memory_space>&); \
  template void gsddmm<EXEC>(const EXEC&, const Graph<EXEC::memory_space>&, BinaryOp,                              \
                             const Tensor<EXEC::memory_space>&, const Tensor<EXEC::memory_space>&,                  \
                             const TensorOutput<EXEC::memory_space>&);                                              \
  template void gsddmm_backward<EXEC>(const EXEC&, const Graph<EXEC::memory_space>&, BinaryOp,                     \
                                      const Tensor<EXEC::memory_space>&, const Tensor<EXEC::memory_space>&,         \
                                      const Tensor<EXEC::memory_space>&, const TensorOutput<EXEC::memory_space>&,   \
                                      const TensorOutput<EXEC::memory_space>&);                                     \
  template void gcn_aggregate<EXEC>(const EXEC&, const Graph<EXEC::memory_space>&, const Tensor<EXEC::memory_space>&, \
                                    const TensorOutput<EXEC::memory_space>&);                                      \
  template void gcn_aggregate_backward<EXEC>(const EXEC&, const Graph<EXEC::memory_space>&,                        \
                                             const Tensor<EXEC::memory_space>&,                                     \
                                             const TensorOutput<EXEC::memory_space>&);                              \
  template void permute_nodes<EXEC>(const EXEC&, const Kokkos::View<const node_t*, EXEC::memory_space>&,           \
                                    const Tensor<EXEC::memory_space>&, const TensorOutput<EXEC::memory_space>&);

DFGNN_FOR_EACH_EXECUTION_SPACE(DFGNN_INSTANTIATE)

}  // namespace dfgnn
