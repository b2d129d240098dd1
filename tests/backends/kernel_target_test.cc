// RestrictKernelTargets holds every kernel to an older target and refuses
// names it cannot run.
#include "backends/cpu/kernel_target.h"

#include <cctype>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "backends/cpu/ops.h"

namespace pocket::cpu {
namespace {

// Lifts any restriction when a test ends, so the others see every target.
class KernelTargetTest : public ::testing::Test {
 protected:
  void TearDown() override { hwy::DisableTargets(0); }
};

TEST_F(KernelTargetTest, EachTargetCanBeChosenByNameInAnyCase) {
  const std::vector<std::string> all = KernelTargets();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), KernelTargetName());  // the best one, unrestricted
  for (const std::string& name : all) {
    SCOPED_TRACE(name);
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_TRUE(RestrictKernelTargets(lower));
    EXPECT_EQ(std::string(KernelTargetName()), name);
    // What is left: this target and the older ones.
    const std::vector<std::string> left = KernelTargets();
    ASSERT_FALSE(left.empty());
    EXPECT_EQ(left.front(), name);
    EXPECT_EQ(left.back(), all.back());
    hwy::DisableTargets(0);
  }
}

TEST_F(KernelTargetTest, UnknownNamesChangeNothing) {
  const std::string best = KernelTargetName();
  for (const char* name : {"", "avx", "AVX2x", "NEON_BF16_X", "best"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(RestrictKernelTargets(name));
    EXPECT_EQ(KernelTargetName(), best);
  }
}

// A kernel called after the restriction runs on the chosen target: the
// attention op reports bf16 products only on the x86 target that has them.
TEST_F(KernelTargetTest, KernelsFollowTheRestriction) {
  const std::vector<std::string> all = KernelTargets();
  ASSERT_TRUE(RestrictKernelTargets(all.back()));
  EXPECT_EQ(std::string(KernelTargetName()), all.back());
  EXPECT_FALSE(AttentionBf16Available());
}

}  // namespace
}  // namespace pocket::cpu
