#pragma once
/// \file kokkos_math.hpp
/// Math functions spelled for every supported Kokkos, for the portable kernels and the
/// distributed calls' merge: 3.4 has them only in Kokkos::Experimental, which 4.3 removed; from
/// 3.7 they live in namespace Kokkos.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace dfgnn::kokkos_impl {

#if KOKKOS_VERSION >= 30700
namespace kmath = ::Kokkos;
#else
namespace kmath = ::Kokkos::Experimental;
#endif

KOKKOS_INLINE_FUNCTION float exp(float x) { return kmath::exp(x); }
KOKKOS_INLINE_FUNCTION float log(float x) { return kmath::log(x); }
KOKKOS_INLINE_FUNCTION double exp(double x) { return kmath::exp(x); }
KOKKOS_INLINE_FUNCTION double log(double x) { return kmath::log(x); }
KOKKOS_INLINE_FUNCTION float sqrt(float x) { return kmath::sqrt(x); }
KOKKOS_INLINE_FUNCTION float fmax(float a, float b) { return kmath::fmax(a, b); }
/// LeakyReLU's slope at x: 1 where x > 0, else `slope` (at 0 too, as the forward's `x > 0`). On
/// a CPU the factor is chosen by a mask: given a condition, g++ branches, and random signs
/// mispredict half the branches (GATv2's forward on one core took 6x as long,
/// docs/performance.md). Device code keeps the condition, which a GPU runs without a branch.
KOKKOS_INLINE_FUNCTION float leaky_relu_grad(float x, float slope) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return x > 0.0f ? 1.0f : slope;
#else
  const std::uint32_t mask = 0u - std::uint32_t(x > 0.0f);
  const float unit = 1.0f;
  std::uint32_t one, low;
  std::memcpy(&one, &unit, sizeof one);
  std::memcpy(&low, &slope, sizeof low);
  const std::uint32_t bits = (one & mask) | (low & ~mask);
  float factor;
  std::memcpy(&factor, &bits, sizeof factor);
  return factor;
#endif
}

/// LeakyReLU: x where x > 0, else slope * x (the host's x * 1 and x * slope are those values).
KOKKOS_INLINE_FUNCTION float leaky_relu(float x, float slope) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return x > 0.0f ? x : slope * x;
#else
  return x * leaky_relu_grad(x, slope);
#endif
}

}  // namespace dfgnn::kokkos_impl
