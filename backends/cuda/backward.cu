// The backward's parameter sums (see backward.cuh): a two-level reduction in a fixed order.
#include "backward.cuh"

namespace dfgnn::cuda::detail {
namespace {

/// First level of the parameter sums: slice y of the row units, entries x * 32 + threadIdx.x of
/// [H * width]; eight threads per entry stride over the slice, then add up in a fixed order.
__global__ void __launch_bounds__(256) param_slices(const float* __restrict__ param, std::int64_t units,
                                                    std::int64_t per, int entries, float* __restrict__ out) {
  __shared__ float sum[8][32];
  allow_dependents();
  wait_for_previous();  // the row walk's partials: each launch since waited for the one before
  const int f = blockIdx.x * 32 + threadIdx.x;
  const std::int64_t u0 = std::int64_t(blockIdx.y) * per, u1 = min(units, u0 + per);
  float s = 0.f;
  if (f < entries)
    for (std::int64_t u = u0 + threadIdx.y; u < u1; u += 8) s += param[std::size_t(u) * entries + f];
  sum[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || f >= entries) return;
  for (int y = 1; y < 8; ++y) s += sum[y][threadIdx.x];
  out[std::size_t(blockIdx.y) * entries + f] = s;
}

/// Second level: output i sums the slices of its entries in order; `fold` entries (all heads
/// of a shared AGNN beta) go to each output, rounded once to E.
template <class E>
__global__ void __launch_bounds__(256) param_total(const float* __restrict__ slices, int num_slices, int entries,
                                                   int fold, E* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  wait_for_previous();
  if (i * fold >= entries) return;
  float s = 0.f;
  for (int k = 0; k < fold; ++k)
    for (int y = 0; y < num_slices; ++y) s += slices[std::size_t(y) * entries + i * fold + k];
  out[i] = narrow<E>(s);
}

}  // namespace

template <class E>
void launch_param_sums(cudaStream_t stream, const float* param, std::int64_t units, int entries, float* slices,
                       E* out, int outputs) {
  const ParamSlicing s(units);
  // Both are programmatic dependents (common.cuh): after the column walk they cost mostly launch.
  launch_dependent_blocks(param_slices, dim3(unsigned((entries + 31) / 32), s.count), dim3(32, 8), 0, stream, param,
                          units, s.per, entries, slices);
  launch_dependent(param_total<E>, std::size_t(outputs), stream, slices, int(s.count), entries, entries / outputs, out);
  DFGNN_CUDA(cudaGetLastError());
}

template void launch_param_sums(cudaStream_t, const float*, std::int64_t, int, float*, float*, int);
template void launch_param_sums(cudaStream_t, const float*, std::int64_t, int, float*, bf16*, int);
template void launch_param_sums(cudaStream_t, const float*, std::int64_t, int, float*, f16*, int);

}  // namespace dfgnn::cuda::detail
