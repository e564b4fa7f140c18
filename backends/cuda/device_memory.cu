// The device memory of device_memory.cuh: the application's allocator (set once, before
// graphs and plans are built), cudaMalloc, and stream-ordered scratch.

#include "device_memory.cuh"

#include <dfgnn/cuda.hpp>

#include <stdexcept>
#include <string>

namespace dfgnn::cuda::detail {

namespace {

DeviceAllocator application_allocator;  // set once, before graphs and plans are built

void free_device(void* p) { cudaFree(p); }  // no throw: called from destructors

/// `bytes` from the application's allocator, with its deallocator; {null, null} when none is set.
std::pair<void*, void (*)(void*)> application_alloc(std::size_t bytes) {
  if (application_allocator.allocate == nullptr) return {nullptr, nullptr};
  void* d = application_allocator.allocate(bytes);
  if (d == nullptr)
    throw std::runtime_error("dfgnn::cuda: the application's allocator failed for " + std::to_string(bytes) + " bytes");
  return {d, application_allocator.deallocate};
}

}  // namespace

DeviceArrays::~DeviceArrays() {
  for (const auto& [p, deallocate] : ptrs_) deallocate(p);
}

void* DeviceArrays::alloc_bytes(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  auto a = application_alloc(bytes);
  if (a.first == nullptr) {
    DFGNN_CUDA(cudaMalloc(&a.first, bytes));
    a.second = free_device;
  }
  ptrs_.push_back(a);
  bytes_ += bytes;
  return a.first;
}

void DeviceArrays::take(DeviceArrays& other) {
  ptrs_.insert(ptrs_.end(), other.ptrs_.begin(), other.ptrs_.end());
  bytes_ += other.bytes_;
  other.ptrs_.clear();
  other.bytes_ = 0;
}

Scratch::~Scratch() {
  bool waited = false;
  for (const auto& [p, deallocate] : ptrs_) {
    if (deallocate == nullptr) {
      cudaFreeAsync(p, stream_);
      continue;
    }
    if (!waited) cudaStreamSynchronize(stream_), waited = true;  // its kernels may still read it
    deallocate(p);
  }
}

void* Scratch::alloc_bytes(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  auto a = application_alloc(bytes);
  if (a.first == nullptr) DFGNN_CUDA(cudaMallocAsync(&a.first, bytes, stream_));  // freed by cudaFreeAsync
  ptrs_.push_back(a);
  return a.first;
}

namespace {

/// A thread's pinned staging memory for Readback, used as a stack.
struct PinnedArena {
  static constexpr std::size_t kBytes = 64 * 1024;  // the preprocessing steps read back a few hundred bytes
  char* base = nullptr;
  std::size_t used = 0;
  ~PinnedArena() { cudaFreeHost(base); }
};
thread_local PinnedArena arena;

}  // namespace

Readback::Readback(cudaStream_t stream) : stream_(stream) {
  if (arena.base == nullptr) DFGNN_CUDA(cudaMallocHost(&arena.base, PinnedArena::kBytes));
  first_ = arena.used;
}

Readback::~Readback() {
  cudaStreamSynchronize(stream_);  // no copy may still write slots a later readback takes
  arena.used = first_;
}

void* Readback::slot(std::size_t bytes) {
  const std::size_t at = (arena.used + 15) / 16 * 16;
  if (at + bytes > PinnedArena::kBytes)
    throw std::runtime_error("dfgnn::cuda: Readback needs " + std::to_string(bytes) + " more pinned bytes than its " +
                             std::to_string(PinnedArena::kBytes));
  arena.used = at + bytes;
  return arena.base + at;
}

void Readback::wait() const { DFGNN_CUDA(cudaStreamSynchronize(stream_)); }

void refuse_capture(cudaStream_t stream, const char* what) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  // The legacy default stream answers cudaErrorStreamCaptureImplicit while another captures.
  if (cudaStreamIsCapturing(stream, &status) == cudaSuccess && status == cudaStreamCaptureStatusNone) return;
  (void)cudaGetLastError();
  throw std::runtime_error(std::string("dfgnn::cuda: ") + what +
                           " is built by the first call that needs it, and the stream is capturing a CUDA graph, "
                           "which cannot hold that: make the call once before capturing");
}

}  // namespace dfgnn::cuda::detail

namespace dfgnn::cuda {

void set_device_allocator(const DeviceAllocator& allocator) {
  if ((allocator.allocate == nullptr) != (allocator.deallocate == nullptr))
    throw Error("cuda::set_device_allocator: give both functions, or neither");
  detail::application_allocator = allocator;
}

}  // namespace dfgnn::cuda
