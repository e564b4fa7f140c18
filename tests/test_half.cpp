// The two-byte storage types (half.hpp) against references built from their definitions: every
// bit pattern's value, and rounding from float to the nearest value, ties to even, checked at
// every midpoint between neighbours, just beside it, and on random floats.

#include <dfgnn/half.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace {

using dfgnn::bf16;
using dfgnn::f16;

// The value of a pattern from the format's definition: (-1)^s 2^(e - bias) 1.m, or 2^(1 - bias)
// 0.m for e = 0; e all ones is inf or NaN.
double value_of(std::uint32_t bits, int exponent_bits, int mantissa_bits) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const std::uint32_t m = bits & ((1u << mantissa_bits) - 1);
  const int e = int((bits >> mantissa_bits) & ((1u << exponent_bits) - 1));
  const double sign = (bits >> (exponent_bits + mantissa_bits)) & 1 ? -1.0 : 1.0;
  if (e == (1 << exponent_bits) - 1) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  const double fraction = double(m) / double(1u << mantissa_bits);
  return e == 0 ? sign * std::ldexp(fraction, 1 - bias) : sign * std::ldexp(1.0 + fraction, e - bias);
}

struct Format {
  int exponent_bits, mantissa_bits;
  float (*to_float)(std::uint16_t);
  std::uint16_t (*from_float)(float);

  double value(std::uint32_t bits) const { return value_of(bits, exponent_bits, mantissa_bits); }
  std::uint32_t inf() const { return ((1u << exponent_bits) - 1) << mantissa_bits; }
  std::uint32_t sign_bit() const { return 1u << (exponent_bits + mantissa_bits); }
};

const Format kBf16{8, 7, [](std::uint16_t b) { return dfgnn::to_float(bf16{b}); },
                   [](float x) { return dfgnn::to_bf16(x).bits; }};
const Format kF16{5, 10, [](std::uint16_t b) { return dfgnn::to_float(f16{b}); },
                  [](float x) { return dfgnn::to_f16(x).bits; }};

// The expected rounding of x: the nearest finite value (ties to the even pattern), or infinity
// from the largest value plus half its step on.
std::uint16_t nearest(const Format& f, double x) {
  const std::uint32_t inf = f.inf();
  const std::uint32_t sign = std::signbit(x) ? f.sign_bit() : 0u;
  const double a = std::fabs(x);
  const double largest = f.value(inf - 1);
  const double step = largest - f.value(inf - 2);
  if (a >= largest + step / 2) return std::uint16_t(sign | inf);
  // Magnitudes grow with the pattern: bisect over 0 .. inf - 1.
  std::uint32_t lo = 0, hi = inf - 1;
  while (lo < hi) {
    const std::uint32_t mid = (lo + hi + 1) / 2;
    if (f.value(mid) <= a) lo = mid; else hi = mid - 1;
  }
  std::uint32_t best = lo;
  if (lo < inf - 1) {
    const double below = a - f.value(lo);
    const double above = f.value(lo + 1) - a;
    if (above < below || (above == below && (lo & 1))) best = lo + 1;
  }
  return std::uint16_t(sign | best);
}

void expect_every_pattern_exact(const Format& f) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const double want = f.value(b);
    const float got = f.to_float(std::uint16_t(b));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << b;
      ASSERT_TRUE(std::isnan(f.to_float(f.from_float(got)))) << b;
      continue;
    }
    ASSERT_EQ(double(got), want) << b;
    ASSERT_EQ(f.from_float(got), b) << b;  // each value back to its own pattern (-0 included)
  }
}

void expect_rounding(const Format& f) {
  for (const std::uint32_t sign : {0u, f.sign_bit()})
    for (std::uint32_t b = 0; b + 1 < f.inf(); ++b) {
      // The midpoint of b and b + 1 is a float (a few more significant bits than either).
      const double lo = f.value(b), hi = f.value(b + 1);
      const float mid = float((lo + hi) / 2);
      ASSERT_EQ(double(mid), (lo + hi) / 2) << b;
      const float signed_mid = sign ? -mid : mid;
      for (const float x : {signed_mid, std::nextafter(signed_mid, 0.0f), std::nextafter(signed_mid, signed_mid * 2)})
        ASSERT_EQ(f.from_float(x), nearest(f, x)) << b << " " << x;
      ASSERT_EQ(f.from_float(signed_mid), std::uint16_t(sign | (b & 1 ? b + 1 : b))) << b;  // ties to even
    }
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const float x = dfgnn::detail::float_of(std::uint32_t(rng()));
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(f.to_float(f.from_float(x))));
      continue;
    }
    ASSERT_EQ(f.from_float(x), nearest(f, x)) << x;
  }
  for (const float x : {0.0f, -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::min()})
    ASSERT_EQ(f.from_float(x), nearest(f, x)) << x;
}

TEST(Half, EveryBf16PatternIsItsValue) { expect_every_pattern_exact(kBf16); }
TEST(Half, EveryF16PatternIsItsValue) { expect_every_pattern_exact(kF16); }
TEST(Half, Bf16RoundsToNearestEven) { expect_rounding(kBf16); }
TEST(Half, F16RoundsToNearestEven) { expect_rounding(kF16); }

TEST(Half, Bf16Limits) {
  EXPECT_EQ(dfgnn::to_bf16(std::ldexp(255.0f, 120)).bits, 0x7f7f);  // the largest
  EXPECT_EQ(dfgnn::to_bf16(std::ldexp(511.0f, 119)).bits, 0x7f80);  // the tie above it: to infinity (even)
  EXPECT_EQ(dfgnn::to_bf16(std::numeric_limits<float>::quiet_NaN()).bits & 0x7fc0, 0x7fc0);
}

TEST(Half, F16Limits) {
  EXPECT_EQ(dfgnn::to_f16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(dfgnn::to_f16(65519.99f).bits, 0x7bff);
  EXPECT_EQ(dfgnn::to_f16(65520.0f).bits, 0x7c00);  // the tie above the largest: to infinity (even)
  EXPECT_EQ(dfgnn::to_f16(std::ldexp(1.0f, -24)).bits, 0x0001);
  EXPECT_EQ(dfgnn::to_f16(std::ldexp(1.0f, -25)).bits, 0x0000);  // the tie below the least: to 0
  EXPECT_EQ(dfgnn::to_f16(std::ldexp(1.5f, -25)).bits, 0x0001);
  EXPECT_EQ(dfgnn::to_f16(std::ldexp(1023.5f, -24)).bits, 0x0400);  // the largest subnormal's tie: up
}

}  // namespace
