// The distributed checks (tests/distributed_checks.hpp) over NCCL: `dfgnn_nccl_tests` forks
// DFGNN_TEST_RANKS processes (default 2), rank r on GPU r mod the GPUs; rank 0 makes the NCCL id
// and pipes it to the others. The plans run on the build's default Kokkos space (the host in a
// Serial build: the exchanges are staged through each rank's GPU). The exit status is the
// worst rank's. The parent touches no CUDA: a forked child could not use it after.

#include <dfgnn/nccl.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
ncclComm_t world = nullptr;
}

using Transport = dfgnn::NcclTransport<Kokkos::DefaultExecutionSpace::memory_space>;
Transport test_transport() {
  static const Transport t(world);  // one stream per process
  return t;
}

#include "../distributed_checks.hpp"

namespace {

/// Rank r of P: its GPU, the communicator, the checks. Returns the failed-test status.
int run_rank(int r, int P, int id_in, const std::vector<int>& id_out, int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "rank %d: no CUDA device\n", r);
    return 1;
  }
  cudaSetDevice(r % devices);
  ncclUniqueId id;
  if (r == 0) {
    ncclGetUniqueId(&id);
    for (int fd : id_out)
      if (write(fd, &id, sizeof id) != ssize_t(sizeof id)) return 1;
  } else if (read(id_in, &id, sizeof id) != ssize_t(sizeof id)) {
    return 1;
  }
  if (ncclCommInitRank(&world, P, id, r) != ncclSuccess) {
    std::fprintf(stderr, "rank %d: ncclCommInitRank failed\n", r);
    return 1;
  }
  int failed = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    failed = RUN_ALL_TESTS();
  }
  ncclCommDestroy(world);
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("DFGNN_TEST_RANKS");
  const int P = env ? std::atoi(env) : 2;
  if (P < 1) {
    std::fprintf(stderr, "DFGNN_TEST_RANKS must be at least 1\n");
    return 2;
  }
  std::vector<int> reads(std::size_t(P), -1), writes(std::size_t(P), -1);
  for (int r = 1; r < P; ++r) {
    int fds[2];
    if (pipe(fds) != 0) return 2;
    reads[std::size_t(r)] = fds[0], writes[std::size_t(r)] = fds[1];
  }
  std::vector<pid_t> children;
  for (int r = 0; r < P; ++r) {
    const pid_t pid = fork();
    if (pid == 0)
      _exit(run_rank(r, P, reads[std::size_t(r)], r == 0 ? std::vector<int>(writes.begin() + 1, writes.end())
                                                             : std::vector<int>{},
                     argc, argv));
    children.push_back(pid);
  }
  int worst = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    worst = std::max(worst, WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
  return worst;
}
