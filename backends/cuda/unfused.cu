// The unfused baseline's softmax kernel (see unfused.cuh).
#include "unfused.cuh"

namespace dfgnn::cuda::detail {
namespace {

__global__ void __launch_bounds__(256) softmax_kernel(DeviceGraph g, int H, float* __restrict__ scores, Train tr) {
  const std::int64_t item = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  if (item >= std::int64_t(g.num_nodes) * H) return;
  const int lane = threadIdx.x % kWarp;
  const node_t v = node_t(item / H);
  const int h = int(item % H);
  const edge_t a = __ldg(g.row_ptr + v), b = __ldg(g.row_ptr + v + 1);
  float m, s;
  row_stats([&](edge_t e) { return scores[e * H + h]; }, a, b, lane, m, s);
  for (edge_t e = a + lane; e < b; e += kWarp) scores[e * H + h] = __expf(scores[e * H + h] - m) / s * tr.keep(e, h);
  if (lane == 0) tr.store(v, h, H, m, s);
}

}  // namespace

void launch_softmax(cudaStream_t stream, const DeviceGraph& g, int H, float* scores, const Train& tr) {
  const std::size_t threads = std::size_t(g.num_nodes) * H * kWarp;
  if (threads == 0) return;
  softmax_kernel<<<unsigned((threads + 255) / 256), 256, 0, stream>>>(g, H, scores, tr);
  DFGNN_CUDA(cudaGetLastError());
}

}  // namespace dfgnn::cuda::detail
