// Element-wise ops over f32 arrays: Add and Swiglu (silu(g) * u).
// Swiglu uses Highway's vector Exp (contrib/math, within a few ulp of expf)
// for every element, the tail too, so that an element's bits do not depend
// on where the array starts: a step over several tokens flattens their rows
// into one array and must give each token its single step's bits.

#if defined(POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_
#undef POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_
#else
#define POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_
#endif

#include <algorithm>

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
  const auto swiglu = [&](const float* gp, const float* up, float* op) {
    const auto gv = hn::LoadU(d, gp);
    const auto silu = hn::Div(gv, hn::Add(one, hn::Exp(d, hn::Min(hn::Neg(gv), max_arg))));
    hn::StoreU(hn::Mul(silu, hn::LoadU(d, up)), d, op);
  };
  size_t i = 0;
  for (; i + N <= count; i += N) swiglu(g + i, u + i, out + i);
  if (i == count) return;
  // The tail through the same vector code, padded with zeros.
  HWY_ALIGN float gt[HWY_MAX_BYTES / sizeof(float)] = {};
  HWY_ALIGN float ut[HWY_MAX_BYTES / sizeof(float)] = {};
  std::copy(g + i, g + count, gt);
  std::copy(u + i, u + count, ut);
  swiglu(gt, ut, gt);
  std::copy(gt, gt + (count - i), out + i);
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ELEMENTWISE_INL_H_
