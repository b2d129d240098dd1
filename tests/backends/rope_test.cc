// Rope against the scalar reference on every target, both styles.
#include <cmath>
#include <iterator>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/ops.h"
#include "backends/reference/ops.h"
#include "ops_test_util.h"

namespace pocket::cpu {
namespace {

using testing::ForEachTarget;
using testing::RandomFloats;

TEST(RopeTest, MatchesReferenceBothStylesAtLargePositions) {
  std::mt19937 rng(23);
  const int32_t positions[] = {0, 1, 17, 511, 40959, 1000003};
  const size_t n = std::size(positions);
  for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved}) {
    for (size_t head_dim : {8, 12, 64, 128}) {
      for (float theta : {10000.0f, 1000000.0f}) {
        const size_t heads = 3;
        SCOPED_TRACE(::testing::Message() << "style=" << static_cast<int>(style)
                                          << " head_dim=" << head_dim << " theta=" << theta);
        const std::vector<float> x = RandomFloats(n * heads * head_dim, rng, -2.0f, 2.0f);
        std::vector<float> expected = x;
        reference::Rope(expected.data(), n, heads, head_dim, positions, theta, style);
        ForEachTarget([&] {
          std::vector<float> out = x;
          Rope(out.data(), n, heads, head_dim, positions, theta, style);
          // Same tables and operation order; only the compiler's FMA
          // contraction (per target) can move the last bit of a*c - b*s.
          for (size_t i = 0; i < out.size(); ++i) {
            ASSERT_NEAR(out[i], expected[i], 5e-7f) << "at " << i;
          }
        });
      }
    }
  }
}

TEST(RopeTest, OneTableServesTensorsOfDifferentHeadCountsInSlices) {
  // The executor's use: one table for a run's positions rotates q (many
  // heads) and k (fewer), each in row slices that index the table by row.
  std::mt19937 rng(25);
  const int32_t positions[] = {3, 4, 5, 900, 40000};
  const size_t n = std::size(positions);
  for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved}) {
    for (size_t head_dim : {8, 64, 128}) {
      SCOPED_TRACE(::testing::Message()
                   << "style=" << static_cast<int>(style) << " head_dim=" << head_dim);
      const float theta = 1000000.0f;
      ForEachTarget([&] {
        const size_t row = RopeTableFloats(head_dim);
        std::vector<float> table(n * row);
        RopeTable(positions, n, head_dim, theta, style, table.data());
        for (size_t heads : {7, 1}) {
          const std::vector<float> x = RandomFloats(n * heads * head_dim, rng, -2.0f, 2.0f);
          std::vector<float> expected = x;
          reference::Rope(expected.data(), n, heads, head_dim, positions, theta, style);
          std::vector<float> out = x;
          const size_t split = 2;  // rows [0, 2) and [2, n)
          RopeApply(out.data(), split, heads, head_dim, style, table.data());
          RopeApply(out.data() + split * heads * head_dim, n - split, heads, head_dim, style,
                    table.data() + split * row);
          for (size_t i = 0; i < out.size(); ++i) {
            ASSERT_NEAR(out[i], expected[i], 5e-7f) << "heads " << heads << " at " << i;
          }
        }
      });
    }
  }
}

TEST(RopeTest, RotationPreservesPairNorms) {
  // Guards the reference itself: each rotated pair keeps its length, and
  // position 0 is the identity.
  const size_t head_dim = 16;
  std::mt19937 rng(24);
  const std::vector<float> x = RandomFloats(2 * head_dim, rng);
  std::vector<float> y = x;
  const int32_t positions[] = {0, 12345};
  reference::Rope(y.data(), 2, 1, head_dim, positions, 10000.0f, RopeStyle::kNeox);
  for (size_t i = 0; i < head_dim; ++i) EXPECT_EQ(y[i], x[i]);
  for (size_t i = 0; i < head_dim / 2; ++i) {
    const float* a = x.data() + head_dim;
    const float* b = y.data() + head_dim;
    EXPECT_NEAR(std::hypot(a[i], a[i + 8]), std::hypot(b[i], b[i + 8]), 1e-5f);
  }
}

}  // namespace
}  // namespace pocket::cpu
