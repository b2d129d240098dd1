#include "util/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace pocket {
namespace {

bool IsHalfNan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

TEST(Fp16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    const float f = F16ToF32(v);
    if (IsHalfNan(v)) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(IsHalfNan(F32ToF16(f))) << h;
    } else {
      EXPECT_EQ(F32ToF16(f), v) << h;
    }
  }
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(F32ToF16(1.0f), 0x3C00);
  EXPECT_EQ(F32ToF16(-2.0f), 0xC000);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7C00);       // rounds up to infinity
  EXPECT_EQ(F32ToF16(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_FLOAT_EQ(F16ToF32(0x3555), 0.333251953125f);
}

// The compiler's own half type: _Float16 on x86-64, whose GCC has no
// __fp16; __fp16 (IEEE format, converted by FCVT) on AArch64, whose g++
// has no _Float16.
#if defined(__aarch64__)
using CompilerHalf = __fp16;
#else
using CompilerHalf = _Float16;
#endif

uint16_t CompilerF16(float f) {
  const CompilerHalf h = static_cast<CompilerHalf>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

TEST(Fp16, MatchesTheCompilerConversion) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> near(-70000.0f, 70000.0f);
  std::uniform_real_distribution<float> small(-1e-4f, 1e-4f);
  for (int i = 0; i < 300000; ++i) {
    float f;
    switch (i % 3) {
      case 0:
        f = BitsFloat(static_cast<uint32_t>(rng()));
        break;  // any exponent
      case 1:
        f = near(rng);
        break;
      default:
        f = small(rng);
        break;  // subnormal halves
    }
    if (std::isnan(f)) {
      EXPECT_TRUE(IsHalfNan(F32ToF16(f)));
      continue;
    }
    ASSERT_EQ(F32ToF16(f), CompilerF16(f)) << "bits 0x" << std::hex << FloatBits(f);
  }
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(F32ToBF16(1.0f), 0x3F80);
  EXPECT_EQ(F32ToBF16(BitsFloat(0x3F808000u)), 0x3F80);    // tie, even stays
  EXPECT_EQ(F32ToBF16(BitsFloat(0x3F818000u)), 0x3F82);    // tie, odd rounds up
  EXPECT_EQ(F32ToBF16(BitsFloat(0x3F808001u)), 0x3F81);    // above the tie
  EXPECT_EQ(F32ToBF16(BitsFloat(0x3F807FFFu)), 0x3F80);    // below the tie
  EXPECT_EQ(F32ToBF16(BitsFloat(0x7F7FFFFFu)), 0x7F80);    // max float rounds to inf
  const uint16_t nan = F32ToBF16(BitsFloat(0x7F800001u));  // NaN with low payload
  EXPECT_EQ(nan & 0x7F80u, 0x7F80u);
  EXPECT_NE(nan & 0x7Fu, 0u);
}

TEST(Bf16, EveryNonNanValueRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t v = static_cast<uint16_t>(b);
    if ((v & 0x7F80u) == 0x7F80u && (v & 0x7Fu) != 0) continue;  // NaN payloads
    EXPECT_EQ(F32ToBF16(BF16ToF32(v)), v) << b;
  }
}

}  // namespace
}  // namespace pocket
