// CPU backend: the op set of docs/graph.md over f32 activations, with
// weights read straight from the mapped file in their stored dtype.
// Each op is written once in Highway (kernels/cpu/<op>-inl.h), compiled for
// every x86/ARM target and picked at run time; the scalar reference of each
// op lives in backends/reference/ops.h and is what the tests compare against.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/kv_pages.h"
#include "format/dtype.h"
#include "format/model_config.h"
#include "graph/kv_type.h"
#include "graph/quant_math.h"
#include "graph/weight_view.h"

namespace pocket::cpu {

class ThreadPool;

// The paged KV cache (KvView, its layouts) and attention's maths are the
// host backends' shared vocabulary (backends/kv_pages.h).
using ::pocket::AttentionMath;
using ::pocket::KvView;

// Values per kv head as the layouts count them (head_dim 0: one head).
inline size_t KvHeadSize(const KvView& kv) {
  return kv.head_dim != 0 ? kv.head_dim : kv.row_stride;
}

// The element of `pages` (kv.k_pages or kv.v_pages) that holds element i of
// the row of the token in slot j of its page (kv_pages.h's layouts).
inline size_t KvElemIndex(const KvView& kv, void* const* pages, size_t j, size_t i) {
  const size_t head = KvHeadSize(kv);
  if (kv.type == KvType::kBf16) {
    if (pages == kv.k_pages) {
      const size_t width = (i | 1) < kv.row_stride ? 2 : 1;  // 1: the odd last channel
      return (i & ~size_t{1}) * kv.page_tokens + j * width + (i & 1);
    }
    const size_t width = (j | 1) < kv.page_tokens ? 2 : 1;  // 1: the odd last slot
    return i / head * kv.page_tokens * head + (j & ~size_t{1}) * head + i % head * width + (j & 1);
  }
  if (kv.type == KvType::kQ8 && pages == kv.k_pages) {
    const size_t c = i % head, g = c & ~size_t{3};
    const size_t width = std::min<size_t>(4, head - g);
    return (i - c + g) * kv.page_tokens + j * width + (c & 3);
  }
  if (pages == kv.k_pages) return i * kv.page_tokens + j;
  return (i / head * kv.page_tokens + j) * head + i % head;
}

// Elements between consecutive values of one kv head's row in `pages`:
// page_tokens in channel-major K pages, 1 in V pages. (bf16: between
// consecutive pairs of K channels, 2 page_tokens; V pairs channels 2 apart.
// q8 K: between consecutive quads of channels, 4 page_tokens.)
inline size_t KvValueStride(const KvView& kv, void* const* pages) {
  if (kv.type == KvType::kBf16) return pages == kv.k_pages ? 2 * kv.page_tokens : 2;
  if (kv.type == KvType::kQ8 && pages == kv.k_pages) return 4 * kv.page_tokens;
  return pages == kv.k_pages ? kv.page_tokens : 1;
}

// q8: the byte offset in its page of the f16 scale of kv head h of the token
// in slot j (kv_pages.h).
inline size_t KvScaleOffset(const KvView& kv, size_t j, size_t h) {
  return kv.page_tokens * kv.row_stride + (h * kv.page_tokens + j) * 2;
}

// Whether q8 rows of `kv` are stored in the Hadamard basis (kv_pages.h).
inline bool KvRotated(const KvView& kv) {
  return kv.type == KvType::kQ8 && kv.head_dim > 1 && (kv.head_dim & (kv.head_dim - 1)) == 0;
}

// Copies row t of `pages` (kv.k_pages or kv.v_pages) to or from
// KvRowBytes(...) bytes: the stored values in element order whatever the
// page layout, then (q8) the row's scales.
void KvReadRow(const KvView& kv, void* const* pages, size_t t, uint8_t* bytes);
void KvWriteRow(const KvView& kv, void* const* pages, size_t t, const uint8_t* bytes);
// Row t of `pages` widened to f32 (row_stride values).
void KvRowToF32(const KvView& kv, void* const* pages, size_t t, float* out);

// Up to this many tokens (speculation's verify step, a prompt's short last
// chunk), Linear and Attention give each token the bits they give it alone
// (decode's), whatever the others: Linear streams the weights once for all
// of them through kernels that round each token as decode's GEMV does, and
// Attention splits no token's positions differently from its single step.
constexpr size_t kBatchTokens = 16;

// out[n, w.rows] = x[n, w.cols] * W^T (+ bias[w.rows] when non-null), q4/q8
// weights multiplied as `math` says.
void Linear(const float* x, size_t n, const WeightView& w, const float* bias, float* out,
            ThreadPool* pool, QuantMath math = QuantMath::kF32);
// Several Linears of one input (a layer's q, k and v; gate and up): with
// int8 maths x is quantized once and one parallel pass covers the rows of
// every weight, instead of one pass (and one wait for the slowest thread)
// per weight. The outputs must not overlap x. At most kMaxLinearGroup.
struct LinearOut {
  WeightView w;
  const float* bias;  // or null
  float* out;         // [n, w.rows]
};
constexpr size_t kMaxLinearGroup = 4;
void LinearGroup(const float* x, size_t n, const LinearOut* items, size_t count, ThreadPool* pool,
                 QuantMath math);
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
// Rope in two steps, for callers that rotate several tensors at the same
// positions (every layer's q and k): RopeTable writes the cos and sin rows
// of n positions into table[n * RopeTableFloats(head_dim)], RopeApply
// rotates with them. Together they give Rope's results bit for bit.
inline size_t RopeTableFloats(size_t head_dim) { return 2 * head_dim; }
void RopeTable(const int32_t* positions, size_t n, size_t head_dim, float theta, RopeStyle style,
               float* table);
void RopeApply(float* x, size_t n, size_t n_heads, size_t head_dim, RopeStyle style,
               const float* table);
// out = silu(g) * u over `count` values; out may alias g.
void Swiglu(const float* g, const float* u, size_t count, float* out);
// out = a + b; out may alias a.
void Add(const float* a, const float* b, size_t count, float* out);
// The first i with x[i] the largest of x[0, count), NaN never counting as
// larger; 0 when no value exceeds -inf (greedy sampling's choice).
size_t Argmax(const float* x, size_t count);
// Writes k[n, kv_dim], v[n, kv_dim] at positions [n_past, n_past + n),
// each thread of `pool` (when given) a run of the tokens.
void KvAppend(const KvView& kv, size_t n_past, const float* k, const float* v, size_t n,
              ThreadPool* pool = nullptr);
// Asks for the cache lines that KvAppend of position t writes, for writing,
// and returns at once. A decoded token's K row spans a line per channel
// (pair) of every kv head, and the weights streamed since the last token
// have evicted them all: appended cold, they cost a layer ~2 us of misses
// in a row; asked for a Linear earlier, they arrive meanwhile. t's page
// must exist, as for KvAppend.
void KvPrefetchAppend(const KvView& kv, size_t t);
// The products Attention makes for `kv` when asked for `math`: kF32 stays;
// kBf16 and kInt8 mean the fastest this CPU and cache allow, kInt8 for a
// q8 cache, kBf16 for the others, each where its conditions hold, else
// kF32.
AttentionMath AttentionMathFor(const KvView& kv, size_t head_dim, AttentionMath math);
// Whether those products are made on the CPU's matrix unit: x86's AMX-BF16
// tiles (kernel_target.h: MatrixExtensionMultipliesBf16), for kBf16 over a
// bf16 cache with heads of 32 to 128 channels, a multiple of 32. The same
// roundings of q, K, V and the weights; only the order of the f32 sums
// differs.
bool AttentionByMatrixExtension(const KvView& kv, size_t head_dim, AttentionMath math);
// Whether this CPU and build run AttentionMath::kBf16 (x86 with AVX512_BF16,
// built with GCC or Clang; 64-bit ARM with BF16).
bool AttentionBf16Available();
// Causal GQA attention: q[n, n_heads*head_dim] at positions
// [n_past, n_past + n) over cache positions [0, n_past + n); out has q's shape.
// q8 and bf16 caches need kv.head_dim == head_dim, bf16 also page_tokens a
// multiple of 16 and an even head_dim; out is left as it was otherwise.
void Attention(const float* q, size_t n, size_t n_past, const KvView& kv, size_t n_heads,
               size_t n_kv_heads, size_t head_dim, float* out, ThreadPool* pool,
               AttentionMath math = AttentionMath::kF32);
// Moves cache positions [src, src + count) to [dst, dst + count), dst < src,
// for a sliding window: V rows are copied as stored; K rows are re-encoded at
// their new positions (rotated by dst - src positions with `rope`, which
// composes exactly with the rotation they carry) and stored again.
void KvShift(const KvView& kv, size_t dst, size_t src, size_t count, const KvRope& rope);

}  // namespace pocket::cpu
