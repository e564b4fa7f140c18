#pragma once
// A thread group's lanes where the portable API says nothing of them (docs/design.md, "The
// Kokkos mapping"). Kokkos' CUDA and HIP team policies put a thread's vector lanes on
// threadIdx.x (blockDim.x of them, a power of two inside one warp or wavefront); on a host a
// group is one lane, its vector loops plain loops.
// - lane_barrier: where one lane's stores are read by the group's other lanes. CUDA: a
//   __syncwarp over the group's lanes (Kokkos' CUDA `single` and vector ranges end with the same
//   one, so there it adds nothing but the certainty). HIP: a wavefront runs in lockstep, so a
//   wavefront-scope fence around its barrier orders the stores (compiled, never run: no AMD GPU
//   was at hand). Host: nothing to wait for.

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace dfgnn::kokkos_impl {

#if defined(KOKKOS_ENABLE_CUDA)
template <class Exec>
inline constexpr bool kCudaSpace = std::is_same_v<Exec, Kokkos::Cuda>;
#else
template <class Exec>
inline constexpr bool kCudaSpace = false;
#endif

/// Stores of the calling thread group's lanes before it are visible to its lanes after it.
KOKKOS_INLINE_FUNCTION void lane_barrier() {
#if defined(__CUDA_ARCH__)
  const unsigned width = blockDim.x;  // a power of two, at most 32: groups tile the warp
  __syncwarp(width >= 32 ? 0xffffffffu : ((1u << width) - 1u) << ((threadIdx.y * width) % 32u));
#elif defined(__HIP_DEVICE_COMPILE__)
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#endif
}

}  // namespace dfgnn::kokkos_impl
