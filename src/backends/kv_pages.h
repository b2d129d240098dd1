// The paged KV cache of the backends that compute in host memory (cpu and
// reference): the page layout each implements on its own (the reference
// ops are the CPU kernels' independent check), and how attention over it
// may multiply. Session states do not depend on it: they hold rows in the
// serialized form of graph/kv_type.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "graph/kv_type.h"

namespace pocket {

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
// contiguous run (head_dim 0 counts as row_stride: one head). The CPU's
// KvElemIndex (backends/cpu/ops.h) gives both. Elements are f32, f16 or (q8) int8 codes.
//
// bf16 pages hold the operands of the bf16 attention products
// (kernels/cpu/attention_bf16-inl.h) as they are, so that attention reads them in place
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
// (kernels/cpu/attention_int8-inl.h) as they are: channel-major by quads of a head's
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

// How Attention multiplies q . k and the softmax weights with V (q8 codes
// are exact in every form; their scales multiply the f32 scores and the
// weights).
enum class AttentionMath : uint8_t {
  // f32 products: within f32 rounding of the exact result.
  kF32 = 0,
  // q, K, V and the weights rounded to bf16, products summed in f32: twice
  // the multiply-adds per instruction (vdpbf16ps). Each output moves by at
  // most 2^-8 max|v| from the weights' rounding, besides what the rounded
  // q, K, V change (docs/kernels.md). On the CPU only where cpu::AttentionBf16Available()
  // and head_dim is a multiple of 16; elsewhere kF32. For a q8 cache it
  // asks for kInt8 (cpu::AttentionMathFor).
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

}  // namespace pocket
