// Rope, RopeTable, RopeApply (ops.h): per-token angle tables in scalar f32
// (llama2.c's formula), rotation of all heads by kernels/cpu/rope-inl.h.

#include <vector>

#include "backends/cpu/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/rope.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/rope-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

// table[n * RopeTableFloats(head_dim)]: each position's cos row, then its
// sin row.
void RopeTableKernel(const int32_t* positions, size_t n, size_t head_dim, float theta,
                     RopeStyle style, float* table) {
  thread_local std::vector<float> freq;  // reused: decode builds a table per step
  freq.resize(head_dim / 2);
  RopeFrequencies(head_dim, theta, freq.data());
  for (size_t t = 0; t < n; ++t) {
    float* row = table + t * RopeTableFloats(head_dim);
    RopeTables(positions[t], head_dim, freq.data(), style, row, row + head_dim);
  }
}

void RopeApplyKernel(float* x, size_t n, size_t n_heads, size_t head_dim, RopeStyle style,
                     const float* table) {
  for (size_t t = 0; t < n; ++t) {
    const float* row = table + t * RopeTableFloats(head_dim);
    RopeHeads(x + t * n_heads * head_dim, n_heads, head_dim, style, row, row + head_dim);
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(RopeTableKernel);
HWY_EXPORT(RopeApplyKernel);

void RopeTable(const int32_t* positions, size_t n, size_t head_dim, float theta, RopeStyle style,
               float* table) {
  if (positions == nullptr || table == nullptr || head_dim % 2 != 0) return;
  HWY_DYNAMIC_DISPATCH(RopeTableKernel)(positions, n, head_dim, theta, style, table);
}

void RopeApply(float* x, size_t n, size_t n_heads, size_t head_dim, RopeStyle style,
               const float* table) {
  if (x == nullptr || table == nullptr || head_dim % 2 != 0) return;
  HWY_DYNAMIC_DISPATCH(RopeApplyKernel)(x, n, n_heads, head_dim, style, table);
}

void Rope(float* x, size_t n, size_t n_heads, size_t head_dim, const int32_t* positions,
          float theta, RopeStyle style) {
  if (x == nullptr || positions == nullptr || head_dim % 2 != 0) return;
  // Reused across calls (KvShift rotates one row at a time).
  thread_local std::vector<float> table;
  table.resize(n * RopeTableFloats(head_dim));
  RopeTable(positions, n, head_dim, theta, style, table.data());
  RopeApply(x, n, n_heads, head_dim, style, table.data());
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
