#pragma once
// Edge-parallel SDDMM to a global score buffer [E, H] (PMF's first kernel, the unfused
// baseline's first of three), and the attention weights a forward writes on request: lane
// groups stride over all (edge, head) items of the graph.

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

/// The attention weights (Call::weights) after a training forward: exp(score - logsumexp)
/// times the dropout factor of each (edge, head), at the caller's edge index [E, H].
template <class S, class T>
__global__ void __launch_bounds__(256) weights_kernel(S sc, DeviceGraph g, EdgeScaleOf<typename S::Elem> w, Train tr,
                                                      int H, int D, typename S::Elem* __restrict__ weights) {
  using ST = ScoreTile<S, T>;
  const std::int64_t thread = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t groups = std::int64_t(gridDim.x) * blockDim.x / ST::LANES;
  sddmm_items<ST>(sc, g, w, 0, g.num_edges * H, H, D, thread / ST::LANES, groups, int(threadIdx.x % ST::LANES),
                  [&](std::int64_t, edge_t e, int h, float s) {
                    const float lse = tr.lse[std::size_t(__ldg(g.dst + e)) * H + h];
                    weights[std::size_t(caller_edge(g.edge_id, e)) * H + h] =
                        narrow<typename S::Elem>(expf(s - lse) * tr.keep(e, h));
                  });
}

}  // namespace dfgnn::cuda::detail
