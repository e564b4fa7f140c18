// GoogleTest main that brackets the whole run with Kokkos initialize/finalize.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // An OpenMP Kokkos warns on stderr when OMP_PROC_BIND is unset, in this process and in every
  // CLI run the tests start (whose stderr they check); Kokkos' advice for unit tests is false.
  setenv("OMP_PROC_BIND", "false", 0);
  Kokkos::initialize(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  Kokkos::finalize();
  return result;
}
