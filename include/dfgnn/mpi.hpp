#pragma once
/// \file mpi.hpp
/// The MPI transport of distributed.hpp (built with DFGNN_ENABLE_MPI; CMake target
/// dfgnn::dfgnn_mpi): the halo exchanges as MPI_Ialltoallv on a communicator the application
/// owns, rows as one contiguous datatype so counts stay row counts (below 2^31 for any graph
/// dfgnn takes). Buffers are host memory: a CUDA-aware MPI is not assumed, so a plan on a GPU
/// stages its exchanges through the host.

#include <dfgnn/types.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <climits>
#include <string>
#include <utility>
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

  /// An all-to-all begun (MPI_Ialltoallv): wait() ends it, as does the destructor. Until then
  /// its buffers must stay as they are; it holds the counts and displacements MPI reads.
  class Pending {
   public:
    Pending() = default;
    Pending(Pending&& o) noexcept { *this = std::move(o); }
    Pending& operator=(Pending&& o) noexcept {
      if (this != &o) {
        finish();
        request_ = std::exchange(o.request_, MPI_REQUEST_NULL), row_ = std::exchange(o.row_, MPI_DATATYPE_NULL);
        counts_ = std::move(o.counts_);
      }
      return *this;
    }
    ~Pending() { finish(); }

    void wait() {
      const int rc = finish();
      check(rc, "MPI_Ialltoallv");
    }

   private:
    friend class MpiTransport;
    int finish() noexcept {
      int rc = MPI_SUCCESS;
      if (request_ != MPI_REQUEST_NULL) rc = MPI_Wait(&request_, MPI_STATUS_IGNORE);
      if (row_ != MPI_DATATYPE_NULL) MPI_Type_free(&row_);
      return rc;
    }
    MPI_Request request_ = MPI_REQUEST_NULL;
    MPI_Datatype row_ = MPI_DATATYPE_NULL;
    std::vector<int> counts_;  ///< send counts, send displacements, receive counts, receive displacements
  };

  /// Begins moving rows of row_bytes each: send_counts[p] rows to rank p and recv_counts[p]
  /// from it, packed in rank order.
  Pending start_all_to_all(const void* send, const std::vector<node_t>& send_counts, void* recv,
                           const std::vector<node_t>& recv_counts, std::size_t row_bytes) const {
    if (row_bytes > std::size_t(INT_MAX))
      throw Error("MPI all-to-all: rows of " + std::to_string(row_bytes) + " bytes exceed MPI's int count");
    Pending p;
    const std::size_t P = std::size_t(ranks_);
    p.counts_.reserve(4 * P);
    for (const auto* counts : {&send_counts, &recv_counts}) {
      const std::vector<int> at = offsets(*counts);
      p.counts_.insert(p.counts_.end(), counts->begin(), counts->end());
      p.counts_.insert(p.counts_.end(), at.begin(), at.end());
    }
    check(MPI_Type_contiguous(int(row_bytes), MPI_BYTE, &p.row_), "MPI_Type_contiguous");
    check(MPI_Type_commit(&p.row_), "MPI_Type_commit");
    const int* c = p.counts_.data();
    check(MPI_Ialltoallv(send, c, c + P, p.row_, recv, c + 2 * P, c + 3 * P, p.row_, comm_, &p.request_),
          "MPI_Ialltoallv");
    return p;
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

  static void check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    throw Error(std::string(call) + " failed: " + std::string(text, std::size_t(length)));
  }

  MPI_Comm comm_;
  int rank_ = 0, ranks_ = 1;
};

}  // namespace dfgnn
