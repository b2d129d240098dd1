// RestrictKernelTargets holds every kernel to an older target and refuses
// names it cannot run.
#include "backends/cpu/kernel_target.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/ops.h"

namespace pocket::cpu {
namespace {

// Lifts any restriction when a test ends, so the others see every target.
class KernelTargetTest : public ::testing::Test {
 protected:
  void TearDown() override { LiftKernelTargetRestriction(); }
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
    LiftKernelTargetRestriction();
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

// ARM: NEON_DOTPROD is listed, right before NEON, exactly where the CPU has
// dotprod. tools/ci-aarch64.sh names what each emulated CPU has in
// POCKET_TEST_CPU_HAS_DOTPROD (1 or 0), so a detection that misses it, or
// claims it on a CPU that would fault on sdot, fails here.
TEST_F(KernelTargetTest, NeonDotprodIsListedWhereTheCpuHasIt) {
  const char* expected = std::getenv("POCKET_TEST_CPU_HAS_DOTPROD");
  if (expected == nullptr) GTEST_SKIP() << "POCKET_TEST_CPU_HAS_DOTPROD is not set";
  const bool has = std::string(expected) == "1";
  EXPECT_EQ(NeonDotprodAvailable(), has);
  const std::vector<std::string> all = KernelTargets();
  const auto neon = std::find(all.begin(), all.end(), "NEON");
  ASSERT_NE(neon, all.end());
  const auto dotprod = std::find(all.begin(), all.end(), "NEON_DOTPROD");
  if (has) {
    ASSERT_NE(dotprod, all.end());
    EXPECT_EQ(dotprod + 1, neon);
    // "neon" holds the int8 Linear to the ARMv8.0 kernels; "neon_dotprod"
    // brings sdot back.
    ASSERT_TRUE(RestrictKernelTargets("neon"));
    EXPECT_STREQ(KernelTargetName(), "NEON");
    EXPECT_FALSE(NeonDotprodChosen());
    ASSERT_FALSE(RestrictKernelTargets("neon_dotprod"));  // no longer listed
    LiftKernelTargetRestriction();
    ASSERT_TRUE(RestrictKernelTargets("neon_dotprod"));
    EXPECT_STREQ(KernelTargetName(), "NEON_DOTPROD");
    EXPECT_TRUE(NeonDotprodChosen());
  } else {
    EXPECT_EQ(dotprod, all.end());
    EXPECT_FALSE(RestrictKernelTargets("neon_dotprod"));
  }
}

}  // namespace
}  // namespace pocket::cpu
