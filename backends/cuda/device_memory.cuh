#pragma once
// Device memory of graphs, plans and their preprocessing: the application's allocator where one
// is installed (cuda::set_device_allocator), else cudaMalloc, or cudaMallocAsync for a step's
// scratch; and the download of a step's scalars, the only host round trip.

#include "common.cuh"

#include <cstddef>
#include <utility>
#include <vector>

namespace dfgnn::cuda::detail {

/// Device allocations freed together (a plan's, a device graph's), with their bytes.
class DeviceArrays {
 public:
  DeviceArrays() = default;
  DeviceArrays(const DeviceArrays&) = delete;
  DeviceArrays& operator=(const DeviceArrays&) = delete;
  ~DeviceArrays();
  /// n uninitialised elements (null for n = 0).
  template <class T>
  T* alloc(std::size_t n) {
    return static_cast<T*>(alloc_bytes(n * sizeof(T)));
  }
  /// A copy of n host elements.
  template <class T>
  T* upload(const T* host, std::size_t n) {
    T* d = alloc<T>(n);
    if (n > 0) DFGNN_CUDA(cudaMemcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
  }
  std::size_t bytes() const { return bytes_; }
  /// Takes over `other`'s allocations.
  void take(DeviceArrays& other);

 private:
  void* alloc_bytes(std::size_t bytes);
  std::vector<std::pair<void*, void (*)(void*)>> ptrs_;  // each with the deallocator of its allocator
  std::size_t bytes_ = 0;
};

/// Scratch for one preprocessing step, released when it goes: stream-ordered (cudaMallocAsync),
/// or from the application's allocator after waiting for the stream.
class Scratch {
 public:
  explicit Scratch(cudaStream_t stream) : stream_(stream) {}
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch();
  template <class T>
  T* alloc(std::size_t n) {
    return static_cast<T*>(alloc_bytes(n * sizeof(T)));
  }
  cudaStream_t stream() const { return stream_; }

 private:
  void* alloc_bytes(std::size_t bytes);
  cudaStream_t stream_;
  std::vector<std::pair<void*, void (*)(void*)>> ptrs_;  // deallocator null: cudaFreeAsync
};

/// Throws, naming `what`, where `stream` is capturing a CUDA graph: what a plan builds on first
/// use (its backward's structure, the edges' destinations) allocates and waits, which a capture
/// cannot hold, so the call fails before it breaks the capture (docs/python.md, "Capturing a
/// training step").
void refuse_capture(cudaStream_t stream, const char* what);

/// Copies n device elements to the host and waits for the stream: the only host round trip.
template <class T>
std::vector<T> download(cudaStream_t stream, const T* device, std::size_t n) {
  std::vector<T> host(n);
  if (n > 0) DFGNN_CUDA(cudaMemcpyAsync(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost, stream));
  DFGNN_CUDA(cudaStreamSynchronize(stream));
  return host;
}

/// The scalars a step brings back: copies queued on the stream into pinned host memory and read
/// after one wait, where a download per scalar would wait once each. Readbacks nest: each takes
/// its slots from a per-thread pinned arena and returns them when it goes.
class Readback {
 public:
  explicit Readback(cudaStream_t stream);
  Readback(const Readback&) = delete;
  Readback& operator=(const Readback&) = delete;
  ~Readback();
  /// Queues the copy of n device elements; the result is valid after wait().
  template <class T>
  const T* add(const T* device, std::size_t n = 1) {
    T* host = static_cast<T*>(slot(n * sizeof(T)));
    if (n > 0) DFGNN_CUDA(cudaMemcpyAsync(host, device, n * sizeof(T), cudaMemcpyDeviceToHost, stream_));
    return host;
  }
  void wait() const;

 private:
  void* slot(std::size_t bytes);
  cudaStream_t stream_;
  std::size_t first_;  // the arena's offset when this readback began
};

/// One device scalar on the host, after one wait (a Readback of one).
template <class T>
T read_back(cudaStream_t stream, const T* device) {
  Readback r(stream);
  const T* host = r.add(device);
  r.wait();
  return *host;
}

}  // namespace dfgnn::cuda::detail
