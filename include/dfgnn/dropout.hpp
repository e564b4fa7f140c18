#pragma once
/// \file dropout.hpp
/// Attention dropout with a counter-based generator: the keep decision of (edge, head) is a
/// pure function of (seed, edge, head), so the backward regenerates the mask instead of
/// storing it, and every backend draws the same mask. The edge is the caller's edge index, or
/// the id `counter` gives it: a rank of distributed.hpp draws its edges' part of the whole
/// graph's mask by their ids there. The seed is a value, or read where `seed_at` points when
/// the kernels run: a captured CUDA graph then draws a new mask each replay from a seed that
/// the step writes there first (docs/python.md, "Capturing a training step").

#include <dfgnn/detail/host_device.hpp>
#include <dfgnn/types.hpp>

namespace dfgnn {

/// Dropout on the attention probabilities: p -> p * keep / (1 - rate).
struct Dropout {
  float rate = 0.0f;        ///< probability of dropping an (edge, head) probability, in [0, 1)
  std::uint64_t seed = 0;
  /// [E] each caller's edge's id in the mask, where the call runs; null: the edge index itself.
  const edge_t* counter = nullptr;
  /// The seed in memory the kernels read (where the call runs), in place of `seed`; null: `seed`.
  const std::uint64_t* seed_at = nullptr;

  /// The factor multiplying p_e: 0 if dropped, 1 / (1 - rate) if kept.
  DFGNN_HOST_DEVICE float factor(edge_t edge, int head) const {
    if (rate <= 0.0f) return 1.0f;
    const edge_t id = counter ? counter[edge] : edge;
    // splitmix64 finaliser over the packed counter: well mixed, cheap, identical everywhere.
    std::uint64_t z = (seed_at ? *seed_at : seed) ^ (std::uint64_t(id) * 0x9E3779B97F4A7C15ull) ^
                      (std::uint64_t(head) * 0xD1B54A32D192ED03ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = float(z >> 40) * (1.0f / 16777216.0f);  // 24 random bits in [0, 1)
    return u < rate ? 0.0f : 1.0f / (1.0f - rate);
  }
};

}  // namespace dfgnn
