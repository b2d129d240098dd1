// Argmax against the scalar reference on every target: random values,
// ties, NaN and infinities, every length around the vector widths.
#include <cmath>
#include <limits>
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

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

void ExpectMatchesReference(const std::vector<float>& x, const char* what) {
  const size_t expected = reference::Argmax(x.data(), x.size());
  ForEachTarget(
      [&] { EXPECT_EQ(Argmax(x.data(), x.size()), expected) << what << ", count=" << x.size(); });
}

TEST(ArgmaxTest, MatchesReferenceOnRandomValues) {
  std::mt19937 rng(31);
  for (size_t count = 0; count <= 70; ++count) {
    ExpectMatchesReference(RandomFloats(count, rng), "random");
  }
  ExpectMatchesReference(RandomFloats(65536, rng, -30.0f, 30.0f), "a vocabulary");
}

TEST(ArgmaxTest, TakesTheFirstOfTiedMaxima) {
  std::mt19937 rng(32);
  for (size_t count : {2, 17, 64, 1003}) {
    for (size_t trial = 0; trial < 20; ++trial) {
      std::vector<float> x = RandomFloats(count, rng);
      std::uniform_int_distribution<size_t> at(0, count - 1);
      const size_t a = at(rng), b = at(rng);
      x[a] = x[b] = 2.0f;
      ExpectMatchesReference(x, "tie");
      ASSERT_EQ(reference::Argmax(x.data(), count), std::min(a, b));
    }
  }
}

TEST(ArgmaxTest, SkipsNaNAndHandlesInfinities) {
  std::mt19937 rng(33);
  for (size_t count : {1, 5, 16, 33, 1000}) {
    std::vector<float> x = RandomFloats(count, rng);
    for (size_t i = 0; i < count; i += 3) x[i] = kNaN;
    ExpectMatchesReference(x, "NaN every third");
    x[count - 1] = kInf;
    ExpectMatchesReference(x, "+inf last");
    ASSERT_EQ(reference::Argmax(x.data(), count), count - 1);
    std::vector<float> low(count, -kInf);
    ExpectMatchesReference(low, "all -inf");
    std::vector<float> nan(count, kNaN);
    ExpectMatchesReference(nan, "all NaN");
    ASSERT_EQ(reference::Argmax(nan.data(), count), 0u);
  }
}

}  // namespace
}  // namespace pocket::cpu
