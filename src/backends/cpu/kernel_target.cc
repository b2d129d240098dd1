
#include "backends/cpu/kernel_target.h"

#include <cctype>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/kernel_target.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

// Compiled once per target; dispatch picks the same one as every kernel.
const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(TargetName);

const char* KernelTargetName() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

namespace {

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

std::vector<std::string> KernelTargets() {
  std::vector<std::string> names;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
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
    if (!SameName(name, hwy::TargetName(target))) continue;
    // Better targets have the lower bits.
    hwy::DisableTargets(target - 1);
    return true;
  }
  return false;
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
