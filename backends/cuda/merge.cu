// The merge kernel of split rows (see merge.cuh).
#include "merge.cuh"

namespace dfgnn::cuda::detail {
namespace {

/// VEC consecutive entries of a head per thread (16-byte partial loads when VEC = 4), written
/// to out as E.
template <int VEC, class E>
__global__ void __launch_bounds__(256) merge_kernel(const SplitRow* __restrict__ rows, int num_rows, int H,
                                                    int D, Partials part, E* __restrict__ out,
                                                    float* __restrict__ lse) {
  using T = Tile<VEC, 1, 1>;
  const std::size_t W = std::size_t(H) * D;
  const std::size_t i = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
  SplitRow r;
  if (!split_row_then_wait(rows, i, num_rows * W, W, r)) return;
  const std::size_t k = i % W;
  const int h = int(k / D);
  const auto stat = [&](const float* t, int j) { return t[std::size_t(r.first + j) * H + h]; };
  float m = -INFINITY;
  for_slots(r.count, [&](int j) { return stat(part.max, j); }, [&](int, float x) { m = fmaxf(m, x); });
  struct Slot {
    Frag<T> acc;
    float max, sum;
  };
  float s = 0.f;
  Frag<T> acc;
#pragma unroll
  for (int v = 0; v < VEC; ++v) acc.x[v] = 0.f;
  for_slots(
      r.count,
      [&](int j) {
        Slot x;
        load_global<T>(x.acc, part.acc + std::size_t(r.first + j) * W + k, VEC, 0);
        x.max = stat(part.max, j), x.sum = stat(part.sum, j);
        return x;
      },
      [&](int, const Slot& x) {
        const float c = __expf(x.max - m);
        s = fmaf(x.sum, c, s);
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc.x[v] = fmaf(x.acc.x[v], c, acc.x[v]);
      });
#pragma unroll
  for (int v = 0; v < VEC; ++v) acc.x[v] = acc.x[v] / s;
  store_row<T>(out + std::size_t(r.row) * W + k, acc, VEC, 0);
  if (lse != nullptr && k % D == 0) lse[std::size_t(r.row) * H + h] = m + logf(s);
}

}  // namespace

template <class E>
void launch_merge(cudaStream_t stream, const SplitRow* rows, int num_rows, int H, int D, const Partials& part,
                  E* out, float* lse) {
  const std::size_t threads = std::size_t(num_rows) * H * D;
  if (threads == 0) return;
  // The slots are aligned (cudaMalloc); out's four entries of a thread take 16 or 8 bytes.
  if (D % 4 == 0 && reinterpret_cast<std::uintptr_t>(out) % (4 * sizeof(E)) == 0)
    launch_dependent(merge_kernel<4, E>, threads / 4, stream, rows, num_rows, H, D, part, out, lse);
  else
    launch_dependent(merge_kernel<1, E>, threads, stream, rows, num_rows, H, D, part, out, lse);
}

template void launch_merge(cudaStream_t, const SplitRow*, int, int, int, const Partials&, float*, float*);
template void launch_merge(cudaStream_t, const SplitRow*, int, int, int, const Partials&, bf16*, float*);
template void launch_merge(cudaStream_t, const SplitRow*, int, int, int, const Partials&, f16*, float*);

}  // namespace dfgnn::cuda::detail
