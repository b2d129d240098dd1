// RmsNorm and HeadRmsNorm against the scalar reference on every target.
#include <cmath>
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

// The sum of squares is summed in another order than the reference: relative
// error ~1e-7 * sqrt(d), which moves 1/rms by half of that.
void ExpectClose(const std::vector<float>& out, const std::vector<float>& expected, size_t d) {
  const float rel = 1e-6f * std::sqrt(static_cast<float>(d));
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out[i], expected[i], rel * std::fabs(expected[i]) + 1e-7f) << "at " << i;
  }
}

TEST(RmsNormTest, MatchesReferenceInPlaceAndOutOfPlace) {
  std::mt19937 rng(11);
  for (size_t d : {1, 7, 64, 896, 1001}) {
    for (size_t n : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << "d=" << d << " n=" << n);
      const std::vector<float> x = RandomFloats(n * d, rng, -3.0f, 3.0f);
      const std::vector<float> w = RandomFloats(d, rng, 0.5f, 1.5f);
      std::vector<float> expected(n * d);
      reference::RmsNorm(x.data(), w.data(), n, d, 1e-6f, expected.data());
      ForEachTarget([&] {
        std::vector<float> out(n * d, NAN);
        RmsNorm(x.data(), w.data(), n, d, 1e-6f, out.data());
        ExpectClose(out, expected, d);
        std::vector<float> inplace = x;
        RmsNorm(inplace.data(), w.data(), n, d, 1e-6f, inplace.data());
        ExpectClose(inplace, expected, d);
      });
    }
  }
}

TEST(HeadRmsNormTest, NormalizesEachHead) {
  std::mt19937 rng(12);
  for (size_t head_dim : {8, 64, 100}) {
    const size_t n = 3, heads = 5;
    SCOPED_TRACE(::testing::Message() << "head_dim=" << head_dim);
    const std::vector<float> x = RandomFloats(n * heads * head_dim, rng, -2.0f, 2.0f);
    const std::vector<float> w = RandomFloats(head_dim, rng, 0.5f, 1.5f);
    std::vector<float> expected = x;
    reference::HeadRmsNorm(expected.data(), w.data(), n, heads, head_dim, 1e-6f);
    ForEachTarget([&] {
      std::vector<float> out = x;
      HeadRmsNorm(out.data(), w.data(), n, heads, head_dim, 1e-6f);
      ExpectClose(out, expected, head_dim);
    });
  }
}

}  // namespace
}  // namespace pocket::cpu
