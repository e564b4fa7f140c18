#pragma once
/// \file mpi.hpp
/// The MPI transport of distributed.hpp (built with DFGNN_ENABLE_MPI; CMake target
/// dfgnn::dfgnn_mpi): the halo exchanges as MPI_Ialltoallv on a communicator the application
/// owns, rows as one contiguous datatype so counts stay row counts (below 2^31 for any graph
/// dfgnn takes). Buffers are host memory: a CUDA-aware MPI is not assumed, so a plan on a GPU
/// stages its exchanges through the host.

#include <dfgnn/detail/pending.hpp>
#include <dfgnn/types.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <climits>
#include <memory>
#include <string>
#include <vector>

namespace dfgnn {

class MpiTransport {
 public:
  using memory_space = Kokkos::HostSpace;

  /// The calls run on `comm`, which must outlive the transport and the plans that copy it.
  explicit MpiTransport(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &ranks_), "MPI_Comm_size");
  }

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  /// Begins moving rows of row_bytes each: send_counts[p] rows to rank p and recv_counts[p]
  /// from it, packed in rank order.
  Pending start_all_to_all(const void* send, const std::vector<node_t>& send_counts, void* recv,
                           const std::vector<node_t>& recv_counts, std::size_t row_bytes) const {
    if (row_bytes > std::size_t(INT_MAX))
      throw Error("MPI all-to-all: rows of " + std::to_string(row_bytes) + " bytes exceed MPI's int count");
    // MPI reads the counts and displacements until the exchange ends: they live in its Pending.
    const std::size_t P = std::size_t(ranks_);
    // Send counts, send displacements, receive counts, receive displacements.
    const auto counts = std::make_shared<std::vector<int>>();
    counts->reserve(4 * P);
    for (const auto* c : {&send_counts, &recv_counts}) {
      const std::vector<int> at = offsets(*c);
      counts->insert(counts->end(), c->begin(), c->end());
      counts->insert(counts->end(), at.begin(), at.end());
    }
    MPI_Datatype row;
    check(MPI_Type_contiguous(int(row_bytes), MPI_BYTE, &row), "MPI_Type_contiguous");
    check(MPI_Type_commit(&row), "MPI_Type_commit");
    MPI_Request request;
    const int* c = counts->data();
    const int rc = MPI_Ialltoallv(send, c, c + P, row, recv, c + 2 * P, c + 3 * P, row, comm_, &request);
    if (rc != MPI_SUCCESS) MPI_Type_free(&row);
    check(rc, "MPI_Ialltoallv");
    return Pending([request, row, counts]() mutable {
      const int done = MPI_Wait(&request, MPI_STATUS_IGNORE);
      MPI_Type_free(&row);
      return done == MPI_SUCCESS ? std::string() : "MPI_Ialltoallv failed: " + message(done);
    });
  }

  /// The same, ended before it returns.
  void all_to_all(const void* send, const std::vector<node_t>& send_counts, void* recv,
                  const std::vector<node_t>& recv_counts, std::size_t row_bytes) const {
    start_all_to_all(send, send_counts, recv, recv_counts, row_bytes).wait();
  }

  /// `bytes` from every rank, in rank order.
  void all_gather(const void* mine, void* all, std::size_t bytes) const {
    if (bytes > std::size_t(INT_MAX))
      throw Error("MPI all-gather: " + std::to_string(bytes) + " bytes exceed MPI's int count");
    check(MPI_Allgather(mine, int(bytes), MPI_BYTE, all, int(bytes), MPI_BYTE, comm_), "MPI_Allgather");
  }

 private:
  static_assert(sizeof(node_t) == sizeof(int), "MPI counts are ints");

  /// Where each peer's rows start: Error if a rank's rows pass MPI's int displacements.
  std::vector<int> offsets(const std::vector<node_t>& counts) const {
    if (counts.size() != std::size_t(ranks_))
      throw Error("MPI all-to-all: " + std::to_string(counts.size()) + " counts for " + std::to_string(ranks_) + " ranks");
    std::vector<int> r(counts.size());
    long long at = 0;
    for (std::size_t p = 0; p < counts.size(); ++p) {
      r[p] = int(at);
      at += counts[p];
      if (at > INT_MAX) throw Error("MPI all-to-all: more than 2^31 - 1 rows to or from one rank");
    }
    return r;
  }

  static std::string message(int rc) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    return std::string(text, std::size_t(length));
  }
  static void check(int rc, const char* call) {
    if (rc != MPI_SUCCESS) throw Error(std::string(call) + " failed: " + message(rc));
  }

  MPI_Comm comm_;
  int rank_ = 0, ranks_ = 1;
};

}  // namespace dfgnn
