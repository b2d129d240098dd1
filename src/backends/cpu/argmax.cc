// Argmax (ops.h) over kernels/cpu/argmax-inl.h.

#include "backends/cpu/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/argmax.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/argmax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

size_t ArgmaxKernel(const float* x, size_t count) { return ArgmaxArray(x, count); }

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(ArgmaxKernel);

size_t Argmax(const float* x, size_t count) {
  if (x == nullptr) return 0;
  return HWY_DYNAMIC_DISPATCH(ArgmaxKernel)(x, count);
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
