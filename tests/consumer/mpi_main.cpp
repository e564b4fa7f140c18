// Runs GT attention over the MPI ranks through the installed package (dfgnn::dfgnn_mpi): each
// rank passes its rows' in-edges alone, and its rows of out must match the float64 reference.
#include <dfgnn/dfgnn.hpp>
#include <dfgnn/distributed.hpp>
#include <dfgnn/mpi.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    Kokkos::ScopeGuard guard(argc, argv);
    using Exec = Kokkos::DefaultExecutionSpace;
    using Mem = Exec::memory_space;
    const int N = 6, H = 2, D = 3;
    const std::vector<dfgnn::node_t> src{0, 1, 2, 3, 1, 4, 5, 5, 2}, dst{1, 2, 3, 0, 0, 5, 4, 0, 2};
    std::vector<float> x(std::size_t(N) * H * D);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(i % 7) - 0.2f;
    const dfgnn::MpiTransport comm(MPI_COMM_WORLD);
    std::vector<int> owner(N);
    for (int v = 0; v < N; ++v) owner[std::size_t(v)] = v % comm.ranks();
    std::vector<dfgnn::node_t> my_src, my_dst;
    std::vector<dfgnn::edge_t> my_ids;
    for (std::size_t e = 0; e < src.size(); ++e) {
      if (owner[std::size_t(dst[e])] != comm.rank()) continue;
      my_src.push_back(src[e]), my_dst.push_back(dst[e]), my_ids.push_back(dfgnn::edge_t(e));
    }
    Exec exec;
    const dfgnn::DistributedPlan<Exec, dfgnn::MpiTransport> plan(exec, comm, N, my_src, my_dst, my_ids, owner,
                                                                dfgnn::ScoreKind::GT, H, D);
    const std::size_t n = std::size_t(plan.num_rows());
    // This rank's rows of x, as Q, K and V.
    const std::vector<float> my_x = dfgnn::take_rows(x, plan.share().rows, std::size_t(H) * D);
    dfgnn::NodeOutput<Mem> rows("x", n, H, D);
    Kokkos::deep_copy(rows, Kokkos::View<const float***, Kokkos::LayoutRight, Kokkos::HostSpace>(my_x.data(), n, H, D));
    const dfgnn::NodeFeatures<Mem> mine(rows);
    dfgnn::NodeOutput<Mem> out("out", n, H, D);
    dfgnn::attention(exec, plan, dfgnn::GT{}, dfgnn::tensors(mine, mine, mine), out);
    const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    const dfgnn::HostGraph g = dfgnn::graph_from_edges(N, src, dst);
    const std::vector<double> whole = dfgnn::reference_attention(g, H, D, dfgnn::GT{}, x.data(), x.data(), x.data());
    const std::vector<double> ref = dfgnn::take_rows(whole, plan.share().rows, std::size_t(H) * D);
    const double err = n ? dfgnn::max_relative_error(got.data(), ref) : 0.0;
    std::printf("consumer_mpi rank %d of %d: %s, max relative error %.3g\n", comm.rank(), comm.ranks(),
                err < 1e-5 ? "ok" : "WRONG", err);
    status = err < 1e-5 ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}
