// Rotary position embedding, in place on one token's heads.
//
// Angles follow llama2.c exactly (float throughout): freq_i = 1 / powf(theta,
// 2i / head_dim), angle = (float)pos * freq_i, then cosf / sinf, once per
// token and shared by all its heads (RopeTables). The rotation itself is
// a*c - b*s and a*s + b*c with separate multiplies and adds (no FMA), so the
// SIMD lanes are bit-identical to the scalar reference; scalar tails may
// differ in the last bit where the compiler contracts them into an FMA.
// Hugging Face computes the same angle in f32 (inv_freq * pos), so neox
// models match it too; at position 40K the f32 angle is off by ~2e-3 rad,
// the same error those implementations have.

#if defined(POCKET_KERNELS_CPU_ROPE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ROPE_INL_H_
#undef POCKET_KERNELS_CPU_ROPE_INL_H_
#else
#define POCKET_KERNELS_CPU_ROPE_INL_H_
#endif

#include <cmath>

#include <hwy/highway.h>

#include "format/model_config.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// freq[head_dim / 2] = theta^(-2i / head_dim).
HWY_INLINE void RopeFrequencies(size_t head_dim, float theta, float* freq) {
  for (size_t i = 0; i < head_dim / 2; ++i) {
    freq[i] = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
  }
}

// cos_t[head_dim], sin_t[head_dim] for one position, laid out so a rotation
// is x * cos_t + partner(x) * sin_t: neox fills [0, hd/2) with cos/-sin and
// [hd/2, hd) with cos/+sin; interleaved fills pair (2i, 2i+1) with cos/-sin,
// cos/+sin.
HWY_INLINE void RopeTables(int32_t pos, size_t head_dim, const float* freq, RopeStyle style,
                           float* cos_t, float* sin_t) {
  const size_t half = head_dim / 2;
  for (size_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * freq[i];
    const float c = std::cos(angle);
    const float s = std::sin(angle);
    const size_t a = style == RopeStyle::kNeox ? i : 2 * i;
    const size_t b = style == RopeStyle::kNeox ? i + half : 2 * i + 1;
    cos_t[a] = c;
    cos_t[b] = c;
    sin_t[a] = -s;
    sin_t[b] = s;
  }
}

// Rotates n_heads heads of head_dim values at x with tables from RopeTables.
HWY_INLINE void RopeHeads(float* HWY_RESTRICT x, size_t n_heads, size_t head_dim, RopeStyle style,
                          const float* HWY_RESTRICT cos_t, const float* HWY_RESTRICT sin_t) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const size_t half = head_dim / 2;
  for (size_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    if (style == RopeStyle::kNeox) {
      size_t i = 0;
      for (; i + N <= half; i += N) {
        const auto lo = hn::LoadU(d, head + i);
        const auto hi = hn::LoadU(d, head + half + i);
        const auto c = hn::LoadU(d, cos_t + i);
        const auto s = hn::LoadU(d, sin_t + half + i);  // +sin
        hn::StoreU(hn::Sub(hn::Mul(lo, c), hn::Mul(hi, s)), d, head + i);
        hn::StoreU(hn::Add(hn::Mul(lo, s), hn::Mul(hi, c)), d, head + half + i);
      }
      for (; i < half; ++i) {
        const float lo = head[i], hi = head[half + i];
        const float c = cos_t[i], s = sin_t[half + i];
        head[i] = lo * c - hi * s;
        head[half + i] = lo * s + hi * c;
      }
    } else {
      // Lanes (2i, 2i+1) hold a pair; Reverse2 swaps each pair, so one
      // multiply-add pair gives a*c + b*(-s) and b*c + a*s. A one-lane
      // target (HWY_SCALAR) has no pairs in a vector: it takes the tail loop.
      size_t i = 0;
      for (; N >= 2 && i + N <= head_dim; i += N) {
        const auto v = hn::LoadU(d, head + i);
        const auto rotated = hn::Add(hn::Mul(v, hn::LoadU(d, cos_t + i)),
                                     hn::Mul(hn::Reverse2(d, v), hn::LoadU(d, sin_t + i)));
        hn::StoreU(rotated, d, head + i);
      }
      for (; i < head_dim; i += 2) {
        const float a = head[i], b = head[i + 1];
        head[i] = a * cos_t[i] + b * sin_t[i];
        head[i + 1] = b * cos_t[i + 1] + a * sin_t[i + 1];
      }
    }
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ROPE_INL_H_
