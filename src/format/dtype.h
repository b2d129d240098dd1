// Weight and tensor element types of the .pocket format, and the byte layout
// of each. Quantized types are stored "planar" per tensor so SIMD kernels
// stream codes and scales separately (docs/format.md has the picture):
//
//   q8 [rows, cols], group 32 along cols:
//       int8 codes   [rows][cols]
//       f16 scales   [rows][cols/32]          w = scale * q
//   q4 [rows, cols], group G in {32, 64, 128} along cols:
//       uint8 codes  [rows][cols/2]  byte j of group g holds weight j (low
//                                    nibble) and weight j + G/2 (high nibble)
//       f16 scales   [rows][cols/G]
//       f16 mins     [rows][cols/G]           w = scale * q + min
//
// A tensor of more than two dims is treated as rows = product of leading
// dims. Quantized tensors need cols % group == 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pocket {

enum class DType : uint8_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kQ8 = 3,
  kQ4 = 4,
};
constexpr int kNumDTypes = 5;
constexpr uint32_t kQ8Group = 32;

const char* DTypeName(DType t);  // "f32", "f16", "bf16", "q8", "q4"
bool ParseDType(std::string_view name, DType* out);
bool IsQuantized(DType t);
bool IsValidGroup(DType t, uint32_t group);  // q4: 32/64/128, q8: 32, else 0

// Byte size of a [rows, cols] tensor; false when the size overflows uint64
// or the group does not divide cols.
bool TensorByteSize(DType t, uint64_t rows, uint64_t cols, uint32_t group,
                    uint64_t* bytes);

}  // namespace pocket
