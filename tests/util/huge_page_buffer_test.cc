#include "util/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace pocket {
namespace {

TEST(HugePageBuffer, RoundsUpToWholeAlignedZeroedHugePages) {
  const size_t bytes = 3 * HugePageBuffer::kPageBytes + 17;
  StatusOr<std::unique_ptr<HugePageBuffer>> b = HugePageBuffer::Allocate(bytes);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  uint8_t* data = (*b)->data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % HugePageBuffer::kPageBytes, 0u);
  EXPECT_EQ((*b)->size(), 4 * HugePageBuffer::kPageBytes);
  // Zeroed and writable to the last byte of the rounded size.
  for (size_t i = 0; i < (*b)->size(); i += 4096) ASSERT_EQ(data[i], 0) << "byte " << i;
  EXPECT_EQ(data[(*b)->size() - 1], 0);
  data[0] = 1;
  data[(*b)->size() - 1] = 2;
  EXPECT_EQ(data[0] + data[(*b)->size() - 1], 3);
}

TEST(HugePageBuffer, RejectsZeroAndImpossibleSizes) {
  Status zero = HugePageBuffer::Allocate(0).status();
  EXPECT_EQ(zero.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(zero.message(), "a huge-page buffer needs at least 1 byte");
  Status huge = HugePageBuffer::Allocate(SIZE_MAX - 1).status();
  EXPECT_EQ(huge.code(), StatusCode::kBudgetExceeded);
  // Within the arithmetic but beyond any address space: mmap refuses it.
  Status vast = HugePageBuffer::Allocate(size_t{1} << 62).status();
  EXPECT_EQ(vast.code(), StatusCode::kBudgetExceeded);
  EXPECT_NE(vast.message().find("cannot map"), std::string::npos) << vast.message();
}

}  // namespace
}  // namespace pocket
