// Quantization of f32 activations to int8 for the int8-activation Linear:
// per block of `block` values (the weight group: 32 for q8, G for q4),
//   d = max|x| / 127,  q_j = round_half_even(x_j * (127 / max|x|)),
// and the exact f32 block sum s = sum_j x_j (the q4 min term uses it, so that
// term carries no quantization error). A zero block gets d = 0, q = 0.
// reference::QuantizeActivations computes the same d and q bit for bit (one
// f32 multiply, round to nearest even), so the tests compare them exactly;
// s differs only in summation order.

#if defined(POCKET_KERNELS_CPU_ACT_QUANT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ACT_QUANT_INL_H_
#undef POCKET_KERNELS_CPU_ACT_QUANT_INL_H_
#else
#define POCKET_KERNELS_CPU_ACT_QUANT_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x[cols] -> q[cols], d[cols / block], s[cols / block], and where qs is not
// null the sum of each block's codes, qs[cols / block]; block is a multiple
// of 16, so CappedTag<float, 16> steps never cross a block.
HWY_INLINE void QuantizeActivationRow(const float* HWY_RESTRICT x, size_t cols, size_t block,
                                      int8_t* HWY_RESTRICT q, float* HWY_RESTRICT d,
                                      float* HWY_RESTRICT s, int32_t* HWY_RESTRICT qs = nullptr) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  for (size_t b = 0; b < cols / block; ++b) {
    const float* xb = x + b * block;
    auto amax = hn::Zero(df);
    auto sum = hn::Zero(df);
    for (size_t j = 0; j < block; j += N) {
      const auto v = hn::LoadU(df, xb + j);
      amax = hn::Max(amax, hn::Abs(v));
      sum = hn::Add(sum, v);
    }
    const float m = hn::GetLane(hn::MaxOfLanes(df, amax));
    d[b] = m / 127.0f;
    s[b] = hn::GetLane(hn::SumOfLanes(df, sum));
    const auto inv = hn::Set(df, m > 0.0f ? 127.0f / m : 0.0f);
    auto code_sum = hn::Zero(di);
    for (size_t j = 0; j < block; j += N) {
      const auto codes = hn::NearestInt(hn::Mul(hn::LoadU(df, xb + j), inv));
      hn::StoreU(hn::DemoteTo(d8, codes), d8, q + b * block + j);
      if (qs != nullptr) code_sum = hn::Add(code_sum, codes);  // loop-invariant: only q8 rows16
    }
    if (qs != nullptr) qs[b] = hn::GetLane(hn::SumOfLanes(di, code_sum));
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ACT_QUANT_INL_H_
