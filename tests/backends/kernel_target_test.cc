// RestrictKernelTargets holds every kernel to an older target and refuses
// names it cannot run.
#include "backends/cpu/kernel_target.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "backends/cpu/ops.h"
#include "ops_test_util.h"

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
    // Listing the targets leaves dispatch where the restriction put it
    // (Highway 1.0.3's SupportedTargets() alone would choose again).
    EXPECT_EQ(std::string(KernelTargetName()), name) << "after listing";
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

// A kernel called after the restriction runs on the chosen target: on x86
// the attention op reports bf16 products only on AVX3_DL, never on the
// oldest target. (ARM's oldest, NEON, has them where the CPU does:
// attention_test.cc checks that on every target.)
TEST_F(KernelTargetTest, KernelsFollowTheRestriction) {
  const std::vector<std::string> all = KernelTargets();
  ASSERT_TRUE(RestrictKernelTargets(all.back()));
  EXPECT_EQ(std::string(KernelTargetName()), all.back());
#if HWY_ARCH_X86
  EXPECT_FALSE(AttentionBf16Available());
#endif
}

// Whether this CPU has the build's int8 extension (ops_test_util.h): on x86
// Linux the avx_vnni flag; on ARM, POCKET_TEST_CPU_HAS_DOTPROD.
std::optional<bool> CpuHasExtension() {
  return testing::CpuHasFeature("avx_vnni", "POCKET_TEST_CPU_HAS_DOTPROD");
}

// What the build compiled and this CPU cannot run is listed apart from what
// it runs, and the split follows the CPU's own flags (x86 Linux): AVX2 is
// run here exactly where /proc/cpuinfo names avx2, and not run otherwise.
TEST_F(KernelTargetTest, TargetsNotRunHereAreTheCompiledOnesTheCpuLacks) {
  const std::vector<std::string> run = KernelTargets();
  const std::vector<std::string> not_run = KernelTargetsNotRunHere();
  for (const std::string& name : not_run) {
    EXPECT_EQ(std::find(run.begin(), run.end(), name), run.end()) << name;
    EXPECT_FALSE(RestrictKernelTargets(name)) << name;
  }
#if HWY_ARCH_X86
  if ((HWY_TARGETS & HWY_AVX2) != 0) {
    if (const std::optional<bool> avx2 = testing::CpuHasFeature("avx2", "")) {
      const auto& list = *avx2 ? run : not_run;
      EXPECT_NE(std::find(list.begin(), list.end(), "AVX2"), list.end());
    }
  }
#endif
}

// The extension is listed, right before its base target, exactly where the
// CPU has it: a detection that misses it, or claims it on a CPU that would
// fault on its instructions, fails here (x86 Linux and the emulated CPUs of
// tools/ci-aarch64.sh; elsewhere only the listing is checked).
TEST_F(KernelTargetTest, Int8ExtensionIsListedWhereTheCpuHasIt) {
  const std::vector<std::string> all = KernelTargets();
  if (Int8ExtensionName() == nullptr) {
    // A build without one lists neither name and never chooses one.
    for (const char* name : {"NEON_DOTPROD", "AVX2_VNNI"}) {
      EXPECT_EQ(std::find(all.begin(), all.end(), name), all.end()) << name;
      EXPECT_FALSE(RestrictKernelTargets(name)) << name;
    }
    EXPECT_FALSE(Int8ExtensionAvailable());
    EXPECT_FALSE(Int8ExtensionChosen());
    return;
  }
  const std::string extension = Int8ExtensionName();
  const std::string base = hwy::TargetName(Int8ExtensionBase());
  if (const std::optional<bool> has = CpuHasExtension()) {
    EXPECT_EQ(Int8ExtensionAvailable(), *has);
  }
  const auto base_at = std::find(all.begin(), all.end(), base);
  const auto extension_at = std::find(all.begin(), all.end(), extension);
  if (!Int8ExtensionAvailable() || base_at == all.end()) {
    EXPECT_EQ(extension_at, all.end());
    EXPECT_FALSE(RestrictKernelTargets(extension));
    EXPECT_FALSE(Int8ExtensionChosen());
    return;
  }
  ASSERT_NE(extension_at, all.end());
  EXPECT_EQ(extension_at + 1, base_at);
  // The base target's name holds the int8 Linear to the kernels without the
  // extension; the extension's name brings it back.
  ASSERT_TRUE(RestrictKernelTargets(base));
  EXPECT_EQ(KernelTargetName(), base);
  EXPECT_FALSE(Int8ExtensionChosen());
  EXPECT_FALSE(RestrictKernelTargets(extension));  // no longer listed
  LiftKernelTargetRestriction();
  ASSERT_TRUE(RestrictKernelTargets(extension));
  EXPECT_EQ(KernelTargetName(), extension);
  EXPECT_TRUE(Int8ExtensionChosen());
}

// The int8 decode GEMV of SVE2_128 runs NEON_DOTPROD's kernels exactly
// where that target is dispatched to and the CPU runs the extension
// (tools/ci-aarch64.sh runs qemu's max with 128-bit vectors); never on x86.
TEST_F(KernelTargetTest, Sve2x128DecodesWithDotprodWhereTheCpuHasIt) {
  const bool dotprod = Int8ExtensionName() != nullptr &&
                       std::string(Int8ExtensionName()) == "NEON_DOTPROD" &&
                       Int8ExtensionAvailable();
  EXPECT_EQ(DotprodDecodesForSve128(), dotprod && std::string(KernelTargetName()) == "SVE2_128");
  for (const std::string& name : KernelTargets()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(RestrictKernelTargets(name));
    EXPECT_EQ(DotprodDecodesForSve128(), dotprod && name == "SVE2_128");
    LiftKernelTargetRestriction();
  }
}

// The matrix extension's prefill kernels are chosen exactly where the build
// has them, the CPU has the unit and the target is one they run beside:
// - Arm's I8MM (POCKET_TEST_CPU_HAS_I8MM from tools/ci-aarch64.sh) with the
//   Arm targets that have int8 dot products; holding the kernels to
//   NEON_DOTPROD or NEON (cores without I8MM) leaves them out;
// - x86's AMX-INT8 (/proc/cpuinfo's amx_int8) with AVX3_DL.
// The Linear tests pass without them too, so a detection that missed the
// unit would go unseen there.
TEST_F(KernelTargetTest, MatrixExtensionIsChosenWhereTheBuildTheCpuAndTheTargetHaveIt) {
#if HWY_ARCH_ARM_A64 && POCKET_ARM_I8MM_KERNELS
  const char* built = "I8MM";
  const std::optional<bool> cpu = testing::CpuHasFeature("i8mm", "POCKET_TEST_CPU_HAS_I8MM");
  // Named targets that take it; NEON_DOTPROD does only as the best one, unnamed.
  const auto takes_it = [](const std::string& name) {
    return name == "SVE" || name == "SVE2" || name == "SVE_256" || name == "SVE2_128";
  };
  const auto best_takes_it = [&](const std::string& name) {
    return takes_it(name) || name == "NEON_DOTPROD";
  };
#elif HWY_ARCH_X86 && POCKET_X86_AMX_KERNELS && defined(__linux__)
  const char* built = "AMX";
  const std::optional<bool> cpu = testing::CpuHasFeature("amx_int8", "");
  const auto takes_it = [](const std::string& name) { return name == "AVX3_DL"; };
  const auto best_takes_it = takes_it;
#else
  const char* built = nullptr;
  const std::optional<bool> cpu = false;
  const auto takes_it = [](const std::string&) { return false; };
  const auto best_takes_it = takes_it;
#endif
  if (built) {
    EXPECT_STREQ(MatrixExtensionName(), built);
  } else {
    EXPECT_EQ(MatrixExtensionName(), nullptr);
  }
  if (!built || cpu.has_value()) EXPECT_EQ(MatrixExtensionAvailable(), built && *cpu);
  const bool available = MatrixExtensionAvailable();
  EXPECT_EQ(MatrixExtensionChosen(), available && best_takes_it(KernelTargetName()));
  for (const std::string& name : KernelTargets()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(RestrictKernelTargets(name));
    EXPECT_EQ(MatrixExtensionChosen(), available && takes_it(name));
    LiftKernelTargetRestriction();
  }
  AllowMatrixExtension(false);
  EXPECT_FALSE(MatrixExtensionChosen());
  AllowMatrixExtension(true);
}

// x86's AMX-BF16 (/proc/cpuinfo's amx_bf16) multiplies attention's bf16
// products where the matrix extension is chosen; Arm's I8MM does not. The
// attention tests pass without it too.
TEST_F(KernelTargetTest, MatrixExtensionMultipliesBf16WhereTheCpuHasAmxBf16) {
#if HWY_ARCH_X86 && POCKET_X86_AMX_KERNELS && defined(__linux__)
  const std::optional<bool> cpu = testing::CpuHasFeature("amx_bf16", "");
#else
  const std::optional<bool> cpu = false;
#endif
  if (cpu.has_value()) {
    EXPECT_EQ(MatrixExtensionMultipliesBf16(), *cpu && MatrixExtensionChosen());
  }
  for (const std::string& name : KernelTargets()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(RestrictKernelTargets(name));
    if (!MatrixExtensionChosen()) EXPECT_FALSE(MatrixExtensionMultipliesBf16());
    LiftKernelTargetRestriction();
  }
  AllowMatrixExtension(false);
  EXPECT_FALSE(MatrixExtensionMultipliesBf16());
  AllowMatrixExtension(true);
}

// Decode reads weights 3 KB ahead on Intel x86 CPUs (/proc/cpuinfo's
// vendor_id GenuineIntel) and not elsewhere; the override holds until the
// default is asked back. The Linear tests pass either way, so a vendor
// check that missed would go unseen there.
TEST_F(KernelTargetTest, DecodeReadsAheadOnIntelCpus) {
#if HWY_ARCH_X86
  std::optional<bool> intel;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("vendor_id", 0) == 0) {
      intel = line.find("GenuineIntel") != std::string::npos;
      break;
    }
  }
#else
  const std::optional<bool> intel = false;
#endif
  if (intel.has_value()) EXPECT_EQ(DefaultDecodeReadAhead(), *intel ? 3072u : 0u);
  EXPECT_EQ(DecodeReadAhead(), DefaultDecodeReadAhead());
  SetDecodeReadAhead(128);
  EXPECT_EQ(DecodeReadAhead(), 128u);
  SetDecodeReadAhead(~size_t{0});
  EXPECT_EQ(DecodeReadAhead(), DefaultDecodeReadAhead());
}

}  // namespace
}  // namespace pocket::cpu
