
#include "backends/cpu/kernel_target.h"

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

}  // namespace pocket::cpu
#endif  // HWY_ONCE
