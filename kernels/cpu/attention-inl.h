// Causal attention of query heads over the cached positions [0, len) of
// their kv head, with a single pass over K and V (online softmax): positions
// are scored in blocks of at most kScoreBlock; each block rescales the
// running sum and output by exp(old_max - new_max) and adds its
// exp(score - new_max) weighted V rows. Scores, exponentials (Highway's
// vector Exp) and the output accumulator are all f32.
//
// f32/f16 caches (AttendGroup): every query row of one kv head passes over
// the cache together; K is channel-major (ops.h), so a block's keys widen
// into a head_dim x positions tile with contiguous loads and scores come out
// a vector of positions at a time. q8 caches (AttendHeadQ8): one query head
// at a time over token-major rows, the row scale multiplying the score or
// the softmax weight once per row instead of every value.

#if defined(POCKET_KERNELS_CPU_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ATTENTION_INL_H_
#undef POCKET_KERNELS_CPU_ATTENTION_INL_H_
#else
#define POCKET_KERNELS_CPU_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>

#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "backends/cpu/ops.h"
#include "kernels/cpu/load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kScoreBlock = 64;

// out[count] = exp(s[count] - max) in place; returns their sum.
HWY_INLINE float ExpShifted(float* HWY_RESTRICT s, size_t count, float max) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vmax = hn::Set(d, max);
  auto sum = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= count; i += N) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, s + i), vmax));
    hn::StoreU(e, d, s + i);
    sum = hn::Add(sum, e);
  }
  float total = hn::GetLane(hn::SumOfLanes(d, sum));
  for (; i < count; ++i) {
    s[i] = std::exp(s[i] - max);
    total += s[i];
  }
  return total;
}

// acc[count] *= scale.
HWY_INLINE void ScaleRow(float* HWY_RESTRICT acc, float scale, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, scale);
  size_t i = 0;
  for (; i + N <= count; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, acc + i), vs), d, acc + i);
  for (; i < count; ++i) acc[i] *= scale;
}

// x[n] = H x in place, H the orthonormal Walsh-Hadamard matrix of order n (a
// power of two; H is its own inverse), by the fast butterfly transform.
// Plain inline, not HWY_INLINE: attention.cc also calls it through
// HWY_STATIC_DISPATCH from code without the target's attributes, and GCC
// refuses to force-inline across them (aarch64: "target specific option
// mismatch").
inline void Hadamard(float* HWY_RESTRICT x, size_t n) {
  for (size_t len = 1; len < n; len *= 2) {
    for (size_t i = 0; i < n; i += 2 * len) {
      for (size_t j = i; j < i + len; ++j) {
        const float a = x[j], b = x[j + len];
        x[j] = a + b;
        x[j + len] = a - b;
      }
    }
  }
  const float norm = 1.0f / std::sqrt(static_cast<float>(n));
  for (size_t i = 0; i < n; ++i) x[i] *= norm;
}

// q8 codes widened to f32 lanes.
template <class D>
HWY_INLINE hn::Vec<D> LoadI8(D d, const int8_t* HWY_RESTRICT p) {
  const hn::RebindToSigned<D> di;
  return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(hn::Rebind<int8_t, D>(), p)));
}

// Sum of x[0, count) * codes[0, count) (the q8 row's scale is applied by the
// caller, once per row).
HWY_INLINE float Dot(const float* HWY_RESTRICT x, const int8_t* HWY_RESTRICT codes, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto acc = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= count; i += N) acc = hn::MulAdd(hn::LoadU(d, x + i), LoadI8(d, codes + i), acc);
  float sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < count; ++i) sum += x[i] * static_cast<float>(codes[i]);
  return sum;
}

// acc[count] += weight * codes[count].
HWY_INLINE void AddScaledRow(float* HWY_RESTRICT acc, float weight,
                             const int8_t* HWY_RESTRICT codes, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vw = hn::Set(d, weight);
  size_t i = 0;
  for (; i + N <= count; i += N) {
    hn::StoreU(hn::MulAdd(vw, LoadI8(d, codes + i), hn::LoadU(d, acc + i)), d, acc + i);
  }
  for (; i < count; ++i) acc[i] += weight * static_cast<float>(codes[i]);
}

// Address of the first value of kv head `kv_offset / head_dim` of cache
// position t (ops.h's layouts; the head's next values follow every
// KvValueStride elements).
template <typename T>
HWY_INLINE const T* KvHeadRow(const KvView& kv, void* const* pages, size_t t, size_t kv_offset) {
  return static_cast<const T*>(pages[t / kv.page_tokens]) +
         KvElemIndex(kv, pages, t % kv.page_tokens, kv_offset);
}

// The f16 scale of that head row of a q8 cache (ops.h gives the page layout).
HWY_INLINE float KvHeadScaleQ8(const KvView& kv, void* const* pages, size_t t, size_t kv_offset) {
  const uint8_t* page = static_cast<const uint8_t*>(pages[t / kv.page_tokens]);
  const size_t heads = kv.row_stride / kv.head_dim;
  return HalfAt(page + kv.page_tokens * kv.row_stride +
                ((t % kv.page_tokens) * heads + kv_offset / kv.head_dim) * 2);
}

// out[head_dim] = softmax(q . K[0, len) * scale) V[0, len) for one head of a
// q8 cache.
HWY_INLINE void AttendHeadQ8(const float* HWY_RESTRICT q, const KvView& kv, size_t len,
                             size_t kv_offset, size_t head_dim, float scale,
                             float* HWY_RESTRICT out) {
  float scores[kScoreBlock];
  float running_max = -INFINITY;
  float running_sum = 0.0f;
  std::fill(out, out + head_dim, 0.0f);
  for (size_t p0 = 0; p0 < len; p0 += kScoreBlock) {
    const size_t count = std::min(kScoreBlock, len - p0);
    float block_max = -INFINITY;
    for (size_t p = 0; p < count; ++p) {
      const size_t t = p0 + p;
      scores[p] = Dot(q, KvHeadRow<int8_t>(kv, kv.k_pages, t, kv_offset), head_dim) *
                  (KvHeadScaleQ8(kv, kv.k_pages, t, kv_offset) * scale);
      block_max = std::max(block_max, scores[p]);
    }
    const float new_max = std::max(running_max, block_max);
    // exp(-inf) = 0 on the first block: nothing accumulated yet to rescale.
    const float correction = std::exp(running_max - new_max);
    running_sum = running_sum * correction + ExpShifted(scores, count, new_max);
    if (correction != 1.0f) ScaleRow(out, correction, head_dim);
    for (size_t p = 0; p < count; ++p) {
      const size_t t = p0 + p;
      AddScaledRow(out, scores[p] * KvHeadScaleQ8(kv, kv.v_pages, t, kv_offset),
                   KvHeadRow<int8_t>(kv, kv.v_pages, t, kv_offset), head_dim);
    }
    running_max = new_max;
  }
  const float inv = 1.0f / running_sum;
  for (size_t j = 0; j < head_dim; ++j) out[j] *= inv;
}

// ---------------------------------------------------------------------------
// Grouped attention (f32 and f16 caches): the query rows that share one kv
// head (the GQA group of every token of a token block) pass over the cache
// together. Each block of positions is widened to f32 once into kb/vb and
// then serves every row; a row keeps its output in registers while it adds
// the block's weighted V rows.

// The widened K tile and V rows of one position block, and the rows' softmax
// state: kb, vb hold kScoreBlock * head_dim floats each; max, sum one float
// per row.
struct GroupScratch {
  float* kb;
  float* vb;
  float* max;
  float* sum;
};

// dst[0, count) = src[0, count) widened to f32, then zeros up to `padded`.
template <typename T>
HWY_INLINE void WidenRun(const T* HWY_RESTRICT src, size_t count, size_t padded,
                         float* HWY_RESTRICT dst) {
  const hn::CappedTag<float, 16> d;
  const size_t N = hn::Lanes(d);
  size_t p = 0;
  for (; p + N <= count; p += N) hn::StoreU(LoadF32(d, src + p), d, dst + p);
  for (; p < count; ++p) dst[p] = ScalarF32(src + p);
  for (; p < padded; ++p) dst[p] = 0.0f;
}

// Prefetches the `bytes` from p, one hint per cache line.
HWY_INLINE void PrefetchBytes(const void* p, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; i += 64) hwy::Prefetch(b + i);
}

// out_row[head_dim] += sum_p w[p] * vb[p, :] for p < count, in chunks of up
// to 4 vectors held in registers across the positions.
template <class D>
HWY_INLINE void AccumulateV(D d, const float* HWY_RESTRICT w, const float* HWY_RESTRICT vb,
                            size_t count, size_t head_dim, float* HWY_RESTRICT out_row) {
  const size_t N = hn::Lanes(d);
  size_t c = 0;
  for (; c + 4 * N <= head_dim; c += 4 * N) {
    auto a0 = hn::LoadU(d, out_row + c), a1 = hn::LoadU(d, out_row + c + N);
    auto a2 = hn::LoadU(d, out_row + c + 2 * N), a3 = hn::LoadU(d, out_row + c + 3 * N);
    for (size_t p = 0; p < count; ++p) {
      const auto wp = hn::Set(d, w[p]);
      const float* v = vb + p * head_dim + c;
      a0 = hn::MulAdd(wp, hn::LoadU(d, v), a0);
      a1 = hn::MulAdd(wp, hn::LoadU(d, v + N), a1);
      a2 = hn::MulAdd(wp, hn::LoadU(d, v + 2 * N), a2);
      a3 = hn::MulAdd(wp, hn::LoadU(d, v + 3 * N), a3);
    }
    hn::StoreU(a0, d, out_row + c);
    hn::StoreU(a1, d, out_row + c + N);
    hn::StoreU(a2, d, out_row + c + 2 * N);
    hn::StoreU(a3, d, out_row + c + 3 * N);
  }
  for (; c + N <= head_dim; c += N) {
    auto a = hn::LoadU(d, out_row + c);
    for (size_t p = 0; p < count; ++p) {
      a = hn::MulAdd(hn::Set(d, w[p]), hn::LoadU(d, vb + p * head_dim + c), a);
    }
    hn::StoreU(a, d, out_row + c);
  }
  for (; c < head_dim; ++c) {  // head sizes that are not whole vectors
    float a = out_row[c];
    for (size_t p = 0; p < count; ++p) a += w[p] * vb[p * head_dim + c];
    out_row[c] = a;
  }
}

// scores[0, padded) = (q * scale) . kt[:, p]: kt is head_dim rows of
// kScoreBlock positions (padded is a multiple of the vector length); each
// scaled activation is broadcast against up to 4 vectors of positions.
template <class D>
HWY_INLINE void ScoresTransposed(D d, const float* HWY_RESTRICT q, float scale,
                                 const float* HWY_RESTRICT kt, size_t head_dim, size_t padded,
                                 float* HWY_RESTRICT scores) {
  const size_t N = hn::Lanes(d);
  size_t p = 0;
  for (; p + 4 * N <= padded; p += 4 * N) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (size_t c = 0; c < head_dim; ++c) {
      const auto qc = hn::Set(d, q[c] * scale);
      const float* row = kt + c * kScoreBlock + p;
      a0 = hn::MulAdd(qc, hn::LoadU(d, row), a0);
      a1 = hn::MulAdd(qc, hn::LoadU(d, row + N), a1);
      a2 = hn::MulAdd(qc, hn::LoadU(d, row + 2 * N), a2);
      a3 = hn::MulAdd(qc, hn::LoadU(d, row + 3 * N), a3);
    }
    hn::StoreU(a0, d, scores + p);
    hn::StoreU(a1, d, scores + p + N);
    hn::StoreU(a2, d, scores + p + 2 * N);
    hn::StoreU(a3, d, scores + p + 3 * N);
  }
  for (; p < padded; p += N) {
    auto a = hn::Zero(d);
    for (size_t c = 0; c < head_dim; ++c) {
      a = hn::MulAdd(hn::Set(d, q[c] * scale), hn::LoadU(d, kt + c * kScoreBlock + p), a);
    }
    hn::StoreU(a, d, scores + p);
  }
}

// The positions of the block that starts at p0: up to kScoreBlock, within
// one page and before `len`.
HWY_INLINE size_t BlockCount(const KvView& kv, size_t p0, size_t len) {
  return std::min({kScoreBlock, len - p0, kv.page_tokens - p0 % kv.page_tokens});
}

// Rows [0, rows) of one kv head: row i has query q_rows[i], attends the
// positions [0, lens[i]) and writes out_rows[i] (all head_dim floats).
template <typename T>
HWY_INLINE void AttendGroup(const float* const* q_rows, const size_t* lens, float* const* out_rows,
                            size_t rows, const KvView& kv, size_t kv_offset, size_t head_dim,
                            float scale, const GroupScratch& s) {
  const hn::CappedTag<float, 16> d;
  const size_t N = hn::Lanes(d);
  size_t max_len = 0;
  for (size_t i = 0; i < rows; ++i) {
    max_len = std::max(max_len, lens[i]);
    s.max[i] = -INFINITY;
    s.sum[i] = 0.0f;
    std::fill(out_rows[i], out_rows[i] + head_dim, 0.0f);
  }
  // Within a page, a head's K channels follow each other every k_stride
  // values (channel-major) and its V rows every v_stride values (head-major:
  // one contiguous run per block).
  const size_t k_stride = KvValueStride(kv, kv.k_pages);
  const size_t v_stride = KvHeadSize(kv);
  HWY_ALIGN float scores[kScoreBlock];
  for (size_t p0 = 0, count = 0; p0 < max_len; p0 += count) {
    count = BlockCount(kv, p0, max_len);
    const size_t padded = (count + N - 1) / N * N;
    // In a model the layer's cache was last read a token ago and comes from
    // DRAM, in runs the hardware prefetchers pick up late: the next block's
    // runs are requested while this one is widened and scored.
    const size_t next = p0 + count;
    const size_t next_count = next < max_len ? BlockCount(kv, next, max_len) : 0;
    const T* k_block = KvHeadRow<T>(kv, kv.k_pages, p0, kv_offset);
    const T* k_next = next_count ? KvHeadRow<T>(kv, kv.k_pages, next, kv_offset) : nullptr;
    for (size_t c = 0; c < head_dim; ++c) {
      WidenRun(k_block + c * k_stride, count, padded, s.kb + c * kScoreBlock);
      if (k_next) PrefetchBytes(k_next + c * k_stride, next_count * sizeof(T));
    }
    const T* v_block = KvHeadRow<T>(kv, kv.v_pages, p0, kv_offset);
    if (v_stride == head_dim) {
      WidenRun(v_block, count * head_dim, count * head_dim, s.vb);
    } else {
      for (size_t p = 0; p < count; ++p) {
        WidenRun(v_block + p * v_stride, head_dim, head_dim, s.vb + p * head_dim);
      }
    }
    if (next_count) {
      const T* v_next = KvHeadRow<T>(kv, kv.v_pages, next, kv_offset);
      for (size_t p = 0; p < next_count; ++p) {
        PrefetchBytes(v_next + p * v_stride, head_dim * sizeof(T));
      }
    }
    for (size_t i = 0; i < rows; ++i) {
      if (lens[i] <= p0) continue;
      const size_t n = std::min(count, lens[i] - p0);
      ScoresTransposed(d, q_rows[i], scale, s.kb, head_dim, padded, scores);
      auto vmax = hn::Set(d, -INFINITY);
      size_t p = 0;
      for (; p + N <= n; p += N) vmax = hn::Max(vmax, hn::Load(d, scores + p));
      float block_max = hn::GetLane(hn::MaxOfLanes(d, vmax));
      for (; p < n; ++p) block_max = std::max(block_max, scores[p]);
      const float new_max = std::max(s.max[i], block_max);
      const float correction = std::exp(s.max[i] - new_max);
      s.sum[i] = s.sum[i] * correction + ExpShifted(scores, n, new_max);
      if (correction != 1.0f) ScaleRow(out_rows[i], correction, head_dim);
      AccumulateV(d, scores, s.vb, n, head_dim, out_rows[i]);
      s.max[i] = new_max;
    }
  }
  for (size_t i = 0; i < rows; ++i) ScaleRow(out_rows[i], 1.0f / s.sum[i], head_dim);
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ATTENTION_INL_H_
