// Plain scalar C++ of every op, written straight from docs/graph.md, the
// byte layouts of format/dtype.h and the KV page layouts of
// backends/kv_pages.h. It is the ground truth the CPU's SIMD kernels and the
// GPU kernels are tested against, and the reference backend (backend.cc)
// runs it, so it favours obviousness over speed: one dot product at a time,
// softmax over the full score row, no threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/kv_pages.h"
#include "format/model_config.h"
#include "graph/kv_type.h"
#include "graph/weight_view.h"

namespace pocket::reference {

// Row `row` of w, dequantized to f32 into out[w.cols].
void DequantizeRow(const WeightView& w, size_t row, float* out);

// Same contracts as the functions of the same name in backends/cpu/ops.h.
void Linear(const float* x, size_t n, const WeightView& w, const float* bias, float* out);
void Embed(const WeightView& table, const int32_t* ids, size_t n, float* out);
void RmsNorm(const float* x, const float* w, size_t n, size_t d, float eps, float* out);
void HeadRmsNorm(float* x, const float* w, size_t n, size_t n_heads, size_t head_dim, float eps);
void Rope(float* x, size_t n, size_t n_heads, size_t head_dim, const int32_t* positions,
          float theta, RopeStyle style);
void Swiglu(const float* g, const float* u, size_t count, float* out);
void Add(const float* a, const float* b, size_t count, float* out);
size_t Argmax(const float* x, size_t count);
void KvAppend(const KvView& kv, size_t n_past, const float* k, const float* v, size_t n);
// With AttentionMath::kBf16, q and the cached K and V values are rounded to
// bf16 (nearest even) before the same f32 computation; the softmax weights
// are not (their rounding is within the bound kv_pages.h states). q8 caches in
// bf16 round only the query, in the basis the rows are stored in (their
// codes are exact in bf16 and their scales multiply f32 results); with
// AttentionMath::kInt8 (q8 caches only) that query is rounded to int8
// codes times one scale, as kv_pages.h says, instead.
void Attention(const float* q, size_t n, size_t n_past, const KvView& kv, size_t n_heads,
               size_t n_kv_heads, size_t head_dim, float* out,
               AttentionMath math = AttentionMath::kF32);

// The int8-activation Linear (QuantMath::kInt8), written from the formulas of
// kernels/cpu/act_quant-inl.h and matvec_int8-inl.h: per block of x,
// d = max|x| / 127, q = round_half_even(x * (127 / max|x|)), s = sum x; then
// per weight group g the integer sum of code * q, times scale_g * d_g, plus
// min_g * s_g for q4, accumulated in double. w must be q4 or q8.
void QuantizeActivations(const float* x, size_t cols, size_t block, int8_t* q, float* d, float* s);
void LinearInt8(const float* x, size_t n, const WeightView& w, const float* bias, float* out);
void KvShift(const KvView& kv, size_t dst, size_t src, size_t count, const KvRope& rope);
// Row t of `pages` (kv.k_pages or kv.v_pages) to or from its serialized
// form (graph/kv_type.h: the stored values in element order, then the q8
// scales), as backends/cpu/ops.h's KvReadRow and KvWriteRow.
void KvReadRow(const KvView& kv, void* const* pages, size_t t, uint8_t* bytes);
void KvWriteRow(const KvView& kv, void* const* pages, size_t t, const uint8_t* bytes);

}  // namespace pocket::reference
