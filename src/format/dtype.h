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
//
// Layouts (TensorLayout): kRowMajor is the planar picture above. kRows16 is
// the q4 layout the int8 dot kernels read (kernels/cpu/matvec_rows16-inl.h):
// rows are taken 16 at a time, and for row block b and group g one record of
// 8 G + 64 bytes holds
//   G / 8 chunks of 64 code bytes (8 G bytes); in chunk c, byte 4 i + j (row i of the
//       block, j < 4) holds weight k0 + j in its low nibble and weight
//       k0 + 4 + j in its high nibble, k0 = g G + 8 c
//   16 f16 scales (rows 16 b .. 16 b + 15), then 16 f16 mins
// records ordered by block, then group. One 32-bit lane of a chunk is 8
// weights of one row, so a vector of int32 lanes covers 16 (or 8, 4) rows
// and a 4-byte dot product (VNNI dpbusd, ARM sdot) against 4 activations
// broadcast to every lane advances all of them; a block's codes, scales and
// mins are one contiguous stream. Same byte count as planar; needs
// rows % 16 == 0.
//
// kRows16 for q8 (group 32) takes the same 16-row blocks; the record of
// block b and group g is 16 G + 32 = 544 bytes:
//   G / 4 chunks of 64 code bytes; in chunk c, byte 4 i + j (row i of the
//       block, j < 4) is the int8 code of weight g G + 4 c + j
//   16 f16 scales (rows 16 b .. 16 b + 15)
// so one 32-bit lane of a chunk is 4 weights of one row: the same dot
// product advances 16 (8, 4) rows with no nibbles to split and no mins.
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

enum class TensorLayout : uint8_t {
  kRowMajor = 0,  // planar, as pictured above
  kRows16 = 1,    // q4 and q8: 16-row interleaved records
};
constexpr int kNumLayouts = 2;
constexpr uint64_t kRows16Block = 16;
constexpr uint32_t kQ8Group = 32;

const char* DTypeName(DType t);  // "f32", "f16", "bf16", "q8", "q4"
bool ParseDType(std::string_view name, DType* out);
bool IsQuantized(DType t);
bool IsValidGroup(DType t, uint32_t group);  // q4: 32/64/128, q8: 32, else 0

const char* LayoutName(TensorLayout l);  // "row_major", "rows16"
bool ParseLayout(std::string_view name, TensorLayout* out);
// Whether a [rows, cols] tensor of dtype t can be stored in layout l.
bool IsValidLayout(TensorLayout l, DType t, uint64_t rows);

// Byte size of a [rows, cols] tensor; false when the size overflows uint64
// or the group does not divide cols.
bool TensorByteSize(DType t, uint64_t rows, uint64_t cols, uint32_t group, uint64_t* bytes);

}  // namespace pocket
