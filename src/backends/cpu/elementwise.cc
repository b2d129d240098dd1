// Swiglu and Add (ops.h) over kernels/cpu/elementwise-inl.h.

#include "backends/cpu/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/elementwise.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/elementwise-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

void SwigluKernel(const float* g, const float* u, size_t count, float* out) {
  SwigluArrays(g, u, count, out);
}

void AddKernel(const float* a, const float* b, size_t count, float* out) {
  AddArrays(a, b, count, out);
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(SwigluKernel);
HWY_EXPORT(AddKernel);

void Swiglu(const float* g, const float* u, size_t count, float* out) {
  if (g == nullptr || u == nullptr || out == nullptr) return;
  HWY_DYNAMIC_DISPATCH(SwigluKernel)(g, u, count, out);
}

void Add(const float* a, const float* b, size_t count, float* out) {
  if (a == nullptr || b == nullptr || out == nullptr) return;
  HWY_DYNAMIC_DISPATCH(AddKernel)(a, b, count, out);
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
