// Rope (ops.h): per-token angle tables in scalar f32 (llama2.c's formula),
// rotation of all heads by kernels/cpu/rope-inl.h.

#include <vector>

#include "backends/cpu/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/rope.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/rope-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

// scratch: 2.5 * head_dim floats.
void RopeKernel(float* x, size_t n, size_t n_heads, size_t head_dim, const int32_t* positions,
                float theta, RopeStyle style, float* scratch) {
  float* cos_t = scratch;
  float* sin_t = scratch + head_dim;
  float* freq = scratch + 2 * head_dim;
  RopeFrequencies(head_dim, theta, freq);
  for (size_t t = 0; t < n; ++t) {
    RopeTables(positions[t], head_dim, freq, style, cos_t, sin_t);
    RopeHeads(x + t * n_heads * head_dim, n_heads, head_dim, style, cos_t, sin_t);
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(RopeKernel);

void Rope(float* x, size_t n, size_t n_heads, size_t head_dim, const int32_t* positions,
          float theta, RopeStyle style) {
  if (x == nullptr || positions == nullptr || head_dim % 2 != 0) return;
  // Reused across calls: rope runs twice per layer per step.
  thread_local std::vector<float> scratch;
  scratch.resize(head_dim * 5 / 2);
  HWY_DYNAMIC_DISPATCH(RopeKernel)
  (x, n, n_heads, head_dim, positions, theta, style, scratch.data());
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
