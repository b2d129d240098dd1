// Exp2Coarse (kernels/cpu/attention-inl.h), the bf16 attention's softmax
// exponential, against std::exp2 on every target. The attention tests
// cannot see its accuracy: their bf16 tolerance allows for weights rounded
// to 8 bits, and normalizing the weights cancels most of a scale error.
#include <cmath>
#include <cstddef>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/backends/exp2_coarse_test.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/attention-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

// out[i] = Exp2Coarse(t[i]); n is a multiple of 16.
void Exp2CoarseArray(const float* t, size_t n, float* out) {
  const hn::CappedTag<float, 16> d;
  for (size_t i = 0; i < n; i += hn::Lanes(d)) {
    hn::StoreU(Exp2Coarse(d, hn::LoadU(d, t + i)), d, out + i);
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>

#include "ops_test_util.h"

namespace pocket::cpu {
namespace {

HWY_EXPORT(Exp2CoarseArray);

TEST(Exp2CoarseTest, WithinOneIn10000OfExp2OverTheSoftmaxRange) {
  // The softmax's arguments, in log2 units: from the clamp at -125 to the
  // slack's limit of 8 nats (11.5), through every fraction of a unit.
  std::vector<float> t;
  for (float x = -125.0f; x <= 12.0f; x += 1.0f / 64) t.push_back(x);
  for (float x : {-0.999f, -1e-3f, 0.0f, 1e-3f, 0.5f, 0.999f}) t.push_back(x);
  while (t.size() % 16 != 0) t.push_back(0.25f);
  testing::ForEachTarget([&] {
    std::vector<float> out(t.size());
    HWY_DYNAMIC_DISPATCH(Exp2CoarseArray)(t.data(), t.size(), out.data());
    for (size_t i = 0; i < t.size(); ++i) {
      const double want = std::exp2(static_cast<double>(t[i]));
      ASSERT_NEAR(out[i] / want, 1.0, 1e-4) << "t = " << t[i];
    }
  });
}

}  // namespace
}  // namespace pocket::cpu
#endif  // HWY_ONCE
