// The distributed checks (tests/distributed_checks.hpp) over MPI, run under mpirun with
// P = 1..4 (ctest Mpi1..Mpi4); every rank exits with the same status.

#include <dfgnn/mpi.hpp>

using Transport = dfgnn::MpiTransport;
Transport test_transport() { return Transport(MPI_COMM_WORLD); }

#include "../distributed_checks.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int failed = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    failed = RUN_ALL_TESTS();
  }
  int any = 0;  // every rank exits with the same status
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
