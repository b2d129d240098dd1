// The rows16 q4 and q8 layouts (format/dtype.h): bytes placed as the
// picture says, and packing is lossless both ways.
#include "quant/rows16.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pocket {
namespace {

// A planar q4 tensor (dtype.h) whose code at (r, k) is (r + 3k) % 16 and
// whose group (r, g) has scale bits 0x1000 + 16 r + g and min bits
// 0x8000 + 16 r + g.
std::vector<uint8_t> PatternPlanar(uint64_t rows, uint64_t cols, uint32_t group) {
  const uint64_t groups = cols / group, half = group / 2;
  std::vector<uint8_t> planar(rows * cols / 2 + rows * groups * 4, 0);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t k = 0; k < cols; ++k) {
      const uint8_t code = static_cast<uint8_t>((r + 3 * k) % 16);
      const uint64_t g = k / group, j = k % group;
      planar[r * cols / 2 + g * half + j % half] |= j < half ? code : code << 4;
    }
    for (uint64_t g = 0; g < groups; ++g) {
      const uint16_t scale = static_cast<uint16_t>(0x1000 + 16 * r + g);
      const uint16_t min = static_cast<uint16_t>(0x8000 + 16 * r + g);
      std::memcpy(&planar[rows * cols / 2 + (r * groups + g) * 2], &scale, 2);
      std::memcpy(&planar[rows * cols / 2 + rows * groups * 2 + (r * groups + g) * 2], &min, 2);
    }
  }
  return planar;
}

TEST(Rows16Test, BytesAreWhereTheLayoutSays) {
  const uint64_t rows = 32, cols = 128;
  const uint32_t group = 64;
  const std::vector<uint8_t> packed =
      PackQ4Rows16(PatternPlanar(rows, cols, group).data(), rows, cols, group);
  ASSERT_EQ(packed.size(), rows * cols / 2 + rows * (cols / group) * 4);
  const uint64_t record = 8 * group + 64;  // 576 bytes
  for (uint64_t b = 0; b < 2; ++b) {
    for (uint64_t g = 0; g < 2; ++g) {
      const uint8_t* rec = packed.data() + (b * 2 + g) * record;
      for (uint64_t i = 0; i < 16; ++i) {
        const uint64_t r = 16 * b + i;
        for (uint64_t c = 0; c < group / 8; ++c) {
          for (uint64_t j = 0; j < 4; ++j) {
            const uint64_t k0 = g * group + 8 * c;
            const uint8_t byte = rec[64 * c + 4 * i + j];
            ASSERT_EQ(byte & 0xF, (r + 3 * (k0 + j)) % 16) << r << " " << k0 + j;
            ASSERT_EQ(byte >> 4, (r + 3 * (k0 + 4 + j)) % 16) << r << " " << k0 + 4 + j;
          }
        }
        uint16_t scale, min;
        std::memcpy(&scale, rec + 8 * group + 2 * i, 2);
        std::memcpy(&min, rec + 8 * group + 32 + 2 * i, 2);
        EXPECT_EQ(scale, 0x1000 + 16 * r + g);
        EXPECT_EQ(min, 0x8000 + 16 * r + g);
        const Q4Element e = Rows16Element(packed.data(), cols, group, r, g * group + 5);
        EXPECT_EQ(e.code, (r + 3 * (g * group + 5)) % 16);
        EXPECT_EQ(e.scale_f16, scale);
        EXPECT_EQ(e.min_f16, min);
      }
    }
  }
}

TEST(Rows16Test, PackThenUnpackGivesThePlanarBytesBack) {
  std::mt19937 rng(3);
  for (uint32_t group : {32u, 64u, 128u}) {
    for (uint64_t rows : {16u, 48u}) {
      const uint64_t cols = 3 * group;
      std::vector<uint8_t> planar(rows * cols / 2 + rows * (cols / group) * 4);
      for (uint8_t& b : planar) b = static_cast<uint8_t>(rng());
      const std::vector<uint8_t> packed = PackQ4Rows16(planar.data(), rows, cols, group);
      EXPECT_NE(packed, planar);
      EXPECT_EQ(UnpackQ4Rows16(packed.data(), rows, cols, group), planar)
          << "group " << group << " rows " << rows;
    }
  }
}

// Random planar q8 bytes (dtype.h): int8 codes [rows][cols], then f16
// scales [rows][cols/32].
std::vector<uint8_t> RandomPlanarQ8(uint64_t rows, uint64_t cols, std::mt19937& rng) {
  std::vector<uint8_t> planar(rows * cols + rows * (cols / 32) * 2);
  for (uint8_t& b : planar) b = static_cast<uint8_t>(rng());
  return planar;
}

// The rows16 bytes of a planar q8 tensor, placed one by one where the
// layout's description puts them: record b * (cols/32) + g of 544 bytes
// holds in chunk c (64 bytes), byte 4 i + j, the code of weight
// (16 b + i, 32 g + 4 c + j), then the 16 scales of rows 16 b .. 16 b + 15.
std::vector<uint8_t> Q8Rows16ByThePicture(const std::vector<uint8_t>& planar, uint64_t rows,
                                          uint64_t cols) {
  const uint64_t groups = cols / 32;
  std::vector<uint8_t> out(planar.size(), 0xEE);
  for (uint64_t b = 0; b < rows / 16; ++b) {
    for (uint64_t g = 0; g < groups; ++g) {
      uint8_t* rec = out.data() + (b * groups + g) * 544;
      for (uint64_t i = 0; i < 16; ++i) {
        const uint64_t r = 16 * b + i;
        for (uint64_t c = 0; c < 8; ++c) {
          for (uint64_t j = 0; j < 4; ++j)
            rec[64 * c + 4 * i + j] = planar[r * cols + 32 * g + 4 * c + j];
        }
        const uint8_t* scale = planar.data() + rows * cols + (r * groups + g) * 2;
        rec[512 + 2 * i] = scale[0];
        rec[512 + 2 * i + 1] = scale[1];
      }
    }
  }
  return out;
}

TEST(Rows16Test, Q8BytesAreWhereTheLayoutSays) {
  std::mt19937 rng(5);
  for (uint64_t rows : {16u, 48u}) {
    for (uint64_t cols : {32u, 96u, 256u}) {
      SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols));
      const std::vector<uint8_t> planar = RandomPlanarQ8(rows, cols, rng);
      const std::vector<uint8_t> packed = PackQ8Rows16(planar.data(), rows, cols);
      // Same byte count as planar, and every byte where the picture says.
      ASSERT_EQ(packed.size(), rows * cols + rows * (cols / 32) * 2);
      EXPECT_EQ(packed, Q8Rows16ByThePicture(planar, rows, cols));
    }
  }
}

TEST(Rows16Test, Q8ElementIsThePlanarCodeAndScale) {
  std::mt19937 rng(9);
  const uint64_t rows = 48, cols = 160, groups = cols / 32;
  const std::vector<uint8_t> planar = RandomPlanarQ8(rows, cols, rng);
  const std::vector<uint8_t> packed = Q8Rows16ByThePicture(planar, rows, cols);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const Q8Element e = Rows16Q8Element(packed.data(), cols, r, c);
      uint16_t scale;
      std::memcpy(&scale, planar.data() + rows * cols + (r * groups + c / 32) * 2, 2);
      ASSERT_EQ(e.code, static_cast<int8_t>(planar[r * cols + c])) << r << " " << c;
      ASSERT_EQ(e.scale_f16, scale) << r << " " << c;
    }
  }
}

TEST(Rows16Test, Q8PackThenUnpackGivesThePlanarBytesBack) {
  std::mt19937 rng(4);
  for (uint64_t rows : {16u, 32u, 80u}) {
    for (uint64_t cols : {32u, 64u, 896u}) {
      const std::vector<uint8_t> planar = RandomPlanarQ8(rows, cols, rng);
      const std::vector<uint8_t> packed = PackQ8Rows16(planar.data(), rows, cols);
      EXPECT_NE(packed, planar);
      EXPECT_EQ(UnpackQ8Rows16(packed.data(), rows, cols), planar)
          << "rows " << rows << " cols " << cols;
    }
  }
}

}  // namespace
}  // namespace pocket
