#include "quant/quantize.h"

#include "quant/rows16.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "util/fp16.h"

namespace pocket {
namespace {

// Stored f16 values are little-endian; Pocket targets little-endian hosts.
void StoreF16(uint8_t* dst, uint16_t h) { std::memcpy(dst, &h, 2); }
uint16_t LoadF16(const uint8_t* src) {
  uint16_t h;
  std::memcpy(&h, src, 2);
  return h;
}

// Relative slack for the float arithmetic of quantize (w / scale) and
// dequantize (scale * q + min): a few ulps of the largest magnitude involved.
constexpr float kArithmeticSlack = 1.0f / (1 << 21);

struct Q4Params {
  float min_r;    // f16-rounded group minimum
  float scale_r;  // f16-rounded (max - min) / 15
  float exact_scale;
  float min;
  float max;
};

Q4Params ComputeQ4Params(const float* w, uint32_t n) {
  float lo = w[0], hi = w[0];
  for (uint32_t i = 1; i < n; ++i) {
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
  }
  const float scale = (hi - lo) / 15.0f;
  return {F16ToF32(F32ToF16(lo)), F16ToF32(F32ToF16(scale)), scale, lo, hi};
}

float AbsMax(const float* w, uint32_t n) {
  float m = 0.0f;
  for (uint32_t i = 0; i < n; ++i) m = std::max(m, std::fabs(w[i]));
  return m;
}

// Quantizes one q8 group of 32; returns the f16 scale.
uint16_t QuantizeQ8Group(const float* w, int8_t* codes) {
  const uint16_t scale_h = F32ToF16(AbsMax(w, kQ8Group) / 127.0f);
  const float scale = F16ToF32(scale_h);
  for (uint32_t i = 0; i < kQ8Group; ++i) {
    const float q = scale == 0.0f ? 0.0f : std::round(w[i] / scale);
    codes[i] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
  }
  return scale_h;
}

// Quantizes one q4 group of `g` weights into g/2 code bytes.
void QuantizeQ4Group(const float* w, uint32_t g, uint8_t* codes, uint16_t* scale_h,
                     uint16_t* min_h) {
  const Q4Params p = ComputeQ4Params(w, g);
  *scale_h = F32ToF16(p.exact_scale);
  *min_h = F32ToF16(p.min);
  auto code = [&](float v) -> uint8_t {
    if (p.scale_r == 0.0f) return 0;
    return static_cast<uint8_t>(std::clamp(std::round((v - p.min_r) / p.scale_r), 0.0f, 15.0f));
  };
  const uint32_t half = g / 2;
  for (uint32_t j = 0; j < half; ++j) {
    codes[j] = static_cast<uint8_t>(code(w[j]) | (code(w[j + half]) << 4));
  }
}

Status CheckFinite(const float* src, uint64_t rows, uint64_t cols) {
  for (uint64_t i = 0; i < rows * cols; ++i) {
    if (!std::isfinite(src[i])) {
      return Errorf(StatusCode::kInvalidArgument,
                    "cannot quantize a non-finite value (%f) at row %llu, column %llu", src[i],
                    static_cast<unsigned long long>(i / cols),
                    static_cast<unsigned long long>(i % cols));
    }
  }
  return Status::Ok();
}

// f16 cannot hold scales or mins beyond 65504; such weights need f32.
Status CheckF16Range(float v, uint64_t row, uint64_t group, const char* what) {
  if (std::isfinite(F16ToF32(F32ToF16(v)))) return Status::Ok();
  return Errorf(StatusCode::kInvalidArgument,
                "%s %g of row %llu, group %llu overflows f16; store this tensor as f32 or f16",
                what, v, static_cast<unsigned long long>(row),
                static_cast<unsigned long long>(group));
}

}  // namespace

StatusOr<std::vector<uint8_t>> QuantizeTensor(const float* src, uint64_t rows, uint64_t cols,
                                              DType dtype, uint32_t group) {
  if (IsQuantized(dtype)) {
    if (!IsValidGroup(dtype, group)) {
      return Errorf(StatusCode::kInvalidArgument,
                    "group %u is not valid for %s (q8: 32; q4: 32, 64 or 128)", group,
                    DTypeName(dtype));
    }
    if (cols % group != 0) {
      return Errorf(StatusCode::kInvalidArgument,
                    "%s group %u does not divide the %llu columns; use a smaller group or f16",
                    DTypeName(dtype), group, static_cast<unsigned long long>(cols));
    }
  } else {
    group = 0;
  }
  uint64_t nbytes = 0;
  if (!TensorByteSize(dtype, rows, cols, group, &nbytes)) {
    return Errorf(StatusCode::kInvalidArgument, "a [%llu, %llu] %s tensor is too large",
                  static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols),
                  DTypeName(dtype));
  }
  POCKET_RETURN_IF_ERROR(CheckFinite(src, rows, cols));
  std::vector<uint8_t> out(nbytes);
  const uint64_t n = rows * cols;
  switch (dtype) {
    case DType::kF32:
      std::memcpy(out.data(), src, n * 4);
      break;
    case DType::kF16:
      for (uint64_t i = 0; i < n; ++i) {
        if (!std::isfinite(F16ToF32(F32ToF16(src[i])))) {
          return Errorf(StatusCode::kInvalidArgument,
                        "value %g at row %llu, column %llu overflows f16; use f32", src[i],
                        static_cast<unsigned long long>(i / cols),
                        static_cast<unsigned long long>(i % cols));
        }
        StoreF16(&out[2 * i], F32ToF16(src[i]));
      }
      break;
    case DType::kBF16:
      for (uint64_t i = 0; i < n; ++i) StoreF16(&out[2 * i], F32ToBF16(src[i]));
      break;
    case DType::kQ8: {
      int8_t* codes = reinterpret_cast<int8_t*>(out.data());
      uint8_t* scales = out.data() + n;
      for (uint64_t gi = 0; gi < n / kQ8Group; ++gi) {
        const float* w = src + gi * kQ8Group;
        POCKET_RETURN_IF_ERROR(CheckF16Range(AbsMax(w, kQ8Group) / 127.0f, gi * kQ8Group / cols,
                                             (gi * kQ8Group % cols) / kQ8Group, "scale"));
        StoreF16(scales + 2 * gi, QuantizeQ8Group(w, codes + gi * kQ8Group));
      }
      break;
    }
    case DType::kQ4: {
      const uint64_t groups = n / group;
      uint8_t* scales = out.data() + n / 2;
      uint8_t* mins = scales + 2 * groups;
      for (uint64_t gi = 0; gi < groups; ++gi) {
        const float* w = src + gi * group;
        const Q4Params p = ComputeQ4Params(w, group);
        const uint64_t row = gi * group / cols, col_group = (gi * group % cols) / group;
        POCKET_RETURN_IF_ERROR(CheckF16Range(p.min, row, col_group, "minimum"));
        POCKET_RETURN_IF_ERROR(CheckF16Range(p.exact_scale, row, col_group, "scale"));
        uint16_t scale_h, min_h;
        QuantizeQ4Group(w, group, out.data() + gi * group / 2, &scale_h, &min_h);
        StoreF16(scales + 2 * gi, scale_h);
        StoreF16(mins + 2 * gi, min_h);
      }
      break;
    }
  }
  return out;
}

void DequantizeRow(const uint8_t* tensor, DType dtype, TensorLayout layout, uint64_t rows,
                   uint64_t cols, uint32_t group, uint64_t row, float* out) {
  if (layout == TensorLayout::kRows16 && dtype == DType::kQ8) {
    for (uint64_t j = 0; j < cols; ++j) {
      const Q8Element e = Rows16Q8Element(tensor, cols, row, j);
      out[j] = F16ToF32(e.scale_f16) * static_cast<float>(e.code);
    }
    return;
  }
  if (layout == TensorLayout::kRows16) {
    for (uint64_t j = 0; j < cols; ++j) {
      const Q4Element e = Rows16Element(tensor, cols, group, row, j);
      out[j] = F16ToF32(e.scale_f16) * static_cast<float>(e.code) + F16ToF32(e.min_f16);
    }
    return;
  }
  switch (dtype) {
    case DType::kF32:
      std::memcpy(out, tensor + row * cols * 4, cols * 4);
      return;
    case DType::kF16:
    case DType::kBF16: {
      const uint8_t* p = tensor + row * cols * 2;
      for (uint64_t i = 0; i < cols; ++i) {
        const uint16_t h = LoadF16(p + 2 * i);
        out[i] = dtype == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
      }
      return;
    }
    case DType::kQ8: {
      const int8_t* codes = reinterpret_cast<const int8_t*>(tensor) + row * cols;
      const uint8_t* scales = tensor + rows * cols + row * (cols / kQ8Group) * 2;
      for (uint64_t i = 0; i < cols; ++i) {
        out[i] = F16ToF32(LoadF16(scales + 2 * (i / kQ8Group))) * static_cast<float>(codes[i]);
      }
      return;
    }
    case DType::kQ4: {
      const uint64_t groups_per_row = cols / group;
      const uint8_t* codes = tensor + row * cols / 2;
      const uint8_t* scales = tensor + rows * cols / 2 + row * groups_per_row * 2;
      const uint8_t* mins = scales + rows * groups_per_row * 2;
      const uint32_t half = group / 2;
      for (uint64_t g = 0; g < groups_per_row; ++g) {
        const float scale = F16ToF32(LoadF16(scales + 2 * g));
        const float min = F16ToF32(LoadF16(mins + 2 * g));
        const uint8_t* c = codes + g * half;
        float* o = out + g * group;
        for (uint32_t j = 0; j < half; ++j) {
          o[j] = scale * static_cast<float>(c[j] & 0xF) + min;
          o[j + half] = scale * static_cast<float>(c[j] >> 4) + min;
        }
      }
      return;
    }
  }
}

// Derivation (r(x) = x rounded to f16, s = exact scale, s_r = r(s)):
//  q8: inside the clamp range the rounding error is at most s_r/2; a value at
//      +-absmax maps to q = +-127 and lands 127*|s - s_r| away. Sum: s_r/2 +
//      127|s - s_r| (when s_r is 0 this is absmax: every code is 0).
//  q4: inside [0, 15] the error is at most s_r/2; below, w >= min lands on
//      min_r, off by at most |min - min_r|; above, max - (15 s_r + min_r) =
//      15(s - s_r) + (min - min_r). Sum: s_r/2 + |min - min_r| + 15|s - s_r|.
//  f16/bf16: half an ulp of the largest magnitude (2^-11 / 2^-8 relative)
//      plus half the smallest f16 subnormal.
// Each adds a few float ulps of the largest magnitude for the arithmetic.
float QuantizationBound(DType dtype, const float* group_values, uint32_t n) {
  if (n == 0) return 0.0f;
  const float absmax = AbsMax(group_values, n);
  const float slack = absmax * kArithmeticSlack;
  switch (dtype) {
    case DType::kF32:
      return 0.0f;
    case DType::kF16:
      return absmax / 2048.0f + 1.0f / (1 << 25) + slack;
    case DType::kBF16:
      return absmax / 256.0f + slack;
    case DType::kQ8: {
      const float s = absmax / 127.0f;
      const float s_r = F16ToF32(F32ToF16(s));
      return s_r / 2 + 127.0f * std::fabs(s - s_r) + 2 * slack;
    }
    case DType::kQ4: {
      const Q4Params p = ComputeQ4Params(group_values, n);
      return p.scale_r / 2 + std::fabs(p.min - p.min_r) +
             15.0f * std::fabs(p.exact_scale - p.scale_r) + 2 * slack;
    }
  }
  return 0.0f;
}

}  // namespace pocket
