#pragma once
/// \file nccl.hpp
/// The NCCL transport of distributed.hpp (built with DFGNN_ENABLE_NCCL; CMake target
/// dfgnn::dfgnn_nccl): the halo exchanges as one group of ncclSend / ncclRecv per exchange, on a
/// communicator the application owns, on a CUDA stream of the transport's own (copies of a
/// transport share it). Buffers live in `MemorySpace`: device memory (Kokkos::CudaSpace, a plan
/// on Kokkos::Cuda) goes to NCCL as it is; host memory (a plan on a host space) is staged
/// through device memory of the current CUDA device, so a host plan's ranks can exchange over
/// their GPUs. Row counts and bytes are size_t all the way: no int limit.

#include <dfgnn/detail/pending.hpp>
#include <dfgnn/types.hpp>

#include <Kokkos_Core.hpp>
#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dfgnn {

template <class MemorySpace = Kokkos::HostSpace>
class NcclTransport {
 public:
  using memory_space = MemorySpace;

  /// The calls run on `comm` (which must outlive the transport and the plans that copy it) and
  /// on the CUDA device current here.
  explicit NcclTransport(ncclComm_t comm) : comm_(comm) {
    check(ncclCommUserRank(comm, &rank_), "ncclCommUserRank");
    check(ncclCommCount(comm, &ranks_), "ncclCommCount");
    cudaStream_t s = nullptr;
    cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    stream_ = std::shared_ptr<CUstream_st>(s, [](cudaStream_t t) { cudaStreamDestroy(t); });
  }

  ncclComm_t comm() const { return comm_; }
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  /// Begins moving rows of row_bytes each: send_counts[p] rows to rank p and recv_counts[p]
  /// from it, packed in rank order (one NCCL group).
  Pending start_all_to_all(const void* send, const std::vector<node_t>& send_counts, void* recv,
                           const std::vector<node_t>& recv_counts, std::size_t row_bytes) const {
    if (send_counts.size() != std::size_t(ranks_) || recv_counts.size() != std::size_t(ranks_))
      throw Error("NCCL all-to-all: " + std::to_string(send_counts.size()) + " and " +
                  std::to_string(recv_counts.size()) + " counts for " + std::to_string(ranks_) + " ranks");
    std::vector<void*> staged;  // a host plan's buffers on the device, freed when the exchange ends
    const std::size_t send_bytes = total(send_counts) * row_bytes, recv_bytes = total(recv_counts) * row_bytes;
    const char* from = static_cast<const char*>(send);
    char* to = static_cast<char*>(recv);
    if constexpr (host_buffers) {
      from = static_cast<const char*>(device_copy(staged, send, send_bytes));
      to = static_cast<char*>(device_copy(staged, nullptr, recv_bytes));
    }
    Pending pending = ended_by(staged);  // ends it on a throw below too
    check(ncclGroupStart(), "ncclGroupStart");
    std::size_t sent = 0, received = 0;
    for (int q = 0; q < ranks_; ++q) {
      const std::size_t out = std::size_t(send_counts[std::size_t(q)]) * row_bytes,
                        in = std::size_t(recv_counts[std::size_t(q)]) * row_bytes;
      if (out) check(ncclSend(from + sent, out, ncclChar, q, comm_, stream_.get()), "ncclSend");
      if (in) check(ncclRecv(to + received, in, ncclChar, q, comm_, stream_.get()), "ncclRecv");
      sent += out, received += in;
    }
    check(ncclGroupEnd(), "ncclGroupEnd");
    if constexpr (host_buffers)
      cuda(cudaMemcpyAsync(recv, to, recv_bytes, cudaMemcpyDeviceToHost, stream_.get()), "cudaMemcpyAsync");
    return pending;
  }

  /// The same, ended before it returns.
  void all_to_all(const void* send, const std::vector<node_t>& send_counts, void* recv,
                  const std::vector<node_t>& recv_counts, std::size_t row_bytes) const {
    start_all_to_all(send, send_counts, recv, recv_counts, row_bytes).wait();
  }

  /// `bytes` of host memory from every rank, in rank order (through device memory).
  void all_gather(const void* mine, void* all, std::size_t bytes) const {
    std::vector<void*> staged;
    const void* from = device_copy(staged, mine, bytes);
    void* to = device_copy(staged, nullptr, bytes * std::size_t(ranks_));
    Pending pending = ended_by(staged);
    check(ncclAllGather(from, to, bytes, ncclChar, comm_, stream_.get()), "ncclAllGather");
    cuda(cudaMemcpyAsync(all, to, bytes * std::size_t(ranks_), cudaMemcpyDeviceToHost, stream_.get()),
         "cudaMemcpyAsync");
    pending.wait();
  }

 private:
  /// Host memory goes to NCCL through device copies.
  static constexpr bool host_buffers = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;

  static std::size_t total(const std::vector<node_t>& counts) {
    std::size_t n = 0;
    for (node_t c : counts) n += std::size_t(c);
    return n;
  }

  /// What ends an operation on the stream: it synchronizes, then frees `staged`.
  Pending ended_by(const std::vector<void*>& staged) const {
    return Pending([stream = stream_, staged] {
      const cudaError_t rc = cudaStreamSynchronize(stream.get());
      for (void* p : staged) cudaFree(p);
      return rc == cudaSuccess ? std::string() : std::string("NCCL exchange: ") + cudaGetErrorString(rc);
    });
  }

  /// `bytes` of device memory, added to `staged`, holding a copy of host `from` (null:
  /// uninitialised).
  void* device_copy(std::vector<void*>& staged, const void* from, std::size_t bytes) const {
    void* d = nullptr;
    cuda(cudaMalloc(&d, bytes ? bytes : 1), "cudaMalloc");
    staged.push_back(d);
    if (from && bytes) cuda(cudaMemcpyAsync(d, from, bytes, cudaMemcpyHostToDevice, stream_.get()), "cudaMemcpyAsync");
    return d;
  }

  static void check(ncclResult_t rc, const char* call) {
    if (rc != ncclSuccess) throw Error(std::string(call) + " failed: " + ncclGetErrorString(rc));
  }
  static void cuda(cudaError_t rc, const char* call) {
    if (rc != cudaSuccess) throw Error(std::string(call) + " failed: " + cudaGetErrorString(rc));
  }

  ncclComm_t comm_;
  int rank_ = 0, ranks_ = 1;
  std::shared_ptr<CUstream_st> stream_;
};

}  // namespace dfgnn
