#pragma once
/// \file kokkos_math.hpp
/// Math functions spelled for every supported Kokkos, for the portable kernels and the
/// distributed calls' merge: 3.4 has them only in Kokkos::Experimental, which 4.3 removed; from
/// 3.7 they live in namespace Kokkos.

#include <Kokkos_Core.hpp>

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
KOKKOS_INLINE_FUNCTION float leaky_relu(float x, float slope) { return x > 0.0f ? x : slope * x; }

}  // namespace dfgnn::kokkos_impl
