#pragma once
/// \file graph.hpp
/// The graph on a Kokkos memory space: destination-major CSR, COO rows, the permutation back
/// to the caller's edge order, and the transposed structure built on demand.

#include <dfgnn/csr.hpp>
#include <dfgnn/detail/parallel.hpp>

#include <Kokkos_Core.hpp>

// Kokkos::Cuda plans run the CUDA-native kernels too (resolve_backend) in a build that has them.
#if defined(DFGNN_ENABLE_CUDA) && defined(KOKKOS_ENABLE_CUDA)
#define DFGNN_NATIVE_CUDA 1
#endif

#include <memory>
#include <string>
#include <vector>

namespace dfgnn {

namespace detail {
template <class T, class MemorySpace>
Kokkos::View<T*, MemorySpace> upload(const std::string& label, const std::vector<T>& host) {
  Kokkos::View<T*, MemorySpace> view(Kokkos::view_alloc(Kokkos::WithoutInitializing, label),
                                     host.size());
  Kokkos::deep_copy(view, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                              host.data(), host.size()));
  return view;
}
inline HostGraph validated(HostGraph g) {
  validate(g);
  return g;
}

/// The Kokkos host space's concurrency while Kokkos runs (0 before and after): the default of
/// preprocessing_threads() in every program that includes this header (csr.hpp).
inline unsigned kokkos_host_concurrency() {
  return Kokkos::is_initialized() ? unsigned(Kokkos::DefaultHostExecutionSpace().concurrency()) : 0u;
}
inline const bool kokkos_host_concurrency_registered = (set_host_concurrency_source(&kokkos_host_concurrency), true);

}  // namespace detail

/// A graph of E edges u -> v on `MemorySpace`, aggregated at its N destinations (rows) from its
/// NS sources (NS = N unless bipartite, HostGraph).
/// Copies are cheap and share the arrays. The host copy of the structure is kept: plans read
/// the degrees from it, and the transposed structure is built from it on first use.
template <class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
class Graph {
 public:
  using memory_space = MemorySpace;
  template <class T>
  using array = Kokkos::View<const T*, MemorySpace>;

  /// Edges grouped by source (CSC), for gradients gathered at sources.
  struct Transposed {
    array<edge_t> col_ptr;   ///< [NS+1]
    array<node_t> dst;       ///< [E] destination per CSC edge
    array<edge_t> csr_edge;  ///< [E] CSC position -> CSR position
  };

  Graph() : Graph(HostGraph{}) {}
  /// Throws Error unless `host` is consistent (validate).
  explicit Graph(HostGraph host)
      : host_(std::make_shared<const HostGraph>(detail::validated(std::move(host)))),
        row_ptr_(detail::upload<edge_t, MemorySpace>("dfgnn::row_ptr", host_->row_ptr)),
        src_(detail::upload<node_t, MemorySpace>("dfgnn::src", host_->src)),
        dst_(detail::upload<node_t, MemorySpace>("dfgnn::dst", host_->dst)),
        edge_id_(detail::upload<edge_t, MemorySpace>("dfgnn::edge_id", host_->edge_id)),
        transposed_(std::make_shared<std::unique_ptr<Transposed>>()) {}

  /// Builds the graph from edge arrays on the host (edge i is src[i] -> dst[i]).
  static Graph from_edges(node_t num_nodes, const std::vector<node_t>& src,
                          const std::vector<node_t>& dst) {
    return Graph(graph_from_edges(num_nodes, src, dst));
  }
  /// The same for a bipartite graph (sources in [0, num_src_nodes), destinations in [0, num_dst_nodes)).
  static Graph from_edges(node_t num_src_nodes, node_t num_dst_nodes, const std::vector<node_t>& src,
                          const std::vector<node_t>& dst) {
    return Graph(graph_from_edges(num_src_nodes, num_dst_nodes, src, dst));
  }

  node_t num_nodes() const { return host_->num_nodes; }  ///< N: destinations (rows)
  node_t num_src_nodes() const { return host_->num_src_nodes; }  ///< NS: sources
  edge_t num_edges() const { return host_->num_edges(); }
  const DegreeStats& stats() const { return host_->stats; }
  const HostGraph& host() const { return *host_; }

  array<edge_t> row_ptr() const { return row_ptr_; }  ///< [N+1]
  array<node_t> src() const { return src_; }          ///< [E] source per CSR edge
  array<node_t> dst() const { return dst_; }          ///< [E] destination per CSR edge
  array<edge_t> edge_id() const { return edge_id_; }  ///< [E] CSR position -> caller's edge index

  /// The CSC structure; built and uploaded on the first call, then shared by all copies.
  const Transposed& transposed() const {
    if (!*transposed_) {
      const HostCsc t = dfgnn::detail::transpose_of_valid(*host_);  // validated by the constructor
      *transposed_ = std::make_unique<Transposed>(
          Transposed{detail::upload<edge_t, MemorySpace>("dfgnn::col_ptr", t.col_ptr),
                     detail::upload<node_t, MemorySpace>("dfgnn::csc_dst", t.dst),
                     detail::upload<edge_t, MemorySpace>("dfgnn::csc_edge", t.csr_edge)});
    }
    return **transposed_;
  }

 private:
  std::shared_ptr<const HostGraph> host_;
  array<edge_t> row_ptr_;
  array<node_t> src_, dst_;
  array<edge_t> edge_id_;
  std::shared_ptr<std::unique_ptr<Transposed>> transposed_;
};

}  // namespace dfgnn
