#include "backends/cpu/kernel_target.h"

#include <atomic>
#include <cctype>
#include <cstdint>

#if POCKET_NEON_DOTPROD_KERNELS && defined(__linux__)
#include <sys/auxv.h>
#elif POCKET_NEON_DOTPROD_KERNELS && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/kernel_target.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

// Compiled once per target; dispatch picks the same one as every kernel.
int64_t Target() { return HWY_TARGET; }

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(Target);

namespace {

constexpr const char* kNeonDotprod = "NEON_DOTPROD";

std::atomic<bool> neon_dotprod_allowed{true};

bool CpuHasDotprod() {
#if POCKET_NEON_DOTPROD_KERNELS && defined(__linux__)  // Android too
  constexpr unsigned long kHwcapAsimdDp = 1UL << 20;   // HWCAP_ASIMDDP, arm64 Linux ABI
  return (getauxval(AT_HWCAP) & kHwcapAsimdDp) != 0;
#elif POCKET_NEON_DOTPROD_KERNELS && defined(__APPLE__)
  int value = 0;
  size_t size = sizeof(value);
  return sysctlbyname("hw.optional.arm.FEAT_DotProd", &value, &size, nullptr, 0) == 0 && value != 0;
#else
  return false;
#endif
}

bool SameName(const std::string& a, const char* b) {
  size_t i = 0;
  for (; i < a.size() && b[i] != '\0'; ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return i == a.size() && b[i] == '\0';
}

}  // namespace

bool NeonDotprodAvailable() {
  static const bool available = CpuHasDotprod();
  return available;
}

bool NeonDotprodChosen() {
#if POCKET_NEON_DOTPROD_KERNELS
  return neon_dotprod_allowed.load(std::memory_order_relaxed) && NeonDotprodAvailable() &&
         HWY_DYNAMIC_DISPATCH(Target)() == HWY_NEON;
#else
  return false;
#endif
}

void AllowNeonDotprod(bool allow) { neon_dotprod_allowed.store(allow, std::memory_order_relaxed); }

const char* KernelTargetName() {
  return NeonDotprodChosen() ? kNeonDotprod : hwy::TargetName(HWY_DYNAMIC_DISPATCH(Target)());
}

std::vector<std::string> KernelTargets() {
  std::vector<std::string> names;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if (target == HWY_NEON && NeonDotprodAvailable() &&
        neon_dotprod_allowed.load(std::memory_order_relaxed)) {
      names.push_back(kNeonDotprod);
    }
    names.push_back(hwy::TargetName(target));
  }
  return names;
}

std::string KernelTargetList(const char* separator) {
  std::string list;
  for (const std::string& name : KernelTargets()) list += (list.empty() ? "" : separator) + name;
  return list;
}

bool RestrictKernelTargets(const std::string& name) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    const bool dotprod = target == HWY_NEON && NeonDotprodAvailable() &&
                         neon_dotprod_allowed.load(std::memory_order_relaxed) &&
                         SameName(name, kNeonDotprod);
    if (!dotprod && !SameName(name, hwy::TargetName(target))) continue;
    // Better targets have the lower bits.
    hwy::DisableTargets(target - 1);
    // "NEON" alone means without dotprod; every other name leaves it as is.
    if (target == HWY_NEON) AllowNeonDotprod(dotprod);
    return true;
  }
  return false;
}

void LiftKernelTargetRestriction() {
  hwy::DisableTargets(0);
  AllowNeonDotprod(true);
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
