// Swiglu and Add against the scalar reference on every target.
#include <cmath>
#include <cstring>
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

const size_t kCounts[] = {0, 1, 7, 16, 1000, 1003};

TEST(AddTest, IsExactIncludingAliasedOutput) {
  std::mt19937 rng(21);
  for (size_t count : kCounts) {
    const std::vector<float> a = RandomFloats(count, rng), b = RandomFloats(count, rng);
    std::vector<float> expected(count);
    reference::Add(a.data(), b.data(), count, expected.data());
    ForEachTarget([&] {
      std::vector<float> out = a;
      Add(out.data(), b.data(), count, out.data());
      EXPECT_EQ(out, expected) << "count=" << count;
    });
  }
}

TEST(SwigluTest, MatchesExpfReference) {
  std::mt19937 rng(22);
  for (size_t count : kCounts) {
    // Wide range: large |g| exercises both tails of silu.
    std::vector<float> g = RandomFloats(count, rng, -20.0f, 20.0f);
    if (count > 2) g[1] = -100.0f, g[2] = 100.0f;
    const std::vector<float> u = RandomFloats(count, rng, -2.0f, 2.0f);
    std::vector<float> expected(count);
    reference::Swiglu(g.data(), u.data(), count, expected.data());
    ForEachTarget([&] {
      std::vector<float> out = g;
      Swiglu(out.data(), u.data(), count, out.data());
      for (size_t i = 0; i < count; ++i) {
        ASSERT_NEAR(out[i], expected[i], 4e-7f * std::fabs(expected[i]) + 1e-30f)
            << "count=" << count << " g=" << g[i];
      }
    });
  }
}

// An element's bits do not depend on its place in the array: the rows of
// a step over several tokens (172 wide, as stories260K's FFN) give each
// row what the row alone gives.
TEST(SwigluTest, EachRowGetsItsOwnBitsInAFlattenedArray) {
  std::mt19937 rng(23);
  const size_t width = 172, rows = 5;
  const std::vector<float> g = RandomFloats(width * rows, rng, -20.0f, 20.0f);
  const std::vector<float> u = RandomFloats(width * rows, rng, -2.0f, 2.0f);
  ForEachTarget([&] {
    std::vector<float> all(width * rows), one(width);
    Swiglu(g.data(), u.data(), width * rows, all.data());
    for (size_t r = 0; r < rows; ++r) {
      Swiglu(g.data() + r * width, u.data() + r * width, width, one.data());
      EXPECT_EQ(0, std::memcmp(one.data(), all.data() + r * width, width * sizeof(float)))
          << "row " << r;
    }
  });
}

}  // namespace
}  // namespace pocket::cpu
