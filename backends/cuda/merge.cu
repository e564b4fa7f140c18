// The merge kernel of split rows (see merge.cuh).
#include "merge.cuh"

namespace dfgnn::cuda::detail {
namespace {

__global__ void __launch_bounds__(256) merge_kernel(const SplitRow* __restrict__ rows, int num_rows, int H,
                                                    int D, Partials part, float* __restrict__ out,
                                                    float* __restrict__ lse) {
  const std::size_t W = std::size_t(H) * D;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= num_rows * W) return;
  const SplitRow r = rows[i / W];
  const std::size_t k = i % W;
  const int h = int(k / D);
  float m = -INFINITY;
  for (int j = 0; j < r.count; ++j) m = fmaxf(m, part.max[std::size_t(r.first + j) * H + h]);
  float s = 0.f, acc = 0.f;
  for (int j = 0; j < r.count; ++j) {
    const std::size_t slot = std::size_t(r.first + j);
    const float c = __expf(part.max[slot * H + h] - m);
    s = fmaf(part.sum[slot * H + h], c, s);
    acc = fmaf(part.acc[slot * W + k], c, acc);
  }
  out[std::size_t(r.row) * W + k] = acc / s;
  if (lse != nullptr && k % D == 0) lse[std::size_t(r.row) * H + h] = m + logf(s);
}

}  // namespace

void launch_merge(cudaStream_t stream, const SplitRow* rows, int num_rows, int H, int D, const Partials& part,
                  float* out, float* lse) {
  const std::size_t threads = std::size_t(num_rows) * H * D;
  if (threads == 0) return;
  merge_kernel<<<unsigned((threads + 255) / 256), 256, 0, stream>>>(rows, num_rows, H, D, part, out, lse);
  DFGNN_CUDA(cudaGetLastError());
}

}  // namespace dfgnn::cuda::detail
