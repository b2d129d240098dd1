// Quantization against hand-computed bytes and the documented error bounds.
#include "quant/quantize.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "util/fp16.h"

namespace pocket {
namespace {

uint16_t ReadU16(const std::vector<uint8_t>& b, size_t off) {
  return static_cast<uint16_t>(b[off] | (b[off + 1] << 8));
}

// 0..63 as one q4 group of 64: min 0, scale 63/15 = 4.2 -> f16 0x4433
// (4.19921875); code j = round(j / 4.19921875); byte j = code j | code j+32 << 4.
TEST(QuantizeQ4, RampOfSixtyFourHasHandComputedBytes) {
  std::vector<float> w(64);
  for (int i = 0; i < 64; ++i) w[i] = static_cast<float>(i);
  auto q = QuantizeTensor(w.data(), 1, 64, DType::kQ4, 64);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const std::vector<uint8_t> expected_codes = {0x80, 0x80, 0x80, 0x81, 0x91, 0x91, 0x91, 0x92,
                                               0xa2, 0xa2, 0xa2, 0xa3, 0xa3, 0xb3, 0xb3, 0xb4,
                                               0xb4, 0xc4, 0xc4, 0xc5, 0xc5, 0xd5, 0xd5, 0xd5,
                                               0xd6, 0xe6, 0xe6, 0xe6, 0xe7, 0xf7, 0xf7, 0xf7};
  ASSERT_EQ(q->size(), 32u + 2 + 2);
  EXPECT_EQ(std::vector<uint8_t>(q->begin(), q->begin() + 32), expected_codes);
  EXPECT_EQ(ReadU16(*q, 32), 0x4433);  // scale
  EXPECT_EQ(ReadU16(*q, 34), 0x0000);  // min
  std::vector<float> back(64);
  DequantizeRow(q->data(), DType::kQ4, TensorLayout::kRowMajor, 1, 64, 64, 0, back.data());
  EXPECT_FLOAT_EQ(back[63], 15 * 4.19921875f);
  EXPECT_FLOAT_EQ(back[3], 4.19921875f);
}

// (i - 16) / 2 for i in 0..31: absmax 8, scale 8/127 -> f16 0x2c08
// (0.06298828125); codes round(w / scale), -8 -> -127.0078 clamps to -127.
TEST(QuantizeQ8, HalfStepsHaveHandComputedBytes) {
  std::vector<float> w(32);
  for (int i = 0; i < 32; ++i) w[i] = (i - 16) * 0.5f;
  auto q = QuantizeTensor(w.data(), 1, 32, DType::kQ8, 32);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const std::vector<int> expected = {-127, -119, -111, -103, -95, -87, -79, -71, -64, -56, -48,
                                     -40,  -32,  -24,  -16,  -8,  0,   8,   16,  24,  32,  40,
                                     48,   56,   64,   71,   79,  87,  95,  103, 111, 119};
  ASSERT_EQ(q->size(), 34u);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(static_cast<int8_t>((*q)[i]), expected[i]) << i;
  EXPECT_EQ(ReadU16(*q, 32), 0x2c08);
}

TEST(QuantizeQ4, PlanarLayoutOverTwoRowsAndGroups) {
  // Row r, group g is the constant 10*r + g, so each group has scale 0.
  const uint64_t rows = 2, cols = 64;
  std::vector<float> w(rows * cols);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) w[r * cols + c] = 10.0f * r + c / 32;
  auto q = QuantizeTensor(w.data(), rows, cols, DType::kQ4, 32);
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 64u + 8 + 8);
  for (int i = 0; i < 64; ++i) EXPECT_EQ((*q)[i], 0) << i;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ReadU16(*q, 64 + 2 * i), 0) << "scale " << i;
  // mins: 0, 1, 10, 11 as f16.
  EXPECT_EQ(ReadU16(*q, 72), 0x0000);
  EXPECT_EQ(ReadU16(*q, 74), 0x3c00);
  EXPECT_EQ(ReadU16(*q, 76), 0x4900);
  EXPECT_EQ(ReadU16(*q, 78), 0x4980);
  std::vector<float> back(cols);
  DequantizeRow(q->data(), DType::kQ4, TensorLayout::kRowMajor, rows, cols, 32, 1, back.data());
  EXPECT_EQ(back[0], 10.0f);
  EXPECT_EQ(back[63], 11.0f);
}

TEST(QuantizeQ8, ZeroGroupHasZeroScaleAndCodes) {
  std::vector<float> w(64, 0.0f);
  w[40] = -2.0f;  // second group only
  auto q = QuantizeTensor(w.data(), 1, 64, DType::kQ8, 32);
  ASSERT_TRUE(q.ok());
  for (int i = 0; i < 32; ++i) EXPECT_EQ((*q)[i], 0);
  EXPECT_EQ(static_cast<int8_t>((*q)[40]), -127);
  EXPECT_EQ(ReadU16(*q, 64), 0);
  EXPECT_EQ(F16ToF32(ReadU16(*q, 66)), F16ToF32(F32ToF16(2.0f / 127)));
}

TEST(Quantize, F32RoundTripIsExact) {
  std::vector<float> w = {1.0f, -3.5f, 1e-30f, 123456.789f, 0.1f, -0.0f};
  auto q = QuantizeTensor(w.data(), 2, 3, DType::kF32, 0);
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 24u);
  std::vector<float> back(3);
  for (uint64_t r = 0; r < 2; ++r) {
    DequantizeRow(q->data(), DType::kF32, TensorLayout::kRowMajor, 2, 3, 0, r, back.data());
    EXPECT_EQ(std::memcmp(back.data(), &w[r * 3], 12), 0);
  }
}

TEST(Quantize, F16AndBf16BytesUseRoundToNearestEven) {
  // 1 + 2^-11 is halfway between two halves: even rounds down to 0x3c00.
  std::vector<float> w = {1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048};
  auto h = QuantizeTensor(w.data(), 1, 2, DType::kF16, 0);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(ReadU16(*h, 0), 0x3c00);
  EXPECT_EQ(ReadU16(*h, 2), 0x3c02);
  std::vector<float> b = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256};
  auto bf = QuantizeTensor(b.data(), 1, 2, DType::kBF16, 0);
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ(ReadU16(*bf, 0), 0x3f80);
  EXPECT_EQ(ReadU16(*bf, 2), 0x3f82);
}

TEST(Quantize, RejectsGroupsThatDoNotDivideColumns) {
  std::vector<float> w(96, 1.0f);
  auto q = QuantizeTensor(w.data(), 1, 96, DType::kQ4, 64);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("96"), std::string::npos) << q.status().message();
  auto q8 = QuantizeTensor(w.data(), 2, 48, DType::kQ8, 32);
  EXPECT_FALSE(q8.ok());
  auto bad_group = QuantizeTensor(w.data(), 1, 96, DType::kQ4, 48);
  EXPECT_FALSE(bad_group.ok());
}

TEST(Quantize, RejectsNonFiniteValues) {
  std::vector<float> w(32, 1.0f);
  w[5] = std::nanf("");
  auto q = QuantizeTensor(w.data(), 1, 32, DType::kQ8, 32);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("column 5"), std::string::npos) << q.status().message();
}

// Every group of random data dequantizes within QuantizationBound.
class BoundTest : public ::testing::TestWithParam<std::tuple<DType, uint32_t>> {};

TEST_P(BoundTest, EveryGroupWithinBound) {
  const auto [dtype, group] = GetParam();
  const uint64_t rows = 7, cols = 256;
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(rows * cols);
  for (uint64_t i = 0; i < w.size(); ++i) {
    // Vary the magnitude per row, include an offset row for q4's min.
    const uint64_t r = i / cols;
    w[i] = normal(rng) * std::pow(10.0f, static_cast<float>(r) - 4.0f) + (r == 6 ? 5.0f : 0.0f);
  }
  auto q = QuantizeTensor(w.data(), rows, cols, dtype, group);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const uint32_t g = group == 0 ? 32 : group;
  std::vector<float> back(cols);
  for (uint64_t r = 0; r < rows; ++r) {
    DequantizeRow(q->data(), dtype, TensorLayout::kRowMajor, rows, cols, group, r, back.data());
    for (uint64_t c0 = 0; c0 < cols; c0 += g) {
      const float* orig = &w[r * cols + c0];
      const float bound = QuantizationBound(dtype, orig, g);
      for (uint32_t j = 0; j < g; ++j) {
        EXPECT_LE(std::fabs(back[c0 + j] - orig[j]), bound)
            << DTypeName(dtype) << " row " << r << " col " << c0 + j;
      }
      // The bound is tight enough to be meaningful: below a tenth of the range.
      if (dtype == DType::kQ4 || dtype == DType::kQ8) {
        float lo = orig[0], hi = orig[0];
        for (uint32_t j = 0; j < g; ++j) lo = std::min(lo, orig[j]), hi = std::max(hi, orig[j]);
        EXPECT_LT(bound, (hi - lo) / 10);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, BoundTest,
    ::testing::Values(std::make_tuple(DType::kF16, 0u), std::make_tuple(DType::kBF16, 0u),
                      std::make_tuple(DType::kQ8, 32u), std::make_tuple(DType::kQ4, 32u),
                      std::make_tuple(DType::kQ4, 64u), std::make_tuple(DType::kQ4, 128u)));

// A q8 tensor in the rows16 layout dequantizes exactly as its planar bytes:
// the rows16 bytes are placed here from dtype.h's description (record
// b * (cols/32) + g of 544 bytes: 8 chunks of 64 codes, byte 4 i + j of
// chunk c being weight (16 b + i, 32 g + 4 c + j), then 16 f16 scales).
TEST(DequantizeRow, Q8Rows16MatchesPlanar) {
  const uint64_t rows = 48, cols = 160, groups = cols / 32;
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(rows * cols);
  for (float& v : w) v = normal(rng);
  auto q = QuantizeTensor(w.data(), rows, cols, DType::kQ8, 32);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const std::vector<uint8_t>& planar = *q;
  std::vector<uint8_t> rows16(planar.size());
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t g = 0; g < groups; ++g) {
      uint8_t* rec = rows16.data() + ((r / 16) * groups + g) * 544;
      for (uint64_t k = 0; k < 32; ++k) {
        rec[64 * (k / 4) + 4 * (r % 16) + k % 4] = planar[r * cols + 32 * g + k];
      }
      std::memcpy(rec + 512 + 2 * (r % 16), &planar[rows * cols + (r * groups + g) * 2], 2);
    }
  }
  std::vector<float> want(cols), got(cols);
  for (uint64_t r = 0; r < rows; ++r) {
    DequantizeRow(planar.data(), DType::kQ8, TensorLayout::kRowMajor, rows, cols, 32, r,
                  want.data());
    DequantizeRow(rows16.data(), DType::kQ8, TensorLayout::kRows16, rows, cols, 32, r, got.data());
    ASSERT_EQ(got, want) << "row " << r;
    // And the planar values are scale * code (no q4 min sneaks in).
    for (uint64_t c = 0; c < cols; c += 13) {
      const float scale = F16ToF32(ReadU16(planar, rows * cols + (r * groups + c / 32) * 2));
      ASSERT_EQ(want[c], scale * static_cast<float>(static_cast<int8_t>(planar[r * cols + c])));
    }
  }
}

TEST(QuantizationBound, MatchesTheDerivedFormula) {
  // q4 over 0..63: s = 4.2, s_r = 4.19921875, min exact:
  // bound = s_r/2 + 15 * |4.2 - 4.19921875| (+ float slack).
  std::vector<float> w(64);
  for (int i = 0; i < 64; ++i) w[i] = static_cast<float>(i);
  const float expected = 4.19921875f / 2 + 15 * (4.2f - 4.19921875f);
  EXPECT_NEAR(QuantizationBound(DType::kQ4, w.data(), 64), expected, 1e-3f);
  EXPECT_EQ(QuantizationBound(DType::kF32, w.data(), 64), 0.0f);
}

}  // namespace
}  // namespace pocket
