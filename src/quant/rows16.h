// Conversion of q4 and q8 tensors between the planar layout and the rows16
// layout the int8 dot kernels read (format/dtype.h pictures both). The
// converter packs once when it writes a file; backends that read planar
// weights (OpenCL) unpack when they upload.
#pragma once

#include <cstdint>
#include <vector>

namespace pocket {

// Both take a whole [rows, cols] q4 tensor of group `group`; rows must be a
// multiple of 16 and cols of group (the caller has validated the shape).
std::vector<uint8_t> PackQ4Rows16(const uint8_t* planar, uint64_t rows, uint64_t cols,
                                  uint32_t group);
std::vector<uint8_t> UnpackQ4Rows16(const uint8_t* packed, uint64_t rows, uint64_t cols,
                                    uint32_t group);

// Weight (row, col)'s 4-bit code, scale and min in a rows16 tensor.
struct Q4Element {
  uint8_t code;
  uint16_t scale_f16, min_f16;
};
Q4Element Rows16Element(const uint8_t* packed, uint64_t cols, uint32_t group, uint64_t row,
                        uint64_t col);

// The same for a whole [rows, cols] q8 tensor (group 32).
std::vector<uint8_t> PackQ8Rows16(const uint8_t* planar, uint64_t rows, uint64_t cols);
std::vector<uint8_t> UnpackQ8Rows16(const uint8_t* packed, uint64_t rows, uint64_t cols);

// Weight (row, col)'s int8 code and scale in a q8 rows16 tensor.
struct Q8Element {
  int8_t code;
  uint16_t scale_f16;
};
Q8Element Rows16Q8Element(const uint8_t* packed, uint64_t cols, uint64_t row, uint64_t col);

}  // namespace pocket
