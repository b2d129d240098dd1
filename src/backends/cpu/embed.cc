// Embed (ops.h): rows of a table of any dtype, dequantized by the kernel of
// kernels/cpu/dequant-inl.h.

#include <cstring>

#include "backends/cpu/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/embed.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/dequant-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

void EmbedRow(const WeightView& table, size_t row, float* out) { DequantizeRow(table, row, out); }

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(EmbedRow);

void Embed(const WeightView& table, const int32_t* ids, size_t n, float* out) {
  if (out == nullptr) return;
  for (size_t t = 0; t < n; ++t) {
    float* row = out + t * table.cols;
    // An id outside the table (the tokenizer never makes one) embeds as zeros.
    if (table.data == nullptr || ids == nullptr || ids[t] < 0 ||
        static_cast<size_t>(ids[t]) >= table.rows) {
      std::memset(row, 0, table.cols * sizeof(float));
      continue;
    }
    HWY_DYNAMIC_DISPATCH(EmbedRow)(table, static_cast<size_t>(ids[t]), row);
  }
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
