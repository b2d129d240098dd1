// Causal attention of query heads over the cached positions [0, len) of
// their kv head, with a single pass over K and V (online softmax): positions
// are scored in blocks of at most kScoreBlock; each block rescales the
// running sum and output by exp(old_max - new_max) and adds its
// exp(score - new_max) weighted V rows. Scores, exponentials (Highway's
// vector Exp) and the output accumulator are all f32.
//
// Every query row of one kv head passes over the cache together
// (AttendGroup); K is channel-major (ops.h), so a block's keys widen into a
// head_dim x positions tile with contiguous loads and scores come out a
// vector of positions at a time (AttentionMath::kBf16 makes the q . k and
// weighted-V products in bf16 instead: attention_bf16-inl.h). q8 codes widen
// like f16 values; their per-position scales multiply the block's scores and
// softmax weights, once per position instead of once per value.

#if defined(POCKET_KERNELS_CPU_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ATTENTION_INL_H_
#undef POCKET_KERNELS_CPU_ATTENTION_INL_H_
#else
#define POCKET_KERNELS_CPU_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "backends/cpu/ops.h"
#include "kernels/cpu/hints-inl.h"
#include "kernels/cpu/load-inl.h"
#include "util/fp16.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kScoreBlock = 64;

// Lanes of the vector at s + i that lie before `count`, as a mask.
template <class D>
HWY_INLINE hn::Mask<D> Before(D d, size_t i, size_t count) {
  return hn::FirstN(d, count > i ? count - i : 0);
}

// 2^t for t in [-125, 126]: 2^floor(t) added into the exponent bits of a
// degree-3 polynomial for 2^frac(t), within 1e-4 relative (a minimax fit
// on [0, 1); its value at 0 is just under 1, so t = -126 would leave the
// normal range). Half the operations of Highway's Exp, for the
// bf16 attention, whose softmax weights are then rounded to 8 bits.
template <class D>
HWY_INLINE hn::Vec<D> Exp2Coarse(D d, hn::Vec<D> t) {
  const hn::RebindToSigned<D> di;
  const auto whole = hn::Floor(t);
  const auto f = hn::Sub(t, whole);
  auto p = hn::MulAdd(hn::Set(d, 0.078024521f), f, hn::Set(d, 0.22606716f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.69583354f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.99992522f));
  return hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::ConvertTo(di, whole))));
}

// s[0, count) = exp(s * scale - max) in place and s[count, padded) = 0;
// returns the sum. padded is a multiple of d's lanes: a row's last partial
// vector goes through the vector exponential with its lanes past count
// selected away. (On the causal diagonal every row ends mid-vector; a
// scalar exp of those lanes took a sixth of the attention time of a
// prompt's first 64-token chunk.) kCoarse: Exp2Coarse instead of Highway's
// Exp; arguments below -86.6 (weights under 3e-38) then give 2^-125.
template <bool kCoarse, class D>
HWY_INLINE float ExpShifted(D d, float* HWY_RESTRICT s, size_t count, size_t padded, float scale,
                            float max) {
  const size_t N = hn::Lanes(d);
  constexpr float kLog2e = 1.44269504f;
  const auto vscale = hn::Set(d, kCoarse ? scale * kLog2e : scale);
  const auto vmax = hn::Set(d, kCoarse ? max * kLog2e : max);
  const auto exp_at = [&](size_t i) {
    const auto x = hn::MulSub(hn::LoadU(d, s + i), vscale, vmax);
    if constexpr (kCoarse) return Exp2Coarse(d, hn::Max(x, hn::Set(d, -125.0f)));
    return hn::Exp(d, x);
  };
  auto sum = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= count; i += N) {
    const auto e = exp_at(i);
    hn::StoreU(e, d, s + i);
    sum = hn::Add(sum, e);
  }
  for (; i < padded; i += N) {  // masked only here: whole vectors stay cheap
    const auto e = hn::IfThenElseZero(Before(d, i, count), exp_at(i));
    hn::StoreU(e, d, s + i);
    sum = hn::Add(sum, e);
  }
  return hn::GetLane(hn::SumOfLanes(d, sum));
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
// power of two; H is its own inverse). H_n = (H_m (x) I_N)(I_m (x) H_N) for
// n = m N, N the lanes of a vector of at most 8 floats: each run of N values
// is first multiplied by H_N (N broadcast multiply-adds with its +-1
// columns: no shuffles, so every target runs the same code), then the
// butterflies between runs N, 2N, ... apart take whole vectors. (A q8 cache
// rotates every query and output row: with the scalar butterfly, attention
// over a 512-token q8 prompt's last 64-token chunk took 12% longer.)
HWY_INLINE void Hadamard(float* HWY_RESTRICT x, size_t n) {
  const hn::CappedTag<float, 8> d;
  const size_t N = hn::Lanes(d);
  const float norm = 1.0f / std::sqrt(static_cast<float>(n));
  if (n < N) {  // shorter than a vector: the scalar butterfly
    for (size_t len = 1; len < n; len *= 2) {
      for (size_t i = 0; i < n; i += 2 * len) {
        for (size_t j = i; j < i + len; ++j) {
          const float a = x[j], b = x[j + len];
          x[j] = a + b;
          x[j + len] = a - b;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) x[i] *= norm;
    return;
  }
  // Column k of H_8 (unnormalized): lane j is (-1)^popcount(j & k); H_N for
  // N < 8 is its top-left corner.
  HWY_ALIGN static constexpr float kColumns[8][8] = {
      {1, 1, 1, 1, 1, 1, 1, 1},     {1, -1, 1, -1, 1, -1, 1, -1}, {1, 1, -1, -1, 1, 1, -1, -1},
      {1, -1, -1, 1, 1, -1, -1, 1}, {1, 1, 1, 1, -1, -1, -1, -1}, {1, -1, 1, -1, -1, 1, -1, 1},
      {1, 1, -1, -1, -1, -1, 1, 1}, {1, -1, -1, 1, -1, 1, 1, -1}};
  for (size_t r = 0; r < n; r += N) {
    auto acc = hn::Zero(d);
    for (size_t k = 0; k < N; ++k)
      acc = hn::MulAdd(hn::Set(d, x[r + k]), hn::Load(d, kColumns[k]), acc);
    hn::StoreU(acc, d, x + r);
  }
  for (size_t len = N; len < n; len *= 2) {
    for (size_t i = 0; i < n; i += 2 * len) {
      for (size_t j = i; j < i + len; j += N) {
        const auto a = hn::LoadU(d, x + j), b = hn::LoadU(d, x + j + len);
        hn::StoreU(hn::Add(a, b), d, x + j);
        hn::StoreU(hn::Sub(a, b), d, x + j + len);
      }
    }
  }
  const auto vnorm = hn::Set(d, norm);
  for (size_t i = 0; i < n; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vnorm), d, x + i);
}

// Calls f(T()) with the element type T of a cache of `type` (int8_t for
// q8): the kernels are templates on it.
template <class F>
HWY_INLINE void WithKvElement(KvType type, const F& f) {
  if (type == KvType::kF32) return f(float());
  if (type == KvType::kBf16) return f(hwy::bfloat16_t());
  if (type == KvType::kQ8) return f(int8_t());
  f(hwy::float16_t());
}

// Address of the first value of kv head `kv_offset / head_dim` of cache
// position t (ops.h's layouts; the head's next values follow every
// KvValueStride elements).
template <typename T>
HWY_INLINE const T* KvHeadRow(const KvView& kv, void* const* pages, size_t t, size_t kv_offset) {
  return static_cast<const T*>(pages[t / kv.page_tokens]) +
         KvElemIndex(kv, pages, t % kv.page_tokens, kv_offset);
}

// ---------------------------------------------------------------------------
// Grouped attention: the query rows that share one kv head (the GQA group of
// every token of a token block) pass over the cache together. Each block of
// positions is widened to f32 once into kb/vb and then serves every row.
// Rows go through a block in pairs, so each K or V vector loaded from kb/vb
// feeds two rows' multiply-adds, and a pair keeps its outputs in registers
// while it adds the block's weighted V rows.

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

// A bf16 cache's block (ops.h's pair layouts) widened into F32Block's kb
// (head_dim rows of kScoreBlock positions, zeros from count to padded) and vb
// (count rows of head_dim): each 32-bit word holds two values, the first in
// its low half, and a bf16 value is the upper half of its f32.
// k_stride: elements between pairs of channels; head_dim is even.
HWY_INLINE void WidenBf16Pairs(const hwy::bfloat16_t* HWY_RESTRICT k_block, size_t k_stride,
                               const hwy::bfloat16_t* HWY_RESTRICT v_block, size_t count,
                               size_t padded, size_t head_dim, float* HWY_RESTRICT kb,
                               float* HWY_RESTRICT vb) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const size_t N = hn::Lanes(du);
  const auto upper = hn::Set(du, 0xFFFF0000u);
  const auto first = [&](auto w) { return hn::BitCast(df, hn::ShiftLeft<16>(w)); };
  const auto second = [&](auto w) { return hn::BitCast(df, hn::And(w, upper)); };
  for (size_t c = 0; c < head_dim; c += 2) {
    const uint32_t* words = reinterpret_cast<const uint32_t*>(k_block + c / 2 * k_stride);
    for (size_t p = 0; p < padded; p += N) {  // padded lies within the page (ops.h)
      const auto keep = Before(df, p, count);
      const auto w = hn::LoadU(du, words + p);
      hn::StoreU(hn::IfThenElseZero(keep, first(w)), df, kb + c * kScoreBlock + p);
      hn::StoreU(hn::IfThenElseZero(keep, second(w)), df, kb + (c + 1) * kScoreBlock + p);
    }
  }
  for (size_t p = 0; p < count; p += 2) {
    const uint32_t* words = reinterpret_cast<const uint32_t*>(v_block + p * head_dim);
    const bool both = p + 1 < count;
    float* even = vb + p * head_dim;
    float* odd = even + head_dim;
    size_t c = 0;
    for (; c + N <= head_dim; c += N) {
      const auto w = hn::LoadU(du, words + c);
      hn::StoreU(first(w), df, even + c);
      if (both) hn::StoreU(second(w), df, odd + c);
    }
    for (; c < head_dim; ++c) {
      even[c] = BitsFloat(words[c] << 16);
      if (both) odd[c] = BitsFloat(words[c] & 0xFFFF0000u);
    }
  }
}

// A q8 cache's K block (ops.h's quads of channels) widened into F32Block's
// kb, zeros from count to padded. k_stride: elements between quads; slot:
// the block's first slot in its page (a narrower last quad, for a head_dim
// that is not a multiple of 4, takes fewer bytes per slot).
HWY_INLINE void WidenQuads(const int8_t* HWY_RESTRICT k_block, size_t k_stride, size_t count,
                           size_t padded, size_t head_dim, size_t slot, float* HWY_RESTRICT kb) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t N = hn::Lanes(di);
  // Channel k of each 32-bit word, sign-extended.
  const auto channel = [&](auto word, auto k) {
    return hn::ConvertTo(df, hn::ShiftRight<24>(hn::ShiftLeft<24 - 8 * decltype(k)::value>(word)));
  };
  for (size_t g = 0; g < head_dim; g += 4) {
    const size_t width = std::min<size_t>(4, head_dim - g);
    const int8_t* quad =
        k_block + g / 4 * k_stride - slot * (std::min<size_t>(4, head_dim) - width);
    float* rows = kb + g * kScoreBlock;
    size_t p = 0;
    for (; width == 4 && p + N <= count; p += N) {
      const auto word = hn::LoadU(di, reinterpret_cast<const int32_t*>(quad + 4 * p));
      hn::Store(channel(word, std::integral_constant<int, 0>()), df, rows + p);
      hn::Store(channel(word, std::integral_constant<int, 1>()), df, rows + kScoreBlock + p);
      hn::Store(channel(word, std::integral_constant<int, 2>()), df, rows + 2 * kScoreBlock + p);
      hn::Store(channel(word, std::integral_constant<int, 3>()), df, rows + 3 * kScoreBlock + p);
    }
    for (size_t k = 0; k < width; ++k) {
      for (size_t i = p; i < count; ++i) rows[k * kScoreBlock + i] = quad[i * width + k];
      for (size_t i = count; i < padded; ++i) rows[k * kScoreBlock + i] = 0.0f;
    }
  }
}

// q8 caches: s[0, count) = the f32 scales of kv head `kv_offset / head_dim`
// at positions [p0, p0 + count) of one page of `pages` (one f16 run, ops.h),
// s[count, padded) = 0.
HWY_INLINE void BlockScales(const KvView& kv, void* const* pages, size_t p0, size_t count,
                            size_t padded, size_t kv_offset, float* HWY_RESTRICT s) {
  const uint8_t* page = static_cast<const uint8_t*>(pages[p0 / kv.page_tokens]);
  const uint8_t* run = page + KvScaleOffset(kv, p0 % kv.page_tokens, kv_offset / kv.head_dim);
  WidenRun(reinterpret_cast<const hwy::float16_t*>(run), count, padded, s);
}

// x[0, padded) *= s[0, padded); padded is a multiple of d's lanes.
template <class D>
HWY_INLINE void MulRow(D d, float* HWY_RESTRICT x, const float* HWY_RESTRICT s, size_t padded) {
  for (size_t p = 0; p < padded; p += hn::Lanes(d)) {
    hn::Store(hn::Mul(hn::Load(d, x + p), hn::Load(d, s + p)), d, x + p);
  }
}

// Calls f(std::integral_constant<size_t, m>()) for m in [1, kMax]; nothing
// for 0. A Block's products are templates on the number of query rows that
// share each loaded K and V vector.
template <size_t kMax, class F>
HWY_INLINE void WithRowCount(size_t m, const F& f) {
  if (m == kMax) return f(std::integral_constant<size_t, kMax>());
  if constexpr (kMax > 1) WithRowCount<kMax - 1>(m, f);
}

// a_i += w * v_i for i < 4: one row's share of a step.
template <class V>
HWY_INLINE void MulAdd4(V w, V v0, V v1, V v2, V v3, V& a0, V& a1, V& a2, V& a3) {
  a0 = hn::MulAdd(w, v0, a0);
  a1 = hn::MulAdd(w, v1, a1);
  a2 = hn::MulAdd(w, v2, a2);
  a3 = hn::MulAdd(w, v3, a3);
}

template <class D, class V = hn::Vec<D>>
HWY_INLINE void Load4(D d, const float* HWY_RESTRICT p, V& a0, V& a1, V& a2, V& a3) {
  const size_t N = hn::Lanes(d);
  a0 = hn::LoadU(d, p);
  a1 = hn::LoadU(d, p + N);
  a2 = hn::LoadU(d, p + 2 * N);
  a3 = hn::LoadU(d, p + 3 * N);
}

// Load4 for vectors that feed several rows' multiply-adds: kept in registers.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void LoadShared4(D d, const float* HWY_RESTRICT p, V& a0, V& a1, V& a2, V& a3) {
  Load4(d, p, a0, a1, a2, a3);
  a0 = InRegister(a0);
  a1 = InRegister(a1);
  a2 = InRegister(a2);
  a3 = InRegister(a3);
}

// a[i] += w * p[i N .. (i + 1) N) for the 8 vectors from p: one row's
// 8 independent chains where a pair of rows has 2 x 4.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void MulAddLoad8(D d, V w, const float* HWY_RESTRICT p, V& a0, V& a1, V& a2, V& a3,
                            V& a4, V& a5, V& a6, V& a7) {
  const size_t N = hn::Lanes(d);
  MulAdd4(w, hn::LoadU(d, p), hn::LoadU(d, p + N), hn::LoadU(d, p + 2 * N), hn::LoadU(d, p + 3 * N),
          a0, a1, a2, a3);
  MulAdd4(w, hn::LoadU(d, p + 4 * N), hn::LoadU(d, p + 5 * N), hn::LoadU(d, p + 6 * N),
          hn::LoadU(d, p + 7 * N), a4, a5, a6, a7);
}

template <class D, class V = hn::Vec<D>>
HWY_INLINE void Store4(D d, V a0, V a1, V a2, V a3, float* HWY_RESTRICT p) {
  const size_t N = hn::Lanes(d);
  hn::StoreU(a0, d, p);
  hn::StoreU(a1, d, p + N);
  hn::StoreU(a2, d, p + 2 * N);
  hn::StoreU(a3, d, p + 3 * N);
}

// out[r][head_dim] += sum_p w[r][p] * vb[p, :] for p < count and kRows (1 or
// 2) rows, in chunks of 4 vectors per row held in registers across the
// positions: each loaded V vector serves every row.
template <size_t kRows, class D>
HWY_INLINE void AccumulateV(D d, const float* const* w, const float* HWY_RESTRICT vb, size_t count,
                            size_t head_dim, float* const* out) {
  static_assert(kRows == 1 || kRows == 2, "one or two rows");
  const size_t N = hn::Lanes(d);
  const float* HWY_RESTRICT w0 = w[0];
  const float* HWY_RESTRICT w1 = w[kRows - 1];
  size_t c = 0;
  if constexpr (kRows == 1) {
    // One row (a group's odd one) spans 8 vectors, so that 8 independent
    // multiply-adds cover the latency as two rows' 8 do (4 chains alone ran
    // at half the rate: FMA's latency is 4 cycles, its throughput 2 a cycle).
    for (; c + 8 * N <= head_dim; c += 8 * N) {
      auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
      Load4(d, out[0] + c, a0, a1, a2, a3);
      Load4(d, out[0] + c + 4 * N, a4, a5, a6, a7);
      for (size_t p = 0; p < count; ++p) {
        MulAddLoad8(d, hn::Set(d, w0[p]), vb + p * head_dim + c, a0, a1, a2, a3, a4, a5, a6, a7);
      }
      Store4(d, a0, a1, a2, a3, out[0] + c);
      Store4(d, a4, a5, a6, a7, out[0] + c + 4 * N);
    }
  }
  for (; c + 4 * N <= head_dim; c += 4 * N) {
    auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    Load4(d, out[0] + c, a0, a1, a2, a3);
    if constexpr (kRows == 2) Load4(d, out[1] + c, b0, b1, b2, b3);
    for (size_t p = 0; p < count; ++p) {
      auto v0 = hn::Zero(d), v1 = v0, v2 = v0, v3 = v0;
      LoadShared4(d, vb + p * head_dim + c, v0, v1, v2, v3);
      MulAdd4(hn::Set(d, w0[p]), v0, v1, v2, v3, a0, a1, a2, a3);
      if constexpr (kRows == 2) MulAdd4(hn::Set(d, w1[p]), v0, v1, v2, v3, b0, b1, b2, b3);
    }
    Store4(d, a0, a1, a2, a3, out[0] + c);
    if constexpr (kRows == 2) Store4(d, b0, b1, b2, b3, out[1] + c);
  }
  for (size_t r = 0; r < kRows; ++r) {  // head sizes that are not 4 vectors
    const float* HWY_RESTRICT wr = w[r];
    float* HWY_RESTRICT o = out[r];
    size_t cr = c;
    for (; cr + N <= head_dim; cr += N) {
      auto a = hn::LoadU(d, o + cr);
      for (size_t p = 0; p < count; ++p) {
        a = hn::MulAdd(hn::Set(d, wr[p]), hn::LoadU(d, vb + p * head_dim + cr), a);
      }
      hn::StoreU(a, d, o + cr);
    }
    for (; cr < head_dim; ++cr) {
      float a = o[cr];
      for (size_t p = 0; p < count; ++p) a += wr[p] * vb[p * head_dim + cr];
      o[cr] = a;
    }
  }
}

// scores[r][0, padded) = q[r] . kt[:, p] for kRows (1 or 2) rows: kt is
// head_dim rows of kScoreBlock positions (padded is a multiple of the vector
// length); each activation is broadcast against 4 vectors of positions, and
// each loaded K vector serves every row.
template <size_t kRows, class D>
HWY_INLINE void ScoresTransposed(D d, const float* const* q, const float* HWY_RESTRICT kt,
                                 size_t head_dim, size_t padded, float* const* scores) {
  static_assert(kRows == 1 || kRows == 2, "one or two rows");
  const size_t N = hn::Lanes(d);
  const float* HWY_RESTRICT q0 = q[0];
  const float* HWY_RESTRICT q1 = q[kRows - 1];
  size_t p = 0;
  if constexpr (kRows == 1) {  // 8 vectors of positions: AccumulateV's reason
    for (; p + 8 * N <= padded; p += 8 * N) {
      auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
      for (size_t c = 0; c < head_dim; ++c) {
        MulAddLoad8(d, hn::Set(d, q0[c]), kt + c * kScoreBlock + p, a0, a1, a2, a3, a4, a5, a6, a7);
      }
      Store4(d, a0, a1, a2, a3, scores[0] + p);
      Store4(d, a4, a5, a6, a7, scores[0] + p + 4 * N);
    }
  }
  for (; p + 4 * N <= padded; p += 4 * N) {
    auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (size_t c = 0; c < head_dim; ++c) {
      auto k0 = hn::Zero(d), k1 = k0, k2 = k0, k3 = k0;
      LoadShared4(d, kt + c * kScoreBlock + p, k0, k1, k2, k3);
      MulAdd4(hn::Set(d, q0[c]), k0, k1, k2, k3, a0, a1, a2, a3);
      if constexpr (kRows == 2) MulAdd4(hn::Set(d, q1[c]), k0, k1, k2, k3, b0, b1, b2, b3);
    }
    Store4(d, a0, a1, a2, a3, scores[0] + p);
    if constexpr (kRows == 2) Store4(d, b0, b1, b2, b3, scores[1] + p);
  }
  // Blocks that are not 4 vectors (a row's last, partial block): one vector
  // at a time, its channels spread over 4 accumulators so that the
  // multiply-adds do not wait on each other.
  for (; p < padded; p += N) {
    for (size_t r = 0; r < kRows; ++r) {
      const float* HWY_RESTRICT qr = q[r];
      const float* HWY_RESTRICT kp = kt + p;
      auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
      size_t c = 0;
      for (; c + 4 <= head_dim; c += 4) {
        a0 = hn::MulAdd(hn::Set(d, qr[c]), hn::LoadU(d, kp + c * kScoreBlock), a0);
        a1 = hn::MulAdd(hn::Set(d, qr[c + 1]), hn::LoadU(d, kp + (c + 1) * kScoreBlock), a1);
        a2 = hn::MulAdd(hn::Set(d, qr[c + 2]), hn::LoadU(d, kp + (c + 2) * kScoreBlock), a2);
        a3 = hn::MulAdd(hn::Set(d, qr[c + 3]), hn::LoadU(d, kp + (c + 3) * kScoreBlock), a3);
      }
      for (; c < head_dim; ++c) {
        a0 = hn::MulAdd(hn::Set(d, qr[c]), hn::LoadU(d, kp + c * kScoreBlock), a0);
      }
      hn::StoreU(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), d, scores[r] + p);
    }
  }
}

// How far a block's scaled scores may rise above a row's running max before
// the max moves. Until then the weights exp(score - max) stay below e^8
// (about 3000), far from f32's range even summed over the longest context,
// and the block skips the horizontal max, the rescale's scalar exp and its
// pass over the row's output; a higher score moves the max to the block's.
constexpr float kMaxSlack = 8.0f;

// Folds the raw scores[0, n) of one row (q . k, before the 1/sqrt(head_dim)
// scale) into its softmax state (running max and sum, output rescaled when
// the max moves) and turns them into weights; positions [n, padded) get
// weight 0, so a row paired with a longer one adds nothing there.
template <bool kCoarseExp, class D>
HWY_INLINE void SoftmaxBlock(D d, float* HWY_RESTRICT scores, size_t n, size_t padded, float scale,
                             size_t head_dim, float* HWY_RESTRICT max, float* HWY_RESTRICT sum,
                             float* HWY_RESTRICT out_row) {
  const size_t N = hn::Lanes(d);
  const auto lowest = hn::Set(d, -INFINITY);
  auto vmax = lowest;
  size_t p = 0;
  for (; p + N <= n; p += N) vmax = hn::Max(vmax, hn::Load(d, scores + p));
  if (p < n) vmax = hn::Max(vmax, hn::IfThenElse(Before(d, p, n), hn::Load(d, scores + p), lowest));
  // scale > 0: comparing score * scale with the limit needs no division.
  const float limit = *max + kMaxSlack;
  const bool rises = !hn::AllFalse(d, hn::Gt(hn::Mul(vmax, hn::Set(d, scale)), hn::Set(d, limit)));
  if (rises) {
    const float block_max = hn::GetLane(hn::MaxOfLanes(d, vmax)) * scale;
    const float new_max = std::max(*max, block_max);
    // exp(-inf) = 0 on the first block: nothing accumulated yet to rescale.
    const float correction = std::exp(*max - new_max);
    *sum *= correction;
    ScaleRow(out_row, correction, head_dim);
    *max = new_max;
  }
  *sum += ExpShifted<kCoarseExp>(d, scores, n, padded, scale, *max);
}

// The positions of the block that starts at p0: up to kScoreBlock, within
// one page and before `len`.
HWY_INLINE size_t BlockCount(const KvView& kv, size_t p0, size_t len) {
  return std::min({kScoreBlock, len - p0, kv.page_tokens - p0 % kv.page_tokens});
}

// The products of one position block in f32 (every target): the block is
// widened into kb (head_dim rows of kScoreBlock positions) and vb (one row
// of head_dim values per position), then scored and summed by the
// functions above. AttendGroup's other `Block` is attention_bf16-inl.h's.
struct F32Block {
  static constexpr bool kCoarseExp = false;  // f32 products, f32-accurate weights
  // Query rows that share each loaded K and V vector. Two halve the loads
  // per multiply-add and fit AVX2's 16 registers; four (where 32 registers
  // hold their 16 accumulators) measured no faster on Zen 4.
  static constexpr size_t kRows = 2;
  // Widen reads the whole block before its products, so AttendGroup asks
  // for the next block in shares between groups of rows instead.
  static constexpr bool kPacedPrefetch = false;
  const float* const* q_rows;
  float* kb;
  float* vb;

  HWY_INLINE void PrepareRows(size_t, size_t) {}

  template <typename T>
  HWY_INLINE void Widen(const T* HWY_RESTRICT k_block, size_t k_stride,
                        const T* HWY_RESTRICT v_block, size_t v_stride, size_t count, size_t padded,
                        size_t head_dim, size_t slot) {
    if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
      return WidenBf16Pairs(k_block, k_stride, v_block, count, padded, head_dim, kb, vb);
    } else if constexpr (std::is_same_v<T, int8_t>) {
      WidenQuads(k_block, k_stride, count, padded, head_dim, slot, kb);
    } else {
      for (size_t c = 0; c < head_dim; ++c) {
        WidenRun(k_block + c * k_stride, count, padded, kb + c * kScoreBlock);
      }
    }
    if (v_stride == head_dim) {
      WidenRun(v_block, count * head_dim, count * head_dim, vb);
    } else {
      for (size_t p = 0; p < count; ++p) {
        WidenRun(v_block + p * v_stride, head_dim, head_dim, vb + p * head_dim);
      }
    }
  }

  template <size_t kRows, class D>
  HWY_INLINE void Scores(D d, const size_t* take, size_t head_dim, size_t padded,
                         float* const* scores) const {
    const float* q[kRows];
    for (size_t r = 0; r < kRows; ++r) q[r] = q_rows[take[r]];
    ScoresTransposed<kRows>(d, q, kb, head_dim, padded, scores);
  }

  template <size_t kRows, class D>
  HWY_INLINE void AddWeightedV(D d, float* const* w, size_t count, size_t head_dim,
                               float* const* out) const {
    AccumulateV<kRows>(d, w, vb, count, head_dim, out);
  }
};

// Rows [0, rows) of one kv head: row i has query q_rows[i] (held by `block`)
// and attends the positions [0, lens[i]) that lie in [begin, end). With
// `normalize`, out_rows[i] (head_dim floats) is the softmax-weighted sum of
// V. Without, it is that sum scaled by s_sum[i], the sum of
// exp(score - s_max[i]): the state from which Attention merges a row's
// position ranges (a row with no positions in the range has s_max[i] = -inf,
// s_sum[i] = 0 and zeros). `Block` widens each block of positions and makes
// its products: F32Block, or the bf16 one where the CPU has it.
template <typename T, class Block>
HWY_INLINE void AttendGroup(Block& block, const size_t* lens, float* const* out_rows, size_t rows,
                            const KvView& kv, size_t kv_offset, size_t head_dim, float scale,
                            size_t begin, size_t end, bool normalize, float* s_max, float* s_sum) {
  const hn::CappedTag<float, 16> d;
  const size_t N = hn::Lanes(d);
  size_t max_len = 0;
  for (size_t i = 0; i < rows; ++i) {
    max_len = std::max(max_len, std::min(lens[i], end));
    s_max[i] = -INFINITY;
    s_sum[i] = 0.0f;
    std::fill(out_rows[i], out_rows[i] + head_dim, 0.0f);
  }
  block.PrepareRows(rows, head_dim);
  // Within a page, a head's K channels follow each other every k_stride
  // values (channel-major) and its V rows every v_stride values (head-major:
  // one contiguous run per block). bf16 pairs channels: its K rows (k_rows
  // of them) are pairs, k_stride apart, each position taking two values.
  // q8 groups K's channels by quads (k_rows quads, each word 4 codes).
  constexpr bool kPairs = std::is_same_v<T, hwy::bfloat16_t>;
  constexpr bool kScaled = std::is_same_v<T, int8_t>;
  constexpr size_t kWord = kPairs ? 2 : kScaled ? 4 : 1;  // K channels per position word
  const size_t k_stride = KvValueStride(kv, kv.k_pages);
  const size_t v_stride = KvHeadSize(kv);
  const size_t k_rows = (head_dim + kWord - 1) / kWord;
  constexpr size_t kPositionBytes = kWord * sizeof(T);
  HWY_ALIGN float scores[Block::kRows * kScoreBlock];
  // q8: the block's K and V scales (the codes widen as they are).
  HWY_ALIGN float k_scales[kScaled ? kScoreBlock : 1];
  HWY_ALIGN float v_scales[kScaled ? kScoreBlock : 1];
  for (size_t p0 = begin, count = 0; p0 < max_len; p0 += count) {
    count = BlockCount(kv, p0, max_len);
    const size_t padded = (count + N - 1) / N * N;
    if constexpr (kScaled) {
      BlockScales(kv, kv.k_pages, p0, count, padded, kv_offset, k_scales);
      BlockScales(kv, kv.v_pages, p0, count, padded, kv_offset, v_scales);
    }
    block.Widen(KvHeadRow<T>(kv, kv.k_pages, p0, kv_offset), k_stride,
                KvHeadRow<T>(kv, kv.v_pages, p0, kv_offset), v_stride, count, padded, head_dim,
                p0 % kv.page_tokens);
    // In a model the layer's cache was last read a token ago and comes from
    // DRAM, in runs the hardware prefetchers pick up late (a head's block is
    // 8 KB of K and 8 of V: alone, such runs read at 14 GB/s where long ones
    // read at 38). So the next block is requested while this one is used:
    // by the first group of rows' products, a line for each line they load,
    // where the Block reads the page in place (kPaced); else a share after
    // each group of rows. (All at once, while this block was widened, the
    // hints measured 3-4% slower decoding on one thread; a burst outruns
    // the core's miss buffers.)
    constexpr bool kPaced = Block::kPacedPrefetch && kWord > 1;
    const size_t next = p0 + count;
    const size_t next_count = next < max_len ? BlockCount(kv, next, max_len) : 0;
    const size_t shares = (rows + Block::kRows - 1) / Block::kRows;
    // The last block requests nothing.
    size_t share = next_count && !kPaced ? 0 : shares;
    bool pace = kPaced && next_count;
    const T* k_next = next_count ? KvHeadRow<T>(kv, kv.k_pages, next, kv_offset) : nullptr;
    const T* v_next = next_count ? KvHeadRow<T>(kv, kv.v_pages, next, kv_offset) : nullptr;
    const auto prefetch_share = [&] {
      if (share == shares) return;
      for (size_t c = k_rows * share / shares; c < k_rows * (share + 1) / shares; ++c) {
        PrefetchBytes(k_next + c * k_stride, next_count * kPositionBytes);
      }
      for (size_t p = next_count * share / shares; p < next_count * (share + 1) / shares; ++p) {
        PrefetchBytes(v_next + p * v_stride, head_dim * sizeof(T));
      }
      ++share;
    };
    // Rows that still attend this block go in groups of up to Block::kRows,
    // sharing each loaded K and V vector; a shorter row of a group has zero
    // weights past its end.
    for (size_t i = 0; i < rows;) {
      size_t take[Block::kRows];
      float* w[Block::kRows];
      float* o[Block::kRows];
      size_t m = 0, n = 0;
      for (; i < rows && m < Block::kRows; ++i) {
        if (lens[i] <= p0) continue;
        take[m] = i;
        w[m] = scores + m * kScoreBlock;
        o[m] = out_rows[i];
        n = std::max(n, std::min(count, lens[i] - p0));
        ++m;
      }
      const size_t pad = (n + N - 1) / N * N;
      const auto attend = [&](auto rows_together) {
        constexpr size_t kRows = decltype(rows_together)::value;
        block.template Scores<kRows>(d, take, head_dim, pad, w);
        for (size_t r = 0; r < kRows; ++r) {
          const size_t row = take[r];
          if constexpr (kScaled) MulRow(d, w[r], k_scales, pad);
          SoftmaxBlock<Block::kCoarseExp>(d, w[r], std::min(count, lens[row] - p0), pad, scale,
                                          head_dim, s_max + row, s_sum + row, o[r]);
          // The sum counts the weights; V's rows are code * scale.
          if constexpr (kScaled) MulRow(d, w[r], v_scales, pad);
        }
        block.template AddWeightedV<kRows>(d, w, n, head_dim, o);
      };
      if constexpr (kPaced) {
        block.PaceNext(pace ? k_next : nullptr, pace ? v_next : nullptr);
        pace = false;
      }
      WithRowCount<Block::kRows>(m, attend);
      prefetch_share();
    }
    while (share < shares) prefetch_share();  // rows that ended before p0
  }
  if (!normalize) return;
  for (size_t i = 0; i < rows; ++i) ScaleRow(out_rows[i], 1.0f / s_sum[i], head_dim);
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ATTENTION_INL_H_
