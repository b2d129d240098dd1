// CacheLineVector's storage starts on a cache line, whatever its size and
// however often it grows.
#include "util/cache_line_vector.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace pocket {
namespace {

bool OnCacheLine(const void* p) { return reinterpret_cast<uintptr_t>(p) % kCacheLineBytes == 0; }

TEST(CacheLineVectorTest, StorageStartsOnACacheLine) {
  // Small sizes are where malloc hands out 16-byte aligned blocks.
  for (size_t n : {1, 3, 4, 5, 17, 100, 896, 4096, 100000}) {
    CacheLineVector<float> v(n, 1.5f);
    EXPECT_TRUE(OnCacheLine(v.data())) << n;
    EXPECT_EQ(v.size(), n);
    EXPECT_EQ(v[n - 1], 1.5f);
  }
}

TEST(CacheLineVectorTest, GrowingKeepsTheAlignmentAndTheValues) {
  CacheLineVector<int32_t> v;
  for (int32_t i = 0; i < 1000; ++i) {
    v.push_back(i);
    ASSERT_TRUE(OnCacheLine(v.data())) << i;
  }
  for (int32_t i = 0; i < 1000; ++i) ASSERT_EQ(v[i], i);
}

}  // namespace
}  // namespace pocket
