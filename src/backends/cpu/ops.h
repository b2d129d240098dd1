// CPU backend: the op set of docs/graph.md over f32 activations, with
// weights read straight from the mapped file in their stored dtype.
// Each op is written once in Highway (kernels/cpu/<op>-inl.h), compiled for
// every x86/ARM target and picked at run time; the scalar reference of each
// op lives in reference_ops.h and is what the tests compare against.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "format/dtype.h"
#include "format/model_config.h"
#include "graph/kv_type.h"
#include "graph/quant_math.h"
#include "graph/weight_view.h"

namespace pocket::cpu {

class ThreadPool;


// The KV cache as the attention kernel sees it: positions [0, n_past + n)
// of one layer, stored in pages of `page_tokens` tokens. Page p holds tokens
// [p * page_tokens, (p + 1) * page_tokens); j = t % page_tokens is token t's
// slot in its page. A token's row is its n_kv_heads * head_dim values.
//
// K pages are channel-major, element i of row t at element i * page_tokens
// + j of k_pages[p], so one kv head's keys for consecutive positions are
// consecutive and attention scores a whole vector of positions per
// multiply-add, with no sums across lanes. V pages are head-major, element i
// of row t at ((i / head_dim) * page_tokens + j) * head_dim + i % head_dim
// of v_pages[p], so one kv head's values for a run of positions are one
// contiguous run (head_dim 0 counts as row_stride: one head). KvElemIndex
// gives both. Elements are f32, f16 or (q8) int8 codes.
//
// bf16 pages hold the operands of the bf16 attention products
// (attention_bf16-inl.h) as they are, so that attention reads them in place
// instead of converting every block: K is channel-major by pairs of channels,
// element i of slot j at (i & ~1) * page_tokens + 2 j + (i & 1) (one 32-bit
// word holds channels i and i + 1 of a position); V is head-major by pairs
// of positions, channel c of head h in slot j at h * page_tokens * head_dim
// + (j & ~1) * head_dim + 2 c + (j & 1) (one word holds slots j and j + 1 of
// a channel). An odd last channel or slot has no partner and takes one
// element per position or channel. Attention needs page_tokens to be a
// multiple of 16 with bf16 (whole vectors of positions lie in one page).
//
// q8 K pages hold the operands of the int8 q . k products
// (attention_int8-inl.h) as they are: channel-major by quads of a head's
// channels, channel c of head h in slot j at (h * head_dim + g) * page_tokens
// + j * w + c % 4, with g = c & ~3 and w = min(4, head_dim - g) (one 32-bit
// word holds channels g .. g + 3 of a position; a head's last quad is
// narrower when head_dim is not a multiple of 4). q8 V pages are head-major
// as above.
// q8 pages hold, after the codes of all the page's tokens, one f16 scale per
// (kv head, token), head-major: the scale of head h of the token in slot j is
// f16 number h * page_tokens + j, so a block of positions' scales is one run.
// A q8 head row y is quantized as code * scale with scale = max|y| / 127.
// Attention multiplies the scores by the K scales and the softmax weights by
// the V scales, once per position, and widens the codes as the other types.
// When head_dim is a power of two, y is the head's values x in the
// orthonormal Walsh-Hadamard basis, y = H x with H[i][j] = (-1)^popcount(i &
// j) / sqrt(head_dim), so x = H y: a few large channels (common in K) are
// spread over the whole row and no longer set the step for the small ones.
// Dot products are unchanged by H, so attention rotates the query instead of
// every row, and its output once at the end. Other head_dims store x itself.
struct KvView {
  KvType type = KvType::kF16;
  void* const* k_pages = nullptr;
  void* const* v_pages = nullptr;
  size_t page_tokens = 0;
  size_t row_stride = 0;  // elements per token row (n_kv_heads * head_dim)
  size_t head_dim = 0;    // elements per kv head (q8 scale, V run); must divide row_stride
};


// Values per kv head as the layouts count them (head_dim 0: one head).
inline size_t KvHeadSize(const KvView& kv) {
  return kv.head_dim != 0 ? kv.head_dim : kv.row_stride;
}

// The element of `pages` (kv.k_pages or kv.v_pages) that holds element i of
// the row of the token in slot j of its page (layouts above).
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
// in slot j (layout above).
inline size_t KvScaleOffset(const KvView& kv, size_t j, size_t h) {
  return kv.page_tokens * kv.row_stride + (h * kv.page_tokens + j) * 2;
}

// Whether q8 rows of `kv` are stored in the Hadamard basis (see above).
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
// How Attention multiplies q . k and the softmax weights with V (q8 codes
// are exact in every form; their scales multiply the f32 scores and the
// weights).
enum class AttentionMath : uint8_t {
  // f32 products: within f32 rounding of the exact result.
  kF32 = 0,
  // q, K, V and the weights rounded to bf16, products summed in f32: twice
  // the multiply-adds per instruction (vdpbf16ps). Each output moves by at
  // most 2^-8 max|v| from the weights' rounding, besides what the rounded
  // q, K, V change (docs/kernels.md). Only where AttentionBf16Available()
  // and head_dim is a multiple of 16; elsewhere kF32. For a q8 cache it
  // asks for kInt8 (AttentionMathFor).
  kBf16 = 1,
  // q8 caches: each query row quantized to int8 codes with one scale
  // (max|q| / 127, nearest even, in the basis the rows are stored in) and
  // q . k summed in int32 with the cached codes, four products per
  // instruction (dpbusd, sdot); the softmax weights multiply V's codes in
  // f32. The query's rounding moves a score by at most sum |k| scale_q / 2
  // (docs/kernels.md); on AVX3_DL the weights are also rounded to int16
  // steps of each block's largest, at most 64 / 65534 max|v| more. Where
  // the target has an int8 dot product (kernels/cpu/int8_dot-inl.h),
  // page_tokens is a multiple of 16 and head_dim of 4; elsewhere kF32.
  kInt8 = 2,
};
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
