// Causal attention of one query head over the cached positions [0, len) of
// its kv head, with a single pass over K and V (online softmax): positions
// are scored in blocks of kScoreBlock; each block rescales the running sum
// and output by exp(old_max - new_max) and adds its exp(score - new_max)
// weighted V rows. Scores, exponentials (Highway's vector Exp) and the output
// accumulator are all f32; K/V are read as stored and widened (f16), or as
// q8 codes whose row scale multiplies the score or the softmax weight once
// per row instead of every value.

#if defined(POCKET_KERNELS_CPU_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ATTENTION_INL_H_
#undef POCKET_KERNELS_CPU_ATTENTION_INL_H_
#else
#define POCKET_KERNELS_CPU_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "backends/cpu/ops.h"
#include "kernels/cpu/load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kScoreBlock = 64;
// Largest head the grouped kernel's scratch is sized for.
constexpr size_t kMaxGroupHeadDim = 256;

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

// acc[count] += weight * v[count] (v widened from T).
template <typename T>
HWY_INLINE void AddScaledRow(float* HWY_RESTRICT acc, float weight, const T* HWY_RESTRICT v,
                             size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vw = hn::Set(d, weight);
  size_t i = 0;
  for (; i + N <= count; i += N) {
    hn::StoreU(hn::MulAdd(vw, LoadF32(d, v + i), hn::LoadU(d, acc + i)), d, acc + i);
  }
  for (; i < count; ++i) acc[i] += weight * ScalarF32(v + i);
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

// Address of kv head `kv_offset / head_dim` of cache position t.
template <typename T>
HWY_INLINE const T* KvHeadRow(const KvView& kv, void* const* pages, size_t t, size_t kv_offset) {
  return static_cast<const T*>(pages[t / kv.page_tokens]) + (t % kv.page_tokens) * kv.row_stride +
         kv_offset;
}

// The factor that turns the stored values of that head row into f32: its
// f16 scale for q8 codes (ops.h gives the page layout), 1 otherwise.
template <typename T>
HWY_INLINE float KvHeadScale(const KvView& kv, void* const* pages, size_t t, size_t kv_offset) {
  if constexpr (std::is_same_v<T, int8_t>) {
    const uint8_t* page = static_cast<const uint8_t*>(pages[t / kv.page_tokens]);
    const size_t heads = kv.row_stride / kv.head_dim;
    return HalfAt(page + kv.page_tokens * kv.row_stride +
                  ((t % kv.page_tokens) * heads + kv_offset / kv.head_dim) * 2);
  } else {
    return 1.0f;
  }
}

// out[head_dim] = softmax(q . K[0, len) * scale) V[0, len) for one head.
template <typename T>
HWY_INLINE void AttendHead(const float* HWY_RESTRICT q, const KvView& kv, size_t len,
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
      scores[p] = Dot(q, KvHeadRow<T>(kv, kv.k_pages, t, kv_offset), head_dim) *
                  (KvHeadScale<T>(kv, kv.k_pages, t, kv_offset) * scale);
      block_max = std::max(block_max, scores[p]);
    }
    const float new_max = std::max(running_max, block_max);
    // exp(-inf) = 0 on the first block: nothing accumulated yet to rescale.
    const float correction = std::exp(running_max - new_max);
    running_sum = running_sum * correction + ExpShifted(scores, count, new_max);
    if (correction != 1.0f) ScaleRow(out, correction, head_dim);
    for (size_t p = 0; p < count; ++p) {
      const size_t t = p0 + p;
      AddScaledRow(out, scores[p] * KvHeadScale<T>(kv, kv.v_pages, t, kv_offset),
                   KvHeadRow<T>(kv, kv.v_pages, t, kv_offset), head_dim);
    }
    running_max = new_max;
  }
  const float inv = 1.0f / running_sum;
  for (size_t j = 0; j < head_dim; ++j) out[j] *= inv;
}

// ---------------------------------------------------------------------------
// Grouped attention (f32 and f16 caches): the query rows that share one kv
// head (the GQA group of every token of a token block) pass over the cache
// together. Each block of kScoreBlock positions is widened to f32 once into
// kb/vb and then serves every row; a row keeps its output in registers while
// it adds the block's weighted V rows. The arithmetic per row is that of
// AttendHead.

// The widened K and V rows of one position block, and the rows' softmax
// state: kb, vb hold kScoreBlock * head_dim floats each; max, sum one float
// per row.
struct GroupScratch {
  float* kb;
  float* vb;
  float* max;
  float* sum;
};

// Whether AttendGroup handles this head size: whole vectors of the tag it uses.
HWY_INLINE bool GroupHeadDimOk(size_t head_dim) {
  const hn::CappedTag<float, 16> d;
  return head_dim % hn::Lanes(d) == 0 && head_dim <= kMaxGroupHeadDim;
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
  for (; c < head_dim; c += N) {
    auto a = hn::LoadU(d, out_row + c);
    for (size_t p = 0; p < count; ++p) {
      a = hn::MulAdd(hn::Set(d, w[p]), hn::LoadU(d, vb + p * head_dim + c), a);
    }
    hn::StoreU(a, d, out_row + c);
  }
}

// Positions ahead whose K and V head rows AttendGroup prefetches. In a
// model the cache of a layer was last touched a whole token ago and comes
// from DRAM; a head row is 128 bytes every row_stride bytes, a pattern the
// hardware prefetchers follow poorly, and decode attention stalled on those
// loads (about 2.0 -> 1.7 ms of a pocket-0.3b token at 512-640 positions).
constexpr size_t kPrefetchAhead = 16;

template <typename T>
HWY_INLINE void PrefetchHeadRows(const KvView& kv, size_t t, size_t kv_offset, size_t head_dim) {
  const auto* k = reinterpret_cast<const uint8_t*>(KvHeadRow<T>(kv, kv.k_pages, t, kv_offset));
  const auto* v = reinterpret_cast<const uint8_t*>(KvHeadRow<T>(kv, kv.v_pages, t, kv_offset));
  for (size_t b = 0; b < head_dim * sizeof(T); b += 64) {  // one per cache line
    hwy::Prefetch(k + b);
    hwy::Prefetch(v + b);
  }
}

// Rows from which AttendGroup transposes K blocks.
constexpr size_t kTransposedRows = 16;

// scores[0, kScoreBlock) = q . kt[:, p]: kt is head_dim rows of kScoreBlock
// positions; each activation is broadcast against 4 vectors of positions.
template <class D>
HWY_INLINE void ScoresTransposed(D d, const float* HWY_RESTRICT q, const float* HWY_RESTRICT kt,
                                 size_t head_dim, float* HWY_RESTRICT scores) {
  const size_t N = hn::Lanes(d);
  for (size_t p = 0; p < kScoreBlock; p += 4 * N) {  // 4 N divides 64 on every target
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (size_t c = 0; c < head_dim; ++c) {
      const auto qc = hn::Set(d, q[c]);
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
}

// q . k over head_dim floats (whole vectors).
template <class D>
HWY_INLINE float DotF32(D d, const float* HWY_RESTRICT q, const float* HWY_RESTRICT k,
                        size_t head_dim) {
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d);
  size_t c = 0;
  for (; c + 2 * N <= head_dim; c += 2 * N) {
    a0 = hn::MulAdd(hn::LoadU(d, q + c), hn::LoadU(d, k + c), a0);
    a1 = hn::MulAdd(hn::LoadU(d, q + c + N), hn::LoadU(d, k + c + N), a1);
  }
  if (c < head_dim) a0 = hn::MulAdd(hn::LoadU(d, q + c), hn::LoadU(d, k + c), a0);
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
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
  // Many rows (a prefill task): K is stored transposed so scores come out
  // position-parallel with no reductions; the transposition is paid once per
  // block for all rows. Few rows (decode): a dot product per position.
  const bool transposed = rows >= kTransposedRows;
  HWY_ALIGN float scores[kScoreBlock];
  HWY_ALIGN float widened[kMaxGroupHeadDim];
  for (size_t p0 = 0; p0 < max_len; p0 += kScoreBlock) {
    const size_t count = std::min(kScoreBlock, max_len - p0);
    for (size_t p = 0; p < count; ++p) {
      const T* k = KvHeadRow<T>(kv, kv.k_pages, p0 + p, kv_offset);
      const T* v = KvHeadRow<T>(kv, kv.v_pages, p0 + p, kv_offset);
      if (p0 + p + kPrefetchAhead < max_len)
        PrefetchHeadRows<T>(kv, p0 + p + kPrefetchAhead, kv_offset, head_dim);
      // Transposed K goes through a widened row, scattered once for all the
      // task's rows.
      float* k_row = transposed ? widened : s.kb + p * head_dim;
      for (size_t c = 0; c < head_dim; c += N) {
        hn::StoreU(LoadF32(d, k + c), d, k_row + c);
        hn::StoreU(LoadF32(d, v + c), d, s.vb + p * head_dim + c);
      }
      if (transposed) {
        for (size_t c = 0; c < head_dim; ++c) s.kb[c * kScoreBlock + p] = widened[c];
      }
    }
    if (transposed && count < kScoreBlock) {  // the scores kernel reads whole columns
      for (size_t c = 0; c < head_dim; ++c) {
        std::fill(s.kb + c * kScoreBlock + count, s.kb + (c + 1) * kScoreBlock, 0.0f);
      }
    }
    for (size_t i = 0; i < rows; ++i) {
      if (lens[i] <= p0) continue;
      const size_t n = std::min(count, lens[i] - p0);
      float block_max = -INFINITY;
      if (transposed) ScoresTransposed(d, q_rows[i], s.kb, head_dim, scores);
      for (size_t p = 0; p < n; ++p) {
        scores[p] =
            (transposed ? scores[p] : DotF32(d, q_rows[i], s.kb + p * head_dim, head_dim)) * scale;
        block_max = std::max(block_max, scores[p]);
      }
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
