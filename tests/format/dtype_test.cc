#include "format/dtype.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "format/pocket_file.h"

namespace pocket {
namespace {

TEST(DType, NamesRoundTrip) {
  const char* names[] = {"f32", "f16", "bf16", "q8", "q4"};
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_STREQ(DTypeName(static_cast<DType>(i)), names[i]);
    DType t;
    ASSERT_TRUE(ParseDType(names[i], &t));
    EXPECT_EQ(t, static_cast<DType>(i));
  }
  DType t = DType::kF16;
  EXPECT_FALSE(ParseDType("q5", &t));
  EXPECT_FALSE(ParseDType("", &t));
  EXPECT_FALSE(ParseDType("F32", &t));
  EXPECT_EQ(t, DType::kF16);
}

TEST(DType, QuantizedAndGroups) {
  EXPECT_FALSE(IsQuantized(DType::kF32));
  EXPECT_FALSE(IsQuantized(DType::kBF16));
  EXPECT_TRUE(IsQuantized(DType::kQ8));
  EXPECT_TRUE(IsQuantized(DType::kQ4));
  EXPECT_TRUE(IsValidGroup(DType::kF16, 0));
  EXPECT_FALSE(IsValidGroup(DType::kF16, 32));
  EXPECT_TRUE(IsValidGroup(DType::kQ8, 32));
  EXPECT_FALSE(IsValidGroup(DType::kQ8, 64));
  EXPECT_FALSE(IsValidGroup(DType::kQ8, 0));
  for (uint32_t g : {32u, 64u, 128u}) EXPECT_TRUE(IsValidGroup(DType::kQ4, g));
  for (uint32_t g : {0u, 16u, 48u, 256u}) EXPECT_FALSE(IsValidGroup(DType::kQ4, g));
}

TEST(DType, LayoutNamesAndWhatRows16Holds) {
  TensorLayout l = TensorLayout::kRowMajor;
  ASSERT_TRUE(ParseLayout("rows16", &l));
  EXPECT_EQ(l, TensorLayout::kRows16);
  EXPECT_STREQ(LayoutName(TensorLayout::kRowMajor), "row_major");
  EXPECT_FALSE(ParseLayout("rows8", &l));
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_TRUE(IsValidLayout(TensorLayout::kRowMajor, static_cast<DType>(i), 7));
  }
  // rows16: q4 and q8 only, in whole 16-row blocks.
  for (DType t : {DType::kQ4, DType::kQ8}) {
    for (uint64_t rows : {16u, 32u, 4096u})
      EXPECT_TRUE(IsValidLayout(TensorLayout::kRows16, t, rows));
    for (uint64_t rows : {1u, 8u, 24u, 4095u}) {
      EXPECT_FALSE(IsValidLayout(TensorLayout::kRows16, t, rows)) << DTypeName(t) << " " << rows;
    }
  }
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    EXPECT_FALSE(IsValidLayout(TensorLayout::kRows16, t, 16)) << DTypeName(t);
  }
  EXPECT_FALSE(IsValidLayout(static_cast<TensorLayout>(kNumLayouts), DType::kQ4, 16));
}

TEST(DType, ByteSizesMatchTheDocumentedLayouts) {
  uint64_t n = 0;
  ASSERT_TRUE(TensorByteSize(DType::kF32, 3, 5, 0, &n));
  EXPECT_EQ(n, 60u);
  ASSERT_TRUE(TensorByteSize(DType::kF16, 1, 7, 0, &n));
  EXPECT_EQ(n, 14u);
  ASSERT_TRUE(TensorByteSize(DType::kBF16, 4, 4, 0, &n));
  EXPECT_EQ(n, 32u);
  // q8 [896, 896]: 802816 codes + 896*28 scales * 2 bytes = 852992 (8.5 bits).
  ASSERT_TRUE(TensorByteSize(DType::kQ8, 896, 896, 32, &n));
  EXPECT_EQ(n, 852992u);
  // q4 g64 [2560, 896]: 1146880 code bytes + 2560*14 groups * 4 bytes.
  ASSERT_TRUE(TensorByteSize(DType::kQ4, 2560, 896, 64, &n));
  EXPECT_EQ(n, 1290240u);
  ASSERT_TRUE(TensorByteSize(DType::kQ4, 1, 128, 128, &n));
  EXPECT_EQ(n, 68u);
  ASSERT_TRUE(TensorByteSize(DType::kQ4, 2, 64, 32, &n));
  EXPECT_EQ(n, 64u + 16u);
}

TEST(DType, ByteSizeRejectsIndivisibleAndOverflow) {
  uint64_t n = 0;
  EXPECT_FALSE(TensorByteSize(DType::kQ8, 1, 48, 32, &n));
  EXPECT_FALSE(TensorByteSize(DType::kQ4, 1, 96, 64, &n));
  EXPECT_FALSE(TensorByteSize(DType::kQ4, 1, 64, 0, &n));
  constexpr uint64_t kBig = std::numeric_limits<uint64_t>::max() / 2;
  EXPECT_FALSE(TensorByteSize(DType::kF32, kBig, 1, 0, &n));
  EXPECT_FALSE(TensorByteSize(DType::kF16, 1ull << 32, 1ull << 32, 0, &n));
  EXPECT_FALSE(TensorByteSize(DType::kQ8, 1ull << 40, 1ull << 30, 32, &n));
}

TEST(DType, SectionKindNames) {
  EXPECT_STREQ(SectionKindName(SectionKind::kConfig), "config");
  EXPECT_STREQ(SectionKindName(SectionKind::kTokenizer), "tokenizer");
  EXPECT_STREQ(SectionKindName(SectionKind::kGraph), "graph");
  EXPECT_STREQ(SectionKindName(SectionKind::kTensors), "tensors");
  EXPECT_STREQ(SectionKindName(SectionKind::kData), "data");
  EXPECT_STREQ(SectionKindName(static_cast<SectionKind>(9)), "unknown");
}

}  // namespace
}  // namespace pocket
