// RMSNorm of rows: out = w * (x / sqrt(mean(x^2) + eps)).
// The sum of squares is accumulated in f32 lanes (two accumulators, then a
// lane reduction): for the widths of interest (<= 8K) its relative error is
// ~1e-6, far below what changes a token, so the 2x cost of widening every
// lane to double buys nothing. 1/sqrt is taken once per row in f32.

#if defined(POCKET_KERNELS_CPU_NORM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_NORM_INL_H_
#undef POCKET_KERNELS_CPU_NORM_INL_H_
#else
#define POCKET_KERNELS_CPU_NORM_INL_H_
#endif

#include <cmath>

#include <hwy/highway.h>

#include "kernels/cpu/load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One row of d values; out may alias x.
HWY_INLINE void RmsNormRow(const float* x, const float* HWY_RESTRICT w, size_t d, float eps,
                           float* out) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const float ss = Dot(x, x, d);
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
  const auto vinv = hn::Set(df, inv);
  size_t j = 0;
  for (; j + N <= d; j += N) {
    hn::StoreU(hn::Mul(hn::LoadU(df, w + j), hn::Mul(vinv, hn::LoadU(df, x + j))), df, out + j);
  }
  for (; j < d; ++j) out[j] = w[j] * (inv * x[j]);
}

// rows consecutive rows of d values each.
HWY_INLINE void RmsNormRows(const float* x, const float* HWY_RESTRICT w, size_t rows, size_t d,
                            float eps, float* out) {
  for (size_t r = 0; r < rows; ++r) RmsNormRow(x + r * d, w, d, eps, out + r * d);
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_NORM_INL_H_
