// The roofline probes of `pocket bench --roofline` return plausible rates,
// restore the caller's QuantMath, and survive a buffer too small to split.
#include "backends/cpu/roofline.h"

#include <cmath>

#include <gtest/gtest.h>

#include "backends/cpu/ops.h"
#include "backends/cpu/thread_pool.h"

namespace pocket::cpu {
namespace {

TEST(RooflineTest, ReadBandwidthIsPositive) {
  ThreadPool pool(ThreadPoolOptions{2, false});
  const double single = MeasureReadBandwidth(nullptr, 4 << 20, 2);
  const double pooled = MeasureReadBandwidth(&pool, 4 << 20, 2);
  EXPECT_GT(single, 1e8);  // > 0.1 GB/s: far below any real machine
  EXPECT_GT(pooled, 1e8);
  EXPECT_TRUE(std::isfinite(single) && std::isfinite(pooled));
  EXPECT_EQ(MeasureReadBandwidth(nullptr, 100, 1), 0.0);  // rounds down to nothing
}

TEST(RooflineTest, Int8PeakIsPositive) {
  ThreadPool pool(ThreadPoolOptions{2, false});
  EXPECT_GT(MeasureInt8Peak(&pool, 1, 1), 1e7);
  EXPECT_GT(MeasureInt8Peak(nullptr, 8, 1), 1e7);
}

}  // namespace
}  // namespace pocket::cpu
