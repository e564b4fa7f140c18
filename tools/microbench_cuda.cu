// The CUDA-native Device's microbenchmark kernels (device_cuda.cpp): a gather of rows in 4-byte
// words, one thread a word, as the kernels load feature rows; and a kernel that does nothing.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace dfgnn::cli {

namespace {

__global__ void gather_kernel(float* to, const float* from, const std::int32_t* rows, std::int64_t count,
                              std::int64_t words) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count * words; i += stride)
    to[i] = from[std::int64_t(rows[i / words]) * words + i % words];
}

__global__ void empty() {}

}  // namespace

void cuda_gather(void* to, const void* from, const std::int32_t* rows, std::size_t count, std::size_t row_bytes) {
  const std::int64_t words = std::int64_t(row_bytes / 4), n = std::int64_t(count) * words;
  const int threads = 256, blocks = int(n / threads + 1 < 65536 ? n / threads + 1 : 65536);
  gather_kernel<<<blocks, threads>>>(static_cast<float*>(to), static_cast<const float*>(from), rows,
                                     std::int64_t(count), words);
}

cudaError_t cuda_empty_kernel() {
  empty<<<1, 1>>>();
  return cudaStreamSynchronize(nullptr);
}

}  // namespace dfgnn::cli
