#pragma once
// `mpirun -np P dfgnn attention ...` (an MPI build, DFGNN_ENABLE_MPI): every rank reads the
// same files, takes its partition's rows, runs them through a DistributedPlan over MPI, and
// rank 0 gathers the whole output and gradients and writes them (docs/distributed.md). Without
// MPI the tool is one rank.

#include "run.hpp"

#include <dfgnn/csr.hpp>
#include <dfgnn/op.hpp>

#include <cstdlib>
#include <memory>
#include <vector>

namespace dfgnn::cli {

#ifdef DFGNN_ENABLE_MPI
/// MPI_Init for the tool's life, MPI_Finalize after.
class Ranks {
 public:
  Ranks(int& argc, char**& argv);
  ~Ranks();
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;
};
int rank();
int ranks();
/// Whether the ranks have begun the run's collectives: an error after that may be one rank's
/// alone, and the others would wait for it (the tool then aborts them all).
bool collectives_begun();
/// Ends every rank with `code` (MPI_Abort).
[[noreturn]] void abort_ranks(int code);

/// A forward and, in training, backward of the portable kernels on this rank's rows of the
/// whole graph `g` (partitioned by partition_by_edges over the ranks); the Inputs are the whole
/// graph's, and rank 0 gets the whole output and gradients (the others empty ones).
class DistributedRun final : public Run {
 public:
  DistributedRun(const HostGraph& g, const Inputs& in, Strategy strategy, bool training = false);
  ~DistributedRun() override;
  Strategy strategy() const override;
  Backend backend() const override { return Backend::Portable; }
  void forward() override;
  std::vector<float> output() const override;
  std::vector<float> weights() const override;
  /// dLoss/dOut of the whole graph [N,H,D].
  void set_dout(const std::vector<float>& dout) override;
  void backward() override;
  Gradients gradients() const override;

 private:
  struct State;
  std::unique_ptr<State> s_;
};
#else
struct Ranks {
  Ranks(int&, char**&) {}
};
inline int rank() { return 0; }
inline int ranks() { return 1; }
inline bool collectives_begun() { return false; }
[[noreturn]] inline void abort_ranks(int code) { std::exit(code); }
#endif

}  // namespace dfgnn::cli
