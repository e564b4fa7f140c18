#pragma once
// Edge-parallel SDDMM to a global score buffer [E, H] (PMF's first kernel, the unfused
// baseline's first of three): lane groups stride over all (edge, head) items of the graph.

#include "steps.cuh"

namespace dfgnn::cuda::detail {

template <class S, class T>
__global__ void __launch_bounds__(256) sddmm_kernel(S sc, DeviceGraph g, EdgeScale w, int H, int D,
                                                    float* __restrict__ scores) {
  using ST = ScoreTile<S, T>;
  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t groups = std::int64_t(gridDim.x) * blockDim.x / ST::LANES;
  sddmm_items<ST>(sc, g, w, 0, g.num_edges * H, H, D, thread / ST::LANES, groups,
                  int(threadIdx.x % ST::LANES),
                  [&](std::int64_t i, edge_t, int, float s) { scores[i] = s; });
}

}  // namespace dfgnn::cuda::detail
