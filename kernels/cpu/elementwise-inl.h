// Element-wise ops over f32 arrays: Add and Swiglu (silu(g) * u).
// Swiglu uses Highway's vector Exp (contrib/math, within a few ulp of expf),
// with std::exp for the tail.

#if defined(POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_
#undef POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_
#else
#define POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_
#endif

#include <cmath>

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out = a + b; out may alias a or b.
HWY_INLINE void AddArrays(const float* a, const float* b, size_t count, float* out) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= count; i += N) {
    hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  }
  for (; i < count; ++i) out[i] = a[i] + b[i];
}

// out = g / (1 + exp(-g)) * u; out may alias g or u.
HWY_INLINE void SwigluArrays(const float* g, const float* u, size_t count, float* out) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto one = hn::Set(d, 1.0f);
  // exp(88) is finite; beyond it silu(g) is ~0 anyway and Exp's range
  // reduction would leave its domain.
  const auto max_arg = hn::Set(d, 88.0f);
  size_t i = 0;
  for (; i + N <= count; i += N) {
    const auto gv = hn::LoadU(d, g + i);
    const auto silu = hn::Div(gv, hn::Add(one, hn::Exp(d, hn::Min(hn::Neg(gv), max_arg))));
    hn::StoreU(hn::Mul(silu, hn::LoadU(d, u + i)), d, out + i);
  }
  for (; i < count; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_
