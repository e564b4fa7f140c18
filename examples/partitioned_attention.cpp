// Graph Transformer attention over P MPI ranks through the installed package (dfgnn::dfgnn_mpi):
// the graph's nodes are split into P contiguous blocks, each rank builds its plan from its own
// rows' in-edges alone (as a partitioned application has them) and passes its own rows of Q, K
// and V; the plan exchanges the source rows it needs. Every rank checks its rows of the output
// against the float64 reference of the whole graph; rank 0 prints the largest error.
//   mpirun -np P partitioned_attention [scale]   an R-MAT graph of 2^scale nodes (default 11)
#include <dfgnn/dfgnn.hpp>
#include <dfgnn/distributed.hpp>
#include <dfgnn/generate.hpp>
#include <dfgnn/mpi.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    Kokkos::ScopeGuard guard(argc, argv);
    using Exec = Kokkos::DefaultExecutionSpace;
    using Mem = Exec::memory_space;
    const int scale = argc > 1 ? std::atoi(argv[1]) : 11;
    const int H = 4, D = 16;
    const dfgnn::MpiTransport comm(MPI_COMM_WORLD);
    try {
      // Every rank generates the same graph here (fixed seed); an application would read its part.
      const dfgnn::HostGraph whole = dfgnn::gen::rmat(scale, 8);
      const dfgnn::node_t N = whole.num_nodes;
      std::vector<int> owner(std::size_t(N), 0);
      for (dfgnn::node_t v = 0; v < N; ++v) owner[std::size_t(v)] = int(std::int64_t(v) * comm.ranks() / N);
      // This rank's in-edges: those whose destination it owns, with their ids in the whole graph.
      std::vector<dfgnn::node_t> src, dst;
      std::vector<dfgnn::edge_t> ids;
      for (dfgnn::edge_t e = 0; e < whole.num_edges(); ++e) {
        if (owner[std::size_t(whole.dst[std::size_t(e)])] != comm.rank()) continue;
        src.push_back(whole.src[std::size_t(e)]), dst.push_back(whole.dst[std::size_t(e)]), ids.push_back(e);
      }
      Exec exec;
      const dfgnn::DistributedPlan<Exec, dfgnn::MpiTransport> plan(exec, comm, N, src, dst, ids, owner,
                                                                  dfgnn::ScoreKind::GT, H, D);
      // The whole graph's features, from which each rank takes its own rows (an application has
      // only those).
      std::vector<float> x(std::size_t(N) * H * D);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(int((i * 2654435761u) % 17) - 8) / 8.0f;
      const std::size_t n = std::size_t(plan.num_rows());
      const std::vector<float> mine = dfgnn::take_rows(x, plan.share().rows, std::size_t(H) * D);
      dfgnn::NodeOutput<Mem> rows("x", n, H, D), out("out", n, H, D);
      Kokkos::deep_copy(rows, Kokkos::View<const float***, Kokkos::LayoutRight, Kokkos::HostSpace>(mine.data(), n, H, D));
      const dfgnn::NodeFeatures<Mem> q(rows);
      dfgnn::attention(exec, plan, dfgnn::GT{}, dfgnn::tensors(q, q, q), out);  // Q = K = V = x
      const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
      const std::vector<double> ref = dfgnn::take_rows(
          dfgnn::reference_attention(whole, H, D, dfgnn::GT{}, x.data(), x.data(), x.data()), plan.share().rows,
          std::size_t(H) * D);
      double err = n ? dfgnn::max_relative_error(got.data(), ref) : 0.0, worst = 0;
      MPI_Allreduce(&err, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      std::printf("rank %d of %d: %zu rows, %zu in-edges, max relative error %.2g\n", comm.rank(), comm.ranks(), n,
                  src.size(), err);
      if (comm.rank() == 0)
        std::printf("partitioned GT %dx%d on %d nodes over %d ranks: %s (max relative error %.2g)\n", H, D, N,
                    comm.ranks(), worst < 1e-4 ? "ok" : "WRONG", worst);
      status = worst < 1e-4 ? 0 : 1;
    } catch (const dfgnn::Error& e) {
      std::fprintf(stderr, "partitioned_attention rank %d: %s\n", comm.rank(), e.what());
      status = 2;
    }
  }
  MPI_Finalize();
  return status;
}
