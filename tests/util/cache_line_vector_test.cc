// CacheLineBuffer's storage starts on a cache line, whatever its size and
// however often it is reset, and an allocation that cannot be had is
// reported, not thrown.
#include "util/cache_line_vector.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace pocket {
namespace {

bool OnCacheLine(const void* p) { return reinterpret_cast<uintptr_t>(p) % kCacheLineBytes == 0; }

TEST(CacheLineBufferTest, StorageStartsOnACacheLineAndIsZeroed) {
  CacheLineBuffer<float> v;
  // Small sizes are where malloc hands out 16-byte aligned blocks.
  for (size_t n : {1, 3, 4, 5, 17, 100, 896, 4096, 100000}) {
    ASSERT_TRUE(v.Reset(n));
    EXPECT_TRUE(OnCacheLine(v.data())) << n;
    EXPECT_EQ(v.size(), n);
    EXPECT_EQ(v[n - 1], 0.0f);
    v[n - 1] = 1.5f;
    EXPECT_EQ(v[n - 1], 1.5f);
  }
}

TEST(CacheLineBufferTest, AnImpossibleSizeIsReportedAndLeavesItEmpty) {
  CacheLineBuffer<int32_t> v;
  ASSERT_TRUE(v.Reset(16));
  EXPECT_FALSE(v.Reset(SIZE_MAX / 2));  // overflows size_t in bytes
  EXPECT_EQ(v.size(), 0u);
  EXPECT_EQ(v.data(), nullptr);
}

}  // namespace
}  // namespace pocket
