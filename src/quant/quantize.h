// Quantization of f32 rows to every stored dtype, and the matching scalar
// dequantizers (the reference the SIMD kernels are tested against).
// Byte layouts are described in format/dtype.h.
//
//   q8: symmetric int8, groups of 32: scale = absmax/127 stored as f16,
//       q = clamp(round(w / scale), -127, 127).
//   q4: asymmetric uint4, groups of G: min and scale = (max - min)/15 stored
//       as f16; q = clamp(round((w - min) / scale), 0, 15) using the f16-rounded
//       scale and min, so w ~= scale * q + min. This is MNN's g64 asymmetric
//       INT4 scheme.
#pragma once

#include <cstdint>
#include <vector>

#include "format/dtype.h"
#include "util/status.h"

namespace pocket {

// Quantizes a row-major [rows, cols] f32 matrix (1-D tensors: rows = 1).
StatusOr<std::vector<uint8_t>> QuantizeTensor(const float* src, uint64_t rows, uint64_t cols,
                                              DType dtype, uint32_t group);

// Dequantizes row `row` of a tensor stored as `dtype` in `layout` into
// out[cols].
void DequantizeRow(const uint8_t* tensor, DType dtype, TensorLayout layout, uint64_t rows,
                   uint64_t cols, uint32_t group, uint64_t row, float* out);

// Worst-case absolute error of one group for a dtype, given the group's
// values: used by tests and `pocket convert` self-checks.
float QuantizationBound(DType dtype, const float* group_values, uint32_t n);

}  // namespace pocket
