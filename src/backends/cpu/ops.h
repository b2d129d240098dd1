// CPU backend: the op set of docs/graph.md over f32 activations, with
// weights read straight from the mapped file in their stored dtype.
// Each op is written once in Highway (kernels/cpu/<op>-inl.h), compiled for
// every x86/ARM target and picked at run time; the scalar reference of each
// op lives in reference_ops.h and is what the tests compare against.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/dtype.h"
#include "format/model_config.h"

namespace pocket::cpu {

class ThreadPool;

// A weight matrix [rows, cols] as stored in the file (format/dtype.h).
struct WeightView {
  const uint8_t* data = nullptr;
  DType dtype = DType::kF32;
  uint32_t group = 0;
  size_t rows = 0;
  size_t cols = 0;
};

// The KV cache as the attention kernel sees it: positions [0, n_past + n)
// of one layer, stored in pages of `page_tokens` tokens. Page p holds tokens
// [p * page_tokens, (p + 1) * page_tokens); a token's K row (n_kv_heads *
// head_dim values) is at k_pages[p] + (t % page_tokens) * row_stride elements.
enum class KvType : uint8_t { kF32 = 0, kF16 = 1 };
struct KvView {
  KvType type = KvType::kF16;
  void* const* k_pages = nullptr;
  void* const* v_pages = nullptr;
  size_t page_tokens = 0;
  size_t row_stride = 0;  // elements per token row (n_kv_heads * head_dim)
};

// out[n, w.rows] = x[n, w.cols] * W^T (+ bias[w.rows] when non-null).
void Linear(const float* x, size_t n, const WeightView& w, const float* bias, float* out,
            ThreadPool* pool);
// out[i] = row ids[i] of table, dequantized to f32.
void Embed(const WeightView& table, const int32_t* ids, size_t n, float* out);
// Row-wise RMSNorm of x[n, d] times w[d]; out may alias x.
void RmsNorm(const float* x, const float* w, size_t n, size_t d, float eps, float* out);
// RMSNorm of each head_dim slice of x[n, n_heads * head_dim], in place.
void HeadRmsNorm(float* x, const float* w, size_t n, size_t n_heads, size_t head_dim, float eps);
// Rotary embedding in place on x[n, n_heads * head_dim]; token i is at
// positions[i].
void Rope(float* x, size_t n, size_t n_heads, size_t head_dim, const int32_t* positions,
          float theta, RopeStyle style);
// out = silu(g) * u over `count` values; out may alias g.
void Swiglu(const float* g, const float* u, size_t count, float* out);
// out = a + b; out may alias a.
void Add(const float* a, const float* b, size_t count, float* out);
// Writes k[n, kv_dim], v[n, kv_dim] at positions [n_past, n_past + n).
void KvAppend(const KvView& kv, size_t n_past, const float* k, const float* v, size_t n);
// Causal GQA attention: q[n, n_heads*head_dim] at positions
// [n_past, n_past + n) over cache positions [0, n_past + n); out has q's shape.
void Attention(const float* q, size_t n, size_t n_past, const KvView& kv, size_t n_heads,
               size_t n_kv_heads, size_t head_dim, float* out, ThreadPool* pool);

}  // namespace pocket::cpu
