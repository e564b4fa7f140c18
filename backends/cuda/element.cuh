#pragma once
// The element types of a call's tensors on the device: float, and the two-byte storage types of
// half.hpp (bf16, f16), loaded as raw 16-bit patterns and widened to float in registers, so that
// every sum, the softmax statistics included, stays float (docs/cuda.md, "Element types").
// A lane loads VEC consecutive elements at once: 16 bytes for 4 floats or 8 two-byte elements.

#include <dfgnn/half.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace dfgnn::cuda::detail {

__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ float widen(bf16 x) { return __uint_as_float(unsigned(x.bits) << 16); }
__device__ __forceinline__ float widen(f16 x) { return __half2float(__ushort_as_half(x.bits)); }

/// float to E, rounding to nearest even (as half.hpp's to_bf16 and to_f16).
template <class E>
__device__ __forceinline__ E narrow(float x) {
  if constexpr (std::is_same_v<E, bf16>)
    return {__bfloat16_as_ushort(__float2bfloat16_rn(x))};
  else if constexpr (std::is_same_v<E, f16>)
    return {__half_as_ushort(__float2half_rn(x))};
  else
    return x;
}

/// One element through the read-only path, widened.
template <class E>
__device__ __forceinline__ float load_one(const E* p) {
  if constexpr (std::is_same_v<E, float>)
    return __ldg(p);
  else
    return widen(E{__ldg(reinterpret_cast<const unsigned short*>(p))});
}

/// The two elements of a 32-bit word, widened (the lower address first).
template <class E>
__device__ __forceinline__ void widen_pair(unsigned u, float* x) {
  if constexpr (std::is_same_v<E, bf16>) {
    x[0] = __uint_as_float(u << 16), x[1] = __uint_as_float(u & 0xffff0000u);
  } else {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&u));
    x[0] = f.x, x[1] = f.y;
  }
}

template <class E>
__device__ __forceinline__ unsigned narrow_pair(float a, float b) {
  return unsigned(narrow<E>(a).bits) | (unsigned(narrow<E>(b).bits) << 16);
}

/// VEC consecutive elements at p (aligned to 16 bytes, or to their size for VEC 1): x[0..VEC),
/// widened; zeros where !in. One access of 16 bytes (4 floats, 8 two-byte elements), 8 (4
/// two-byte elements) or one element; floats at VEC 8 (a two-byte tile's float partials) in two.
template <int VEC, class E>
__device__ __forceinline__ void load_vec(const E* p, bool in, float* x) {
  if constexpr (VEC == 1) {
    x[0] = in ? load_one(p) : 0.f;
  } else if constexpr (std::is_same_v<E, float>) {
    static_assert(VEC % 4 == 0);
#pragma unroll
    for (int i = 0; i < VEC; i += 4) {
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (in) v = __ldg(reinterpret_cast<const float4*>(p + i));
      x[i] = v.x, x[i + 1] = v.y, x[i + 2] = v.z, x[i + 3] = v.w;
    }
  } else if constexpr (VEC == 8) {
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (in) v = __ldg(reinterpret_cast<const uint4*>(p));
    widen_pair<E>(v.x, x), widen_pair<E>(v.y, x + 2), widen_pair<E>(v.z, x + 4), widen_pair<E>(v.w, x + 6);
  } else {
    static_assert(VEC == 4);
    uint2 v = make_uint2(0u, 0u);
    if (in) v = __ldg(reinterpret_cast<const uint2*>(p));
    widen_pair<E>(v.x, x), widen_pair<E>(v.y, x + 2);
  }
}

/// Stores x[0..VEC) at p as E (one access, as load_vec).
template <int VEC, class E>
__device__ __forceinline__ void store_vec(E* p, const float* x) {
  if constexpr (VEC == 1) {
    *p = narrow<E>(x[0]);
  } else if constexpr (std::is_same_v<E, float>) {
    static_assert(VEC % 4 == 0);
#pragma unroll
    for (int i = 0; i < VEC; i += 4) *reinterpret_cast<float4*>(p + i) = make_float4(x[i], x[i + 1], x[i + 2], x[i + 3]);
  } else if constexpr (VEC == 8) {
    *reinterpret_cast<uint4*>(p) = make_uint4(narrow_pair<E>(x[0], x[1]), narrow_pair<E>(x[2], x[3]),
                                              narrow_pair<E>(x[4], x[5]), narrow_pair<E>(x[6], x[7]));
  } else {
    static_assert(VEC == 4);
    *reinterpret_cast<uint2*>(p) = make_uint2(narrow_pair<E>(x[0], x[1]), narrow_pair<E>(x[2], x[3]));
  }
}

}  // namespace dfgnn::cuda::detail
