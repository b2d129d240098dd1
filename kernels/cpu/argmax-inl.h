// The index of the largest of an array of f32 values: greedy sampling's
// choice over a whole vocabulary every decoded token (65,536 logits for
// pocket-0.3b), where the scalar compare-and-branch loop took about 46 us,
// 1% of a 2-thread token.
//
// Two passes over the values, which are in L2 straight after the logits are
// written: the maximum, with NaN never winning a comparison (as in the
// scalar loop), then the first position holding it. Four running maxima
// keep the compare-select chains independent.

#if defined(POCKET_KERNELS_CPU_ARGMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ARGMAX_INL_H_
#undef POCKET_KERNELS_CPU_ARGMAX_INL_H_
#else
#define POCKET_KERNELS_CPU_ARGMAX_INL_H_
#endif

#include <limits>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The first i with x[i] the largest non-NaN value; 0 when no value exceeds
// -inf (count 0, or only -inf and NaN).
HWY_INLINE size_t ArgmaxArray(const float* HWY_RESTRICT x, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  // m = x where x > m: a NaN x compares false and leaves m as it was.
  const auto keep_max = [](hn::Vec<decltype(d)> m, hn::Vec<decltype(d)> v) {
    return hn::IfThenElse(hn::Gt(v, m), v, m);
  };
  auto m0 = hn::Set(d, kLowest), m1 = m0, m2 = m0, m3 = m0;
  size_t i = 0;
  for (; i + 4 * N <= count; i += 4 * N) {
    m0 = keep_max(m0, hn::LoadU(d, x + i));
    m1 = keep_max(m1, hn::LoadU(d, x + i + N));
    m2 = keep_max(m2, hn::LoadU(d, x + i + 2 * N));
    m3 = keep_max(m3, hn::LoadU(d, x + i + 3 * N));
  }
  for (; i + N <= count; i += N) m0 = keep_max(m0, hn::LoadU(d, x + i));
  m0 = keep_max(keep_max(m0, m1), keep_max(m2, m3));
  // The lanes' maximum by hand: Highway 1.0.3's MaxOfLanes for EMU128, as
  // Clang compiles it, starts from the lowest finite float and so returns
  // -FLT_MAX for lanes of -inf, a value no element holds.
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  hn::Store(m0, d, lanes);
  float best = kLowest;
  for (size_t k = 0; k < N; ++k) best = lanes[k] > best ? lanes[k] : best;
  for (; i < count; ++i) best = x[i] > best ? x[i] : best;
  if (!(best > kLowest)) return 0;

  const auto target = hn::Set(d, best);
  size_t j = 0;
  for (; j + N <= count; j += N) {
    const intptr_t lane = hn::FindFirstTrue(d, hn::Eq(hn::LoadU(d, x + j), target));
    if (lane >= 0) return j + static_cast<size_t>(lane);
  }
  for (; j < count; ++j) {  // best was found in the scalar tail
    if (x[j] == best) return j;
  }
  return 0;  // not reached: best is one of the values
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ARGMAX_INL_H_
