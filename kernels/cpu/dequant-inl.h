// Dequantization of one weight row to f32 (format/dtype.h layouts): used by
// Embed and by the prefill path of Linear, which dequantizes a block of rows
// once and reuses it for every token of the batch.

#if defined(POCKET_KERNELS_CPU_DEQUANT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_DEQUANT_INL_H_
#undef POCKET_KERNELS_CPU_DEQUANT_INL_H_
#else
#define POCKET_KERNELS_CPU_DEQUANT_INL_H_
#endif

#include <hwy/highway.h>

#include "backends/cpu/ops.h"
#include "backends/cpu/rows16.h"
#include "kernels/cpu/load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Quantized kernels step through a group with at most 16 lanes, so every
// step stays inside one group (q8 groups are 32, q4 half-groups >= 16).
using GroupTag = hn::CappedTag<float, 16>;

template <typename T>
HWY_INLINE void WidenRow(const T* HWY_RESTRICT src, size_t cols, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t j = 0;
  for (; j + N <= cols; j += N) hn::StoreU(LoadF32(d, src + j), d, out + j);
  for (; j < cols; ++j) out[j] = ScalarF32(src + j);
}

// Codes of q4 half-group step: weights j (low nibbles) and j + G/2 (high).
HWY_INLINE void Q4Codes(GroupTag d, const uint8_t* HWY_RESTRICT codes, hn::Vec<GroupTag>* lo,
                        hn::Vec<GroupTag>* hi) {
  const hn::RebindToSigned<GroupTag> di;
  const hn::RebindToUnsigned<GroupTag> du;
  const auto bytes = hn::PromoteTo(du, hn::LoadU(hn::Rebind<uint8_t, GroupTag>(), codes));
  *lo = hn::ConvertTo(d, hn::BitCast(di, hn::And(bytes, hn::Set(du, 0xF))));
  *hi = hn::ConvertTo(d, hn::BitCast(di, hn::ShiftRight<4>(bytes)));
}

HWY_INLINE hn::Vec<GroupTag> Q8Codes(GroupTag d, const int8_t* HWY_RESTRICT codes) {
  const hn::RebindToSigned<GroupTag> di;
  return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(hn::Rebind<int8_t, GroupTag>(), codes)));
}

HWY_INLINE void DequantizeQ8Row(const WeightView& w, size_t row, float* HWY_RESTRICT out) {
  const GroupTag d;
  const size_t N = hn::Lanes(d);
  const size_t groups = w.cols / kQ8Group;
  const int8_t* codes = reinterpret_cast<const int8_t*>(w.data) + row * w.cols;
  const uint8_t* scales = w.data + w.rows * w.cols + row * groups * 2;
  for (size_t g = 0; g < groups; ++g) {
    const auto scale = hn::Set(d, HalfAt(scales + 2 * g));
    for (size_t c = 0; c < kQ8Group; c += N) {
      const size_t j = g * kQ8Group + c;
      hn::StoreU(hn::Mul(scale, Q8Codes(d, codes + j)), d, out + j);
    }
  }
}

HWY_INLINE void DequantizeQ4Row(const WeightView& w, size_t row, float* HWY_RESTRICT out) {
  const GroupTag d;
  const size_t N = hn::Lanes(d);
  const size_t G = w.group;
  const size_t groups = w.cols / G;
  const uint8_t* codes = w.data + row * (w.cols / 2);
  const uint8_t* scales = w.data + w.rows * (w.cols / 2) + row * groups * 2;
  const uint8_t* mins = scales + w.rows * groups * 2;
  for (size_t g = 0; g < groups; ++g) {
    const auto scale = hn::Set(d, HalfAt(scales + 2 * g));
    const auto min = hn::Set(d, HalfAt(mins + 2 * g));
    float* group_out = out + g * G;
    for (size_t c = 0; c < G / 2; c += N) {
      hn::Vec<GroupTag> lo, hi;
      Q4Codes(d, codes + g * (G / 2) + c, &lo, &hi);
      hn::StoreU(hn::MulAdd(scale, lo, min), d, group_out + c);
      hn::StoreU(hn::MulAdd(scale, hi, min), d, group_out + G / 2 + c);
    }
  }
}

// out[w.cols] = row `row` as f32 (Embed of a rows16 table).
HWY_INLINE void Rows16DequantizeRow(const Rows16Weights& w, size_t row, float* HWY_RESTRICT out) {
  const size_t block = row / kRows16Block, i = row % kRows16Block;
  for (size_t g = 0; g < w.groups; ++g) {
    const uint8_t* record = w.Record(block, g);
    const float scale = HalfAt(record + w.code_bytes + 2 * i);
    float* o = out + g * w.group;
    if (w.q8) {  // 4 codes of row i in each chunk
      for (size_t c = 0; c < w.group / 4; ++c) {
        const int8_t* quad = reinterpret_cast<const int8_t*>(record + 64 * c + 4 * i);
        for (size_t j = 0; j < 4; ++j) o[4 * c + j] = scale * static_cast<float>(quad[j]);
      }
      continue;
    }
    const float min = HalfAt(record + w.code_bytes + 2 * (kRows16Block + i));
    for (size_t c = 0; c < w.group / 8; ++c) {
      const uint8_t* quad = record + 64 * c + 4 * i;
      for (size_t j = 0; j < 4; ++j) {
        o[8 * c + j] = scale * static_cast<float>(quad[j] & 0xF) + min;
        o[8 * c + 4 + j] = scale * static_cast<float>(quad[j] >> 4) + min;
      }
    }
  }
}

// out[w.cols] = row `row` of w as f32.
HWY_INLINE void DequantizeRow(const WeightView& w, size_t row, float* HWY_RESTRICT out) {
  if (w.layout == TensorLayout::kRows16) return Rows16DequantizeRow(Rows16Weights(w), row, out);
  switch (w.dtype) {
    case DType::kF32:
      WidenRow(reinterpret_cast<const float*>(w.data) + row * w.cols, w.cols, out);
      return;
    case DType::kF16:
      WidenRow(reinterpret_cast<const hwy::float16_t*>(w.data) + row * w.cols, w.cols, out);
      return;
    case DType::kBF16:
      WidenRow(reinterpret_cast<const hwy::bfloat16_t*>(w.data) + row * w.cols, w.cols, out);
      return;
    case DType::kQ8:
      DequantizeQ8Row(w, row, out);
      return;
    case DType::kQ4:
      DequantizeQ4Row(w, row, out);
      return;
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_DEQUANT_INL_H_
