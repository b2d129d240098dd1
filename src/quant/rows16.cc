#include "quant/rows16.h"

#include "format/dtype.h"

namespace pocket {
namespace {

// Offsets inside the rows16 stream of weight (row, col) (dtype.h).
struct Rows16Place {
  uint64_t record;     // first byte of the (block, group) record
  uint64_t code_byte;  // byte of the record holding the code
  bool high;           // the code is the byte's high nibble
  uint64_t meta;       // byte offset of the row's f16 scale in the record
};

Rows16Place Place(uint64_t cols, uint32_t group, uint64_t row, uint64_t col) {
  const uint64_t groups = cols / group;
  const uint64_t record_bytes = 8 * uint64_t{group} + 4 * kRows16Block;
  const uint64_t block = row / kRows16Block, i = row % kRows16Block;
  const uint64_t g = col / group, k = col % group;
  const uint64_t chunk = k / 8, j = k % 8;
  Rows16Place p;
  p.record = (block * groups + g) * record_bytes;
  p.code_byte = chunk * 64 + 4 * i + j % 4;
  p.high = j >= 4;
  p.meta = 8 * uint64_t{group} + 2 * i;
  return p;
}

uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
void StoreU16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

// Planar q4 (dtype.h): byte j of a group holds weights j and j + G/2.
uint8_t PlanarCode(const uint8_t* planar, uint64_t cols, uint32_t group, uint64_t row,
                   uint64_t col) {
  const uint64_t g = col / group, k = col % group, half = group / 2;
  const uint8_t byte = planar[row * cols / 2 + g * half + k % half];
  return k < half ? byte & 0xF : byte >> 4;
}

// The same for q8 (group 32): 4 codes of a row per 32-bit lane, then the
// 16 scales (dtype.h).
Rows16Place PlaceQ8(uint64_t cols, uint64_t row, uint64_t col) {
  const uint64_t groups = cols / kQ8Group;
  const uint64_t record_bytes = 16 * uint64_t{kQ8Group} + 2 * kRows16Block;
  const uint64_t block = row / kRows16Block, i = row % kRows16Block;
  const uint64_t g = col / kQ8Group, k = col % kQ8Group;
  Rows16Place p;
  p.record = (block * groups + g) * record_bytes;
  p.code_byte = k / 4 * 64 + 4 * i + k % 4;
  p.high = false;
  p.meta = 16 * uint64_t{kQ8Group} + 2 * i;
  return p;
}

}  // namespace

Q8Element Rows16Q8Element(const uint8_t* packed, uint64_t cols, uint64_t row, uint64_t col) {
  const Rows16Place p = PlaceQ8(cols, row, col);
  return Q8Element{static_cast<int8_t>(packed[p.record + p.code_byte]),
                   LoadU16(packed + p.record + p.meta)};
}

std::vector<uint8_t> PackQ8Rows16(const uint8_t* planar, uint64_t rows, uint64_t cols) {
  const uint64_t groups = cols / kQ8Group;
  std::vector<uint8_t> out(rows * cols + rows * groups * 2, 0);
  const uint8_t* scales = planar + rows * cols;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const Rows16Place p = PlaceQ8(cols, r, c);
      out[p.record + p.code_byte] = planar[r * cols + c];
      if (c % kQ8Group == 0) {
        StoreU16(out.data() + p.record + p.meta, LoadU16(scales + (r * groups + c / kQ8Group) * 2));
      }
    }
  }
  return out;
}

std::vector<uint8_t> UnpackQ8Rows16(const uint8_t* packed, uint64_t rows, uint64_t cols) {
  const uint64_t groups = cols / kQ8Group;
  std::vector<uint8_t> out(rows * cols + rows * groups * 2, 0);
  uint8_t* scales = out.data() + rows * cols;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const Q8Element e = Rows16Q8Element(packed, cols, r, c);
      out[r * cols + c] = static_cast<uint8_t>(e.code);
      if (c % kQ8Group == 0) StoreU16(scales + (r * groups + c / kQ8Group) * 2, e.scale_f16);
    }
  }
  return out;
}

Q4Element Rows16Element(const uint8_t* packed, uint64_t cols, uint32_t group, uint64_t row,
                        uint64_t col) {
  const Rows16Place p = Place(cols, group, row, col);
  const uint8_t byte = packed[p.record + p.code_byte];
  return Q4Element{static_cast<uint8_t>(p.high ? byte >> 4 : byte & 0xF),
                   LoadU16(packed + p.record + p.meta),
                   LoadU16(packed + p.record + p.meta + 2 * kRows16Block)};
}

std::vector<uint8_t> PackQ4Rows16(const uint8_t* planar, uint64_t rows, uint64_t cols,
                                  uint32_t group) {
  const uint64_t groups = cols / group;
  std::vector<uint8_t> out(rows * cols / 2 + rows * groups * 4, 0);
  const uint8_t* scales = planar + rows * cols / 2;
  const uint8_t* mins = scales + rows * groups * 2;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const Rows16Place p = Place(cols, group, r, c);
      const uint8_t code = PlanarCode(planar, cols, group, r, c);
      out[p.record + p.code_byte] |= p.high ? static_cast<uint8_t>(code << 4) : code;
      if (c % group == 0) {
        const uint64_t m = (r * groups + c / group) * 2;
        StoreU16(out.data() + p.record + p.meta, LoadU16(scales + m));
        StoreU16(out.data() + p.record + p.meta + 2 * kRows16Block, LoadU16(mins + m));
      }
    }
  }
  return out;
}

std::vector<uint8_t> UnpackQ4Rows16(const uint8_t* packed, uint64_t rows, uint64_t cols,
                                    uint32_t group) {
  const uint64_t groups = cols / group, half = group / 2;
  std::vector<uint8_t> out(rows * cols / 2 + rows * groups * 4, 0);
  uint8_t* scales = out.data() + rows * cols / 2;
  uint8_t* mins = scales + rows * groups * 2;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const Q4Element e = Rows16Element(packed, cols, group, r, c);
      const uint64_t g = c / group, k = c % group;
      uint8_t& byte = out[r * cols / 2 + g * half + k % half];
      byte |= k < half ? e.code : static_cast<uint8_t>(e.code << 4);
      if (k == 0) {
        StoreU16(scales + (r * groups + g) * 2, e.scale_f16);
        StoreU16(mins + (r * groups + g) * 2, e.min_f16);
      }
    }
  }
  return out;
}

}  // namespace pocket
