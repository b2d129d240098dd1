// Linear: out[n, rows] = x[n, cols] * W^T (+ bias), over a contiguous block
// of output rows [r0, r1) (the caller splits rows across threads).
//
// Decode (n == 1) streams each weight row once straight from the mapping:
// quantized rows are consumed group by group, accumulating sum_j q_j x_j in
// f32 lanes and applying the group's scale once per group; the q4 min term
// is folded out with sum_j (s q_j + m) x_j = s sum_j q_j x_j + m sum_j x_j,
// using per-group sums of x computed once per call (GroupSums).
//
// Prefill (n > 1) dequantizes kRows rows to f32 once and multiplies them with
// all n tokens in kRows x kTokens register tiles, so dequantization costs
// 1/n per token and each weight load feeds kTokens FMAs.
//
// All arithmetic is f32. An int8-activation kernel (VNNI / dotprod) would be
// a third path beside these two, chosen by Linear() in linear.cc.

#if defined(POCKET_KERNELS_CPU_MATVEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_MATVEC_INL_H_
#undef POCKET_KERNELS_CPU_MATVEC_INL_H_
#else
#define POCKET_KERNELS_CPU_MATVEC_INL_H_
#endif

#include <algorithm>

#include <hwy/highway.h>

#include "backends/cpu/ops.h"
#include "kernels/cpu/dequant-inl.h"
#include "kernels/cpu/load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows per block in both paths; Linear() aligns thread ranges to it.
constexpr size_t kRows = 4;
// Tokens per prefill register tile: 4 x 3 accumulators plus 3 x vectors and
// one weight vector fit the 16 registers of AVX2/SSE.
constexpr size_t kTokens = 3;

// xsum[g] = sum of x over group g (q4 decode's min term).
HWY_INLINE void GroupSums(const float* HWY_RESTRICT x, size_t cols, size_t group,
                          float* HWY_RESTRICT xsum) {
  const GroupTag d;
  const size_t N = hn::Lanes(d);
  for (size_t g = 0; g < cols / group; ++g) {
    auto acc = hn::Zero(d);
    for (size_t c = 0; c < group; c += N) acc = hn::Add(acc, hn::LoadU(d, x + g * group + c));
    xsum[g] = hn::GetLane(hn::SumOfLanes(d, acc));
  }
}

// Per-dtype access to a quantized row for decode: GroupDot returns the lanes
// of sum_j q_j x_j over group g (before the scale), Offset the part of the
// dot product that does not depend on the codes.
class Q8Rows {
 public:
  explicit Q8Rows(const WeightView& w)
      : codes_(reinterpret_cast<const int8_t*>(w.data)),
        scales_(w.data + w.rows * w.cols),
        cols_(w.cols),
        groups_(w.cols / kQ8Group) {}
  size_t groups() const { return groups_; }
  float Scale(size_t row, size_t g) const { return HalfAt(scales_ + (row * groups_ + g) * 2); }
  hn::Vec<GroupTag> GroupDot(size_t row, size_t g, const float* HWY_RESTRICT x) const {
    const GroupTag d;
    const int8_t* codes = codes_ + row * cols_ + g * kQ8Group;
    auto acc = hn::Zero(d);
    for (size_t c = 0; c < kQ8Group; c += hn::Lanes(d)) {
      acc = hn::MulAdd(Q8Codes(d, codes + c), hn::LoadU(d, x + g * kQ8Group + c), acc);
    }
    return acc;
  }
  float Offset(size_t /*row*/, const float* /*xsum*/) const { return 0.0f; }

 private:
  const int8_t* codes_;
  const uint8_t* scales_;
  size_t cols_, groups_;
};

class Q4Rows {
 public:
  explicit Q4Rows(const WeightView& w)
      : codes_(w.data),
        scales_(w.data + w.rows * (w.cols / 2)),
        mins_(scales_ + w.rows * (w.cols / w.group) * 2),
        cols_(w.cols),
        group_(w.group),
        groups_(w.cols / w.group) {}
  size_t groups() const { return groups_; }
  float Scale(size_t row, size_t g) const { return HalfAt(scales_ + (row * groups_ + g) * 2); }
  hn::Vec<GroupTag> GroupDot(size_t row, size_t g, const float* HWY_RESTRICT x) const {
    const GroupTag d;
    const size_t half = group_ / 2;
    const uint8_t* codes = codes_ + row * (cols_ / 2) + g * half;
    const float* xg = x + g * group_;
    auto acc = hn::Zero(d);
    for (size_t c = 0; c < half; c += hn::Lanes(d)) {
      hn::Vec<GroupTag> lo, hi;
      Q4Codes(d, codes + c, &lo, &hi);
      acc = hn::MulAdd(lo, hn::LoadU(d, xg + c), acc);
      acc = hn::MulAdd(hi, hn::LoadU(d, xg + half + c), acc);
    }
    return acc;
  }
  float Offset(size_t row, const float* HWY_RESTRICT xsum) const {
    const uint8_t* mins = mins_ + row * groups_ * 2;
    float sum = 0.0f;
    for (size_t g = 0; g < groups_; ++g) sum += HalfAt(mins + 2 * g) * xsum[g];
    return sum;
  }

 private:
  const uint8_t* codes_;
  const uint8_t* scales_;
  const uint8_t* mins_;
  size_t cols_, group_, groups_;
};

// Decode over a quantized dtype: kRows rows at a time for independent FMA
// chains (rows past r1 repeat the last row and are not stored).
template <class Rows>
HWY_INLINE void GemvQuantized(const Rows& rows, const float* HWY_RESTRICT x,
                              const float* HWY_RESTRICT xsum, const float* bias, size_t r0,
                              size_t r1, float* HWY_RESTRICT out) {
  const GroupTag d;
  for (size_t r = r0; r < r1; r += kRows) {
    const size_t i0 = r, i1 = std::min(r + 1, r1 - 1), i2 = std::min(r + 2, r1 - 1),
                 i3 = std::min(r + 3, r1 - 1);
    auto acc0 = hn::Zero(d), acc1 = hn::Zero(d), acc2 = hn::Zero(d), acc3 = hn::Zero(d);
    for (size_t g = 0; g < rows.groups(); ++g) {
      acc0 = hn::MulAdd(hn::Set(d, rows.Scale(i0, g)), rows.GroupDot(i0, g, x), acc0);
      acc1 = hn::MulAdd(hn::Set(d, rows.Scale(i1, g)), rows.GroupDot(i1, g, x), acc1);
      acc2 = hn::MulAdd(hn::Set(d, rows.Scale(i2, g)), rows.GroupDot(i2, g, x), acc2);
      acc3 = hn::MulAdd(hn::Set(d, rows.Scale(i3, g)), rows.GroupDot(i3, g, x), acc3);
    }
    const float sums[kRows] = {
        hn::GetLane(hn::SumOfLanes(d, acc0)), hn::GetLane(hn::SumOfLanes(d, acc1)),
        hn::GetLane(hn::SumOfLanes(d, acc2)), hn::GetLane(hn::SumOfLanes(d, acc3))};
    for (size_t i = 0; i < kRows && r + i < r1; ++i) {
      out[r + i] = sums[i] + rows.Offset(r + i, xsum) + (bias ? bias[r + i] : 0.0f);
    }
  }
}

// Decode over a plain dtype (f32, f16, bf16).
template <typename T>
HWY_INLINE void GemvPlain(const T* HWY_RESTRICT w, size_t cols, const float* HWY_RESTRICT x,
                          const float* bias, size_t r0, size_t r1, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  for (size_t r = r0; r < r1; r += kRows) {
    const T* w0 = w + r * cols;
    const T* w1 = w + std::min(r + 1, r1 - 1) * cols;
    const T* w2 = w + std::min(r + 2, r1 - 1) * cols;
    const T* w3 = w + std::min(r + 3, r1 - 1) * cols;
    auto acc0 = hn::Zero(d), acc1 = hn::Zero(d), acc2 = hn::Zero(d), acc3 = hn::Zero(d);
    size_t j = 0;
    for (; j + N <= cols; j += N) {
      const auto xv = hn::LoadU(d, x + j);
      acc0 = hn::MulAdd(LoadF32(d, w0 + j), xv, acc0);
      acc1 = hn::MulAdd(LoadF32(d, w1 + j), xv, acc1);
      acc2 = hn::MulAdd(LoadF32(d, w2 + j), xv, acc2);
      acc3 = hn::MulAdd(LoadF32(d, w3 + j), xv, acc3);
    }
    float sums[kRows] = {hn::GetLane(hn::SumOfLanes(d, acc0)), hn::GetLane(hn::SumOfLanes(d, acc1)),
                         hn::GetLane(hn::SumOfLanes(d, acc2)),
                         hn::GetLane(hn::SumOfLanes(d, acc3))};
    const T* rows[kRows] = {w0, w1, w2, w3};
    for (size_t i = 0; i < kRows && r + i < r1; ++i) {
      for (size_t k = j; k < cols; ++k) sums[i] += x[k] * ScalarF32(rows[i] + k);
      out[r + i] = sums[i] + (bias ? bias[r + i] : 0.0f);
    }
  }
}

// Decode rows [r0, r1) of out[rows] for one token x[cols]; xsum as GroupSums
// for q4 (unused otherwise).
HWY_INLINE void LinearDecodeRows(const float* HWY_RESTRICT x, const float* HWY_RESTRICT xsum,
                                 const WeightView& w, const float* bias, size_t r0, size_t r1,
                                 float* HWY_RESTRICT out) {
  switch (w.dtype) {
    case DType::kF32:
      return GemvPlain(reinterpret_cast<const float*>(w.data), w.cols, x, bias, r0, r1, out);
    case DType::kF16:
      return GemvPlain(reinterpret_cast<const hwy::float16_t*>(w.data), w.cols, x, bias, r0, r1,
                       out);
    case DType::kBF16:
      return GemvPlain(reinterpret_cast<const hwy::bfloat16_t*>(w.data), w.cols, x, bias, r0, r1,
                       out);
    case DType::kQ8:
      return GemvQuantized(Q8Rows(w), x, xsum, bias, r0, r1, out);
    case DType::kQ4:
      return GemvQuantized(Q4Rows(w), x, xsum, bias, r0, r1, out);
  }
}

// One accumulator row of a prefill tile: a_t += w * x_t for three tokens.
template <class V>
HWY_INLINE void FmaTokens(V w, V x0, V x1, V x2, V& a0, V& a1, V& a2) {
  a0 = hn::MulAdd(w, x0, a0);
  a1 = hn::MulAdd(w, x1, a1);
  a2 = hn::MulAdd(w, x2, a2);
}

// res[r * kTokens + t] = dot(w[r], x[t]) over cols for a kRows x kTokens tile.
HWY_INLINE void DotTile(const float* const* HWY_RESTRICT w, const float* const* HWY_RESTRICT x,
                        size_t cols, float* HWY_RESTRICT res) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto a00 = hn::Zero(d), a01 = hn::Zero(d), a02 = hn::Zero(d);
  auto a10 = hn::Zero(d), a11 = hn::Zero(d), a12 = hn::Zero(d);
  auto a20 = hn::Zero(d), a21 = hn::Zero(d), a22 = hn::Zero(d);
  auto a30 = hn::Zero(d), a31 = hn::Zero(d), a32 = hn::Zero(d);
  size_t j = 0;
  for (; j + N <= cols; j += N) {
    const auto x0 = hn::LoadU(d, x[0] + j);
    const auto x1 = hn::LoadU(d, x[1] + j);
    const auto x2 = hn::LoadU(d, x[2] + j);
    FmaTokens(hn::LoadU(d, w[0] + j), x0, x1, x2, a00, a01, a02);
    FmaTokens(hn::LoadU(d, w[1] + j), x0, x1, x2, a10, a11, a12);
    FmaTokens(hn::LoadU(d, w[2] + j), x0, x1, x2, a20, a21, a22);
    FmaTokens(hn::LoadU(d, w[3] + j), x0, x1, x2, a30, a31, a32);
  }
  res[0] = hn::GetLane(hn::SumOfLanes(d, a00));
  res[1] = hn::GetLane(hn::SumOfLanes(d, a01));
  res[2] = hn::GetLane(hn::SumOfLanes(d, a02));
  res[3] = hn::GetLane(hn::SumOfLanes(d, a10));
  res[4] = hn::GetLane(hn::SumOfLanes(d, a11));
  res[5] = hn::GetLane(hn::SumOfLanes(d, a12));
  res[6] = hn::GetLane(hn::SumOfLanes(d, a20));
  res[7] = hn::GetLane(hn::SumOfLanes(d, a21));
  res[8] = hn::GetLane(hn::SumOfLanes(d, a22));
  res[9] = hn::GetLane(hn::SumOfLanes(d, a30));
  res[10] = hn::GetLane(hn::SumOfLanes(d, a31));
  res[11] = hn::GetLane(hn::SumOfLanes(d, a32));
  for (; j < cols; ++j) {
    for (size_t r = 0; r < kRows; ++r) {
      for (size_t t = 0; t < kTokens; ++t) res[r * kTokens + t] += w[r][j] * x[t][j];
    }
  }
}

// Prefill rows [r0, r1) of out[n, rows]. scratch holds kRows * w.cols floats
// (the dequantized row block; unused for f32 weights, which are read in
// place). Tiles past the last row or token repeat it and are not stored.
HWY_INLINE void LinearPrefillRows(const float* HWY_RESTRICT x, size_t n, const WeightView& w,
                                  const float* bias, size_t r0, size_t r1,
                                  float* HWY_RESTRICT scratch, float* HWY_RESTRICT out) {
  const size_t cols = w.cols;
  for (size_t r = r0; r < r1; r += kRows) {
    const size_t valid_rows = std::min(kRows, r1 - r);
    const float* wr[kRows];
    for (size_t i = 0; i < kRows; ++i) {
      const size_t row = r + std::min(i, valid_rows - 1);
      if (w.dtype == DType::kF32) {
        wr[i] = reinterpret_cast<const float*>(w.data) + row * cols;
      } else {
        if (i < valid_rows) DequantizeRow(w, row, scratch + i * cols);
        wr[i] = scratch + std::min(i, valid_rows - 1) * cols;
      }
    }
    for (size_t t = 0; t < n; t += kTokens) {
      const size_t valid_tokens = std::min(kTokens, n - t);
      const float* xt[kTokens];
      for (size_t k = 0; k < kTokens; ++k) xt[k] = x + (t + std::min(k, valid_tokens - 1)) * cols;
      float res[kRows * kTokens];
      DotTile(wr, xt, cols, res);
      for (size_t i = 0; i < valid_rows; ++i) {
        const float b = bias ? bias[r + i] : 0.0f;
        for (size_t k = 0; k < valid_tokens; ++k) {
          out[(t + k) * w.rows + r + i] = res[i * kTokens + k] + b;
        }
      }
    }
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_MATVEC_INL_H_
