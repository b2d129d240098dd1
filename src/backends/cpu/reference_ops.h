// Plain scalar C++ of every CPU op, written straight from docs/graph.md and
// the byte layouts of format/dtype.h. It is the ground truth the SIMD kernels
// are tested against, so it favours obviousness over speed: one dot product
// at a time, softmax over the full score row, no threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/ops.h"

namespace pocket::cpu::reference {

// Row `row` of w, dequantized to f32 into out[w.cols].
void DequantizeRow(const WeightView& w, size_t row, float* out);

// Same contracts as the functions of the same name in ops.h.
void Linear(const float* x, size_t n, const WeightView& w, const float* bias, float* out);
void Embed(const WeightView& table, const int32_t* ids, size_t n, float* out);
void RmsNorm(const float* x, const float* w, size_t n, size_t d, float eps, float* out);
void HeadRmsNorm(float* x, const float* w, size_t n, size_t n_heads, size_t head_dim, float eps);
void Rope(float* x, size_t n, size_t n_heads, size_t head_dim, const int32_t* positions,
          float theta, RopeStyle style);
void Swiglu(const float* g, const float* u, size_t count, float* out);
void Add(const float* a, const float* b, size_t count, float* out);
void KvAppend(const KvView& kv, size_t n_past, const float* k, const float* v, size_t n);
void Attention(const float* q, size_t n, size_t n_past, const KvView& kv, size_t n_heads,
               size_t n_kv_heads, size_t head_dim, float* out);

}  // namespace pocket::cpu::reference
