// RmsNorm and HeadRmsNorm (ops.h) over kernels/cpu/norm-inl.h.

#include "backends/cpu/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/norm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/norm-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

void RmsNormKernel(const float* x, const float* w, size_t rows, size_t d, float eps, float* out) {
  RmsNormRows(x, w, rows, d, eps, out);
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(RmsNormKernel);

void RmsNorm(const float* x, const float* w, size_t n, size_t d, float eps, float* out) {
  if (x == nullptr || w == nullptr || out == nullptr || d == 0) return;
  HWY_DYNAMIC_DISPATCH(RmsNormKernel)(x, w, n, d, eps, out);
}

void HeadRmsNorm(float* x, const float* w, size_t n, size_t n_heads, size_t head_dim, float eps) {
  // Each head's slice is a row of its own.
  if (x == nullptr || w == nullptr || head_dim == 0) return;
  HWY_DYNAMIC_DISPATCH(RmsNormKernel)(x, w, n * n_heads, head_dim, eps, x);
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
