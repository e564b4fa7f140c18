#pragma once
/// \file kokkos_kernels.hpp
/// Graphs from Kokkos Kernels containers. Header-only: include it from code that links Kokkos
/// Kernels (dfgnn's own tests do when find_package(KokkosKernels) succeeds).
///
/// A CrsMatrix / StaticCrsGraph is read as the adjacency by destination, as in DF-GNN's
/// S = (Q K^T) .* A: row v lists the sources u of the edges u -> v. Its values, in CSR order,
/// are the edge values (the graph keeps that order, so they need no permutation).

#include <dfgnn/csr.hpp>

#include <KokkosSparse_CrsMatrix.hpp>

#include <string>
#include <vector>

namespace dfgnn {

/// The graph of a square StaticCrsGraph (rows = destinations, entries = sources).
template <class CrsGraph>
HostGraph graph_from_crs_graph(const CrsGraph& graph, std::size_t num_cols) {
  const std::size_t n = graph.numRows();
  if (n != num_cols)
    throw Error("graph: the adjacency must be square, got " + std::to_string(n) + " x " +
                std::to_string(num_cols));
  const auto rows = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), graph.row_map);
  const auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), graph.entries);
  std::vector<edge_t> row_ptr(rows.data(), rows.data() + rows.extent(0));
  if (row_ptr.empty()) row_ptr.push_back(0);
  std::vector<node_t> src(cols.extent(0));
  for (std::size_t e = 0; e < src.size(); ++e) {
    if (cols(e) < 0 || std::size_t(cols(e)) >= n)
      throw Error("graph: column " + std::to_string(cols(e)) + " of entry " + std::to_string(e) +
                  " is outside [0, " + std::to_string(n) + ")");
    src[e] = node_t(cols(e));
  }
  return graph_from_csr(node_t(n), std::move(row_ptr), std::move(src));
}

/// The graph of a square CrsMatrix; its values (CSR order) are copied to `values` if given.
template <class Matrix>
HostGraph graph_from_crs_matrix(const Matrix& A, std::vector<float>* values = nullptr) {
  HostGraph g = graph_from_crs_graph(A.graph, std::size_t(A.numCols()));
  if (values) {
    const auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
    values->assign(v.data(), v.data() + v.extent(0));
  }
  return g;
}

}  // namespace dfgnn
