// Loads of stored element types (f32, f16, bf16, int8 codes) widened to f32
// vectors, and their scalar counterparts for loop tails. Shared by every
// kernel that reads weights or the KV cache.

#if defined(POCKET_KERNELS_CPU_LOAD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_LOAD_INL_H_
#undef POCKET_KERNELS_CPU_LOAD_INL_H_
#else
#define POCKET_KERNELS_CPU_LOAD_INL_H_
#endif

#include <cstring>

#include <hwy/highway.h>

#include "util/fp16.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const float* HWY_RESTRICT p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const hwy::float16_t* HWY_RESTRICT p) {
  return hn::PromoteTo(d, hn::LoadU(hn::Rebind<hwy::float16_t, D>(), p));
}
template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const hwy::bfloat16_t* HWY_RESTRICT p) {
  return hn::PromoteTo(d, hn::LoadU(hn::Rebind<hwy::bfloat16_t, D>(), p));
}
template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const int8_t* HWY_RESTRICT p) {
  return hn::ConvertTo(
      d, hn::PromoteTo(hn::RebindToSigned<D>(), hn::LoadU(hn::Rebind<int8_t, D>(), p)));
}

HWY_INLINE float ScalarF32(const float* p) { return *p; }
HWY_INLINE float ScalarF32(const hwy::float16_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return F16ToF32(bits);
}
HWY_INLINE float ScalarF32(const int8_t* p) { return static_cast<float>(*p); }
HWY_INLINE float ScalarF32(const hwy::bfloat16_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return BF16ToF32(bits);
}

// The f16 value at byte address p (scales and mins of quantized weights).
HWY_INLINE float HalfAt(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return F16ToF32(bits);
}

// Sum of x[0, count) * y[0, count), y widened from its stored type.
template <typename T>
HWY_INLINE float Dot(const float* HWY_RESTRICT x, const T* HWY_RESTRICT y, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto acc0 = hn::Zero(d);
  auto acc1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * N <= count; i += 2 * N) {
    acc0 = hn::MulAdd(hn::LoadU(d, x + i), LoadF32(d, y + i), acc0);
    acc1 = hn::MulAdd(hn::LoadU(d, x + i + N), LoadF32(d, y + i + N), acc1);
  }
  for (; i + N <= count; i += N) acc0 = hn::MulAdd(hn::LoadU(d, x + i), LoadF32(d, y + i), acc0);
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
  for (; i < count; ++i) sum += x[i] * ScalarF32(y + i);
  return sum;
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_LOAD_INL_H_
