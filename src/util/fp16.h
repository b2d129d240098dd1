// IEEE half and bfloat16 conversions (round to nearest even), scalar and
// exact. SIMD kernels use Highway's own conversions; these are the reference.
#pragma once

#include <cstdint>
#include <cstring>

namespace pocket {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return BitsFloat(FloatBits(v) | sign);
  }
  if (exp == 31) return BitsFloat(sign | 0x7F800000u | (mant << 13));
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t F32ToF16(float f) {
  const uint32_t u = FloatBits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or nan (keep nan quiet)
    return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0));
  }
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal
    // Adding 0.5f aligns the mantissa so the FPU rounds to nearest even.
    const float v = BitsFloat(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (FloatBits(v) - 0x3F000000u));
  }
  const uint32_t mant_odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xC8000FFFu + mant_odd;  // rebias + round
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

inline float BF16ToF32(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

inline uint16_t F32ToBF16(float f) {
  const uint32_t u = FloatBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

}  // namespace pocket
