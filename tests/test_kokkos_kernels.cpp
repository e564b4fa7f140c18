// Graphs from Kokkos Kernels matrices (built when Kokkos Kernels is found).

#include <dfgnn/kokkos_kernels.hpp>
#include <dfgnn/reference.hpp>

#include <gtest/gtest.h>

namespace {

using Matrix = KokkosSparse::CrsMatrix<float, int, Kokkos::DefaultExecutionSpace>;

Matrix make_matrix(int rows, int cols, std::vector<int> row_map, std::vector<int> entries,
                   std::vector<float> values) {
  typename Matrix::row_map_type::non_const_type r("rows", row_map.size());
  typename Matrix::index_type::non_const_type c("cols", entries.size());
  typename Matrix::values_type::non_const_type v("vals", values.size());
  auto hr = Kokkos::create_mirror_view(r);
  auto hc = Kokkos::create_mirror_view(c);
  auto hv = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < row_map.size(); ++i) hr(i) = row_map[i];
  for (std::size_t i = 0; i < entries.size(); ++i) hc(i) = entries[i], hv(i) = values[i];
  Kokkos::deep_copy(r, hr), Kokkos::deep_copy(c, hc), Kokkos::deep_copy(v, hv);
  return Matrix("A", rows, cols, int(values.size()), v, r, c);
}

TEST(KokkosKernels, CrsMatrixRowsAreDestinations) {
  // Row 0 <- {1, 2}, row 1 <- {}, row 2 <- {0}.
  const Matrix A = make_matrix(3, 3, {0, 2, 2, 3}, {1, 2, 0}, {0.5f, 2.0f, 3.0f});
  std::vector<float> values;
  const dfgnn::HostGraph g = dfgnn::graph_from_crs_matrix(A, &values);
  EXPECT_EQ(g.num_nodes, 3);
  EXPECT_EQ(g.row_ptr, (std::vector<dfgnn::edge_t>{0, 2, 2, 3}));
  EXPECT_EQ(g.src, (std::vector<dfgnn::node_t>{1, 2, 0}));
  EXPECT_EQ(g.dst, (std::vector<dfgnn::node_t>{0, 0, 2}));
  EXPECT_EQ(values, (std::vector<float>{0.5f, 2.0f, 3.0f}));
}

TEST(KokkosKernels, RejectsNonSquareAndOutOfRange) {
  EXPECT_THROW(dfgnn::graph_from_crs_matrix(make_matrix(2, 3, {0, 1, 1}, {2}, {1.0f})), dfgnn::Error);
  EXPECT_THROW(dfgnn::graph_from_crs_matrix(make_matrix(2, 2, {0, 1, 1}, {5}, {1.0f})), dfgnn::Error);
}

}  // namespace
