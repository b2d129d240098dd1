// Conversion of q4 tensors between the planar layout and the rows16 layout
// the int8 dot kernels read (format/dtype.h pictures both). The converter
// packs once when it writes a file; backends that read planar q4 (OpenCL)
// unpack when they upload.
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

}  // namespace pocket
