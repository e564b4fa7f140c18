#pragma once
/// \file half.hpp
/// Two-byte floating-point storage: bf16 (bfloat16: float's 8-bit exponent, 7 stored mantissa
/// bits) and f16 (IEEE 754 binary16: 5-bit exponent, 10 mantissa bits, subnormals). Tensors are
/// stored in them and converted to float to compute (issue 39: accumulation in float): Kokkos
/// 3.4 has no bfloat16 and, off CUDA, only a float stand-in for half, so the portable kernels,
/// the host reference and the CLI's file conversions share these. From float they round to
/// nearest, ties to even, overflowing to infinity; NaN stays NaN (quiet). Free of Kokkos and
/// CUDA; the conversions are callable in CUDA and HIP device code.

#include <dfgnn/detail/host_device.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace dfgnn {

struct bf16 {
  std::uint16_t bits;
};
struct f16 {
  std::uint16_t bits;
};

namespace detail {

/// `from`'s bytes as a To. HIP's device code has no std::memcpy (CUDA's has one); there clang's
/// builtin, which every HIP compiler has, copies them.
template <class To, class From>
DFGNN_HOST_DEVICE inline To bit_copy(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_copy: sizes differ");
  To to;
#ifdef __HIP_DEVICE_COMPILE__
  __builtin_memcpy(&to, &from, sizeof to);
#else
  std::memcpy(&to, &from, sizeof to);
#endif
  return to;
}

DFGNN_HOST_DEVICE inline std::uint32_t bits_of(float x) { return bit_copy<std::uint32_t>(x); }

DFGNN_HOST_DEVICE inline float float_of(std::uint32_t u) { return bit_copy<float>(u); }

/// `kept` (the value without its `dropped` low bits) rounded to nearest even by those bits.
DFGNN_HOST_DEVICE inline std::uint32_t round_even(std::uint32_t kept, std::uint32_t rest, int dropped) {
  const std::uint32_t half = 1u << (dropped - 1);
  return kept + (rest > half || (rest == half && (kept & 1u)));
}

}  // namespace detail

DFGNN_HOST_DEVICE inline float to_float(bf16 x) { return detail::float_of(std::uint32_t(x.bits) << 16); }

DFGNN_HOST_DEVICE inline bf16 to_bf16(float x) {
  const std::uint32_t u = detail::bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {std::uint16_t((u >> 16) | 0x0040u)};  // NaN, made quiet
  // Rounding carries into the exponent where it must: the largest values round to infinity.
  return {std::uint16_t(detail::round_even(u >> 16, u & 0xffffu, 16))};
}

DFGNN_HOST_DEVICE inline float to_float(f16 x) {
  const std::uint32_t sign = std::uint32_t(x.bits & 0x8000u) << 16;
  int exponent = (x.bits >> 10) & 0x1f;
  std::uint32_t mantissa = x.bits & 0x3ffu;
  if (exponent == 0x1f) return detail::float_of(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {
    if (mantissa == 0) return detail::float_of(sign);
    exponent = 1;  // a subnormal: normalised, its exponent lowered per shift
    while ((mantissa & 0x400u) == 0) mantissa <<= 1, --exponent;
    mantissa &= 0x3ffu;
  }
  return detail::float_of(sign | (std::uint32_t(exponent + 112) << 23) | (mantissa << 13));
}

DFGNN_HOST_DEVICE inline f16 to_f16(float x) {
  const std::uint32_t u = detail::bits_of(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return {std::uint16_t(sign | 0x7e00u)};       // NaN
  if (a >= 0x477ff000u) return {std::uint16_t(sign | 0x7c00u)};      // >= 65520 (ties to even) -> inf
  if (a >= 0x38800000u)                                              // normal: rebias 127 -> 15
    return {std::uint16_t(sign | detail::round_even((a - 0x38000000u) >> 13, a & 0x1fffu, 13))};
  // Below 2^-14: a multiple of 2^-24 (a carry into bit 10 gives the smallest normal).
  const int shift = 126 - int(a >> 23);  // the float's significand is (1.m) 2^(e-127) = sig 2^(e-150)
  if (shift > 24) return {std::uint16_t(sign)};  // below half of 2^-24 (at most 2^-25: ties to even 0)
  const std::uint32_t significand = (a & 0x7fffffu) | 0x800000u;
  return {std::uint16_t(sign | detail::round_even(significand >> shift, significand & ((1u << shift) - 1), shift))};
}

/// A float itself, so that to_float reads any element type (float, bf16, f16).
DFGNN_HOST_DEVICE inline float to_float(float x) { return x; }

/// x as an element of type T (float, bf16, f16): itself, or to_bf16 / to_f16's rounding.
template <class T>
DFGNN_HOST_DEVICE inline T from_float(float x) {
  if constexpr (std::is_same_v<T, bf16>)
    return to_bf16(x);
  else if constexpr (std::is_same_v<T, f16>)
    return to_f16(x);
  else
    return x;
}

}  // namespace dfgnn
