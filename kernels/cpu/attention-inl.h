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
#include <cstring>
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

// Whether this target widens f16 to f32 in hardware (F16C on AVX2 and
// later, Arm's FCVTL and SVE's FCVT), so that a load can convert as it goes.
#undef POCKET_F16_IN_LOADS
#if HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3 || HWY_TARGET == HWY_EMU128 || \
    HWY_TARGET == HWY_SCALAR || HWY_ARCH_ARM_V7
#define POCKET_F16_IN_LOADS 0
#else
#define POCKET_F16_IN_LOADS 1
#endif

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
// for 0. The products are templates on the number of query rows that share
// each loaded K and V vector, and on the vectors each row covers per step.
template <size_t kMax, class F>
HWY_INLINE void WithCount(size_t m, const F& f) {
  if (m == kMax) return f(std::integral_constant<size_t, kMax>());
  if constexpr (kMax > 1) WithCount<kMax - 1>(m, f);
}

// How many vectors of positions (q . k) or of channels (weighted V) each of
// kRows rows covers per step. The kRows x kStepVecs accumulators are at most
// 8, so they, the loaded vectors and a broadcast fit AVX2's 16 registers,
// and at least 5: FMA's latency is 4 cycles and its throughput 2 a cycle, so
// fewer independent chains would wait on it (one row's 4 chains ran at half
// the rate).
template <size_t kRows>
constexpr size_t kStepVecs = kRows == 1   ? 8
                             : kRows == 2 ? 4
                             : kRows <= 4 ? 2
                                          : 1;

// v_i, for a compile-time i < 8. (Highway's SVE vectors are sizeless: no
// arrays of them, so a step's vectors and sums are named.)
template <size_t i, class V>
HWY_INLINE V Pick(V v0, V v1, V v2, V v3, V v4, V v5, V v6, V v7) {
  if constexpr (i == 0) return v0;
  if constexpr (i == 1) return v1;
  if constexpr (i == 2) return v2;
  if constexpr (i == 3) return v3;
  if constexpr (i == 4) return v4;
  if constexpr (i == 5) return v5;
  if constexpr (i == 6) return v6;
  if constexpr (i == 7) return v7;
}

// f(std::integral_constant<size_t, i>(), a_i) for i < n (n <= 8).
template <size_t n, class F, class V>
HWY_INLINE void ForEachSum(const F& f, V& a0, V& a1, V& a2, V& a3, V& a4, V& a5, V& a6, V& a7) {
  if constexpr (n > 0) f(std::integral_constant<size_t, 0>(), a0);
  if constexpr (n > 1) f(std::integral_constant<size_t, 1>(), a1);
  if constexpr (n > 2) f(std::integral_constant<size_t, 2>(), a2);
  if constexpr (n > 3) f(std::integral_constant<size_t, 3>(), a3);
  if constexpr (n > 4) f(std::integral_constant<size_t, 4>(), a4);
  if constexpr (n > 5) f(std::integral_constant<size_t, 5>(), a5);
  if constexpr (n > 6) f(std::integral_constant<size_t, 6>(), a6);
  if constexpr (n > 7) f(std::integral_constant<size_t, 7>(), a7);
}

// One step of kRows rows by kVecs vectors (kRows kVecs <= 8): sum
// a_(r kVecs + v) += x[r][j] * y[v N .. (v + 1) N), y widened to f32, so
// each loaded vector serves every row and each row's broadcast every vector.
template <size_t kRows, size_t kVecs, class D, typename T, class V = hn::Vec<D>>
HWY_INLINE void RowsStep(D d, const float* const* x, size_t j, const T* HWY_RESTRICT y, V& a0,
                         V& a1, V& a2, V& a3, V& a4, V& a5, V& a6, V& a7) {
  static_assert(kRows * kVecs <= 8, "at most 8 sums");
  const size_t N = hn::Lanes(d);
  // A vector shared by rows stays in a register; one row's fold into its
  // multiply-adds.
  const auto load = [&](auto v) -> V {
    if constexpr (decltype(v)::value >= kVecs) {
      return hn::Zero(d);
    } else {
      const V y_v = LoadF32(d, y + decltype(v)::value * N);
      return kRows > 1 ? InRegister(y_v) : y_v;
    }
  };
  const V y0 = load(std::integral_constant<size_t, 0>());
  const V y1 = load(std::integral_constant<size_t, 1>());
  const V y2 = load(std::integral_constant<size_t, 2>());
  const V y3 = load(std::integral_constant<size_t, 3>());
  const V y4 = load(std::integral_constant<size_t, 4>());
  const V y5 = load(std::integral_constant<size_t, 5>());
  const V y6 = load(std::integral_constant<size_t, 6>());
  const V y7 = load(std::integral_constant<size_t, 7>());
  ForEachSum<kRows * kVecs>(
      [&](auto i, V& a) {
        constexpr size_t kI = decltype(i)::value;
        a = hn::MulAdd(hn::Set(d, x[kI / kVecs][j]),
                       Pick<kI % kVecs>(y0, y1, y2, y3, y4, y5, y6, y7), a);
      },
      a0, a1, a2, a3, a4, a5, a6, a7);
}

// The paced prefetch of a Block read in place: each step asks for the
// lines at its place in the next block (same layout), those that start in
// bytes [begin, end) of each of the next block's runs, `stride` bytes apart.
struct PacedLines {
  const uint8_t* next = nullptr;
  size_t stride = 0;
  size_t begin = 0;
  size_t end = 0;

  // For a step over elements [at, at + count) of each run of type T, runs
  // `stride` elements apart; none where next is null.
  template <typename T>
  static PacedLines For(const T* next, size_t stride, size_t at, size_t count) {
    if (next == nullptr) return {};
    return {reinterpret_cast<const uint8_t*>(next), stride * sizeof(T),
            (at * sizeof(T) + 63) / 64 * 64, (at + count) * sizeof(T)};
  }
  // The hints for run i.
  HWY_INLINE void Ask(size_t i) const {
    for (size_t b = begin; b < end; b += 64) hwy::Prefetch(next + i * stride + b);
  }
};

// scores[r][0, padded) = q[r] . k[:, p] for kRows (1 to 8) rows: channel c
// of position p is k[c * k_stride + p], read up to `padded` (a multiple of
// the vector length, within what may be read); each loaded K vector serves
// every row. next_k: the next block's K, its channels next_stride apart,
// paced (PacedLines), or null.
template <size_t kRows, class D, typename T>
HWY_INLINE void ScoreRows(D d, const float* const* q, const T* HWY_RESTRICT k, size_t k_stride,
                          size_t head_dim, size_t padded, float* const* scores, const T* next_k,
                          size_t next_stride) {
  using V = hn::Vec<D>;
  const size_t N = hn::Lanes(d);
  constexpr size_t kVecs = kStepVecs<kRows>;
  size_t p = 0;
  while (p < padded) {
    // A block's last vectors may be fewer than a step's.
    WithCount<kVecs>(std::min(kVecs, (padded - p) / N), [&](auto step_vecs) {
      constexpr size_t kV = decltype(step_vecs)::value;
      V a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
      const PacedLines hints = PacedLines::For(next_k, next_stride, p, kV * N);
      for (size_t c = 0; c < head_dim; ++c) {
        hints.Ask(c);
        RowsStep<kRows, kV>(d, q, c, k + c * k_stride + p, a0, a1, a2, a3, a4, a5, a6, a7);
      }
      ForEachSum<kRows * kV>(
          [&](auto i, V& a) {
            constexpr size_t kI = decltype(i)::value;
            hn::StoreU(a, d, scores[kI / kV] + p + kI % kV * N);
          },
          a0, a1, a2, a3, a4, a5, a6, a7);
      p += kV * N;
    });
  }
}

// out[r][0, head_dim) += sum_p w[r][p] * v[p * v_stride + (0, head_dim)]
// for p < count and kRows (1 to 8) rows: each loaded V vector serves every
// row, whose sums stay in registers across the positions. next_v: as
// ScoreRows' next_k.
template <size_t kRows, class D, typename T>
HWY_INLINE void AccumulateRows(D d, const float* const* w, const T* HWY_RESTRICT v, size_t v_stride,
                               size_t count, size_t head_dim, float* const* out, const T* next_v) {
  using V = hn::Vec<D>;
  const size_t N = hn::Lanes(d);
  constexpr size_t kVecs = kStepVecs<kRows>;
  size_t c = 0;
  while (c + N <= head_dim) {
    WithCount<kVecs>(std::min(kVecs, (head_dim - c) / N), [&](auto step_vecs) {
      constexpr size_t kV = decltype(step_vecs)::value;
      V a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
      const auto at = [&](size_t i) { return out[i / kV] + c + i % kV * N; };
      ForEachSum<kRows * kV>([&](auto i, V& a) { a = hn::LoadU(d, at(decltype(i)::value)); }, a0,
                             a1, a2, a3, a4, a5, a6, a7);
      const PacedLines hints = PacedLines::For(next_v, v_stride, c, kV * N);
      for (size_t p = 0; p < count; ++p) {
        hints.Ask(p);
        RowsStep<kRows, kV>(d, w, p, v + p * v_stride + c, a0, a1, a2, a3, a4, a5, a6, a7);
      }
      ForEachSum<kRows * kV>([&](auto i, V& a) { hn::StoreU(a, d, at(decltype(i)::value)); }, a0,
                             a1, a2, a3, a4, a5, a6, a7);
      c += kV * N;
    });
  }
  for (size_t r = 0; r < kRows; ++r) {  // channels past the last whole vector
    for (size_t cr = c; cr < head_dim; ++cr) {
      float a = out[r][cr];
      for (size_t p = 0; p < count; ++p) a += w[r][p] * ScalarF32(v + p * v_stride + cr);
      out[r][cr] = a;
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

// The products of one position block in f32 (every target), by ScoreRows
// and AccumulateRows. An f32 or f16 cache is read in place (K channel-major,
// V position-major: ops.h), and its products ask for the next block as they
// go. A bf16 cache's pairs and a q8 cache's quads are first widened into kb
// (head_dim rows of kScoreBlock positions) and vb (one row of head_dim
// values per position); AttendGroup then asks for the next block in shares
// between groups of rows. AttendGroup's other Blocks are in
// attention_bf16-inl.h and attention_int8-inl.h.
template <typename T>
struct F32Block {
  static constexpr bool kCoarseExp = false;  // f32 products, f32-accurate weights
  // In place: f32, and f16 where the target converts it in the load (F16C,
  // Arm's FCVTL); SSE4's software conversion is paid once per block instead
  // (in place, it made a decode step 1.6x slower).
  static constexpr bool kInPlace =
      std::is_same_v<T, float> || (std::is_same_v<T, hwy::float16_t> && POCKET_F16_IN_LOADS);
  // Query rows that share each loaded K and V vector (kStepVecs). In place,
  // 4 rows by 2 vectors convert each K and V vector once for 4 rows: on
  // AVX2 a decode step (ops_bench AttentionDecode, 7 rows over 512 f16
  // positions) took 0.78 of the time of the widened block in pairs, a
  // 64-token prompt chunk 0.91-0.93 (8 rows by 1 vector: 0.78 and 1.13, as each
  // step loads a broadcast per multiply-add). A widened block keeps the
  // pairs by 4 vectors, the fewest loads per multiply-add (4 rows by 2
  // vectors were 3-6% slower there).
  static constexpr size_t kRows = kInPlace ? 4 : 2;
  template <typename>
  static constexpr bool kPacedPrefetch = kInPlace;
  using Elem = std::conditional_t<kInPlace, T, float>;
  const float* const* q_rows;
  float* kb;
  float* vb;
  // The current block: channel c of position p at k[c * k_stride + p],
  // position p's values from v[p * v_stride].
  const Elem* k = nullptr;
  size_t k_stride = kScoreBlock;
  const Elem* v = nullptr;
  size_t v_stride = 0;
  const Elem* next_k = nullptr;  // the next block, while its lines are asked for
  const Elem* next_v = nullptr;
  size_t page_k_stride = 0;  // between the K channels of a page (and of next_k)

  HWY_INLINE void PrepareRows(size_t, size_t) {}

  HWY_INLINE void PaceNext(const void* k_block, const void* v_block) {
    next_k = static_cast<const Elem*>(k_block);
    next_v = static_cast<const Elem*>(v_block);
  }

  HWY_INLINE void Widen(const T* HWY_RESTRICT k_block, size_t k_block_stride,
                        const T* HWY_RESTRICT v_block, size_t v_block_stride, size_t count,
                        size_t padded, size_t head_dim, size_t slot) {
    page_k_stride = k_block_stride;
    if constexpr (kInPlace) {
      v = v_block;
      v_stride = v_block_stride;
      // A channel's run in the page is the K stride long (ops.h's layout).
      if (slot + padded <= k_block_stride) {
        k = k_block;
        k_stride = k_block_stride;
        return;
      }
      // The block's whole vectors of positions would run past the page's
      // run of a channel (a segment that starts mid-vector, or pages of a
      // token count that is not a multiple of the vector): K is copied into
      // kb, zeros from count to padded.
      T* runs = reinterpret_cast<T*>(kb);
      for (size_t c = 0; c < head_dim; ++c) {
        std::memcpy(runs + c * kScoreBlock, k_block + c * k_block_stride, count * sizeof(T));
        std::memset(runs + c * kScoreBlock + count, 0, (padded - count) * sizeof(T));
      }
      k = runs;
      k_stride = kScoreBlock;
    } else {
      k = kb;
      v = vb;
      v_stride = head_dim;
      if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
        return WidenBf16Pairs(k_block, k_block_stride, v_block, count, padded, head_dim, kb, vb);
      } else if constexpr (std::is_same_v<T, int8_t>) {
        WidenQuads(k_block, k_block_stride, count, padded, head_dim, slot, kb);
      } else {
        for (size_t c = 0; c < head_dim; ++c) {
          WidenRun(k_block + c * k_block_stride, count, padded, kb + c * kScoreBlock);
        }
      }
      if (v_block_stride == head_dim) {
        return WidenRun(v_block, count * head_dim, count * head_dim, vb);
      }
      for (size_t p = 0; p < count; ++p) {
        WidenRun(v_block + p * v_block_stride, head_dim, head_dim, vb + p * head_dim);
      }
    }
  }

  template <size_t kRows, class D>
  HWY_INLINE void Scores(D d, const size_t* take, size_t head_dim, size_t padded,
                         float* const* scores) const {
    const float* q[kRows];
    for (size_t r = 0; r < kRows; ++r) q[r] = q_rows[take[r]];
    ScoreRows<kRows>(d, q, k, k_stride, head_dim, padded, scores, next_k, page_k_stride);
  }

  template <size_t kRows, class D>
  HWY_INLINE void AddWeightedV(D d, float* const* w, size_t count, size_t head_dim,
                               float* const* out) const {
    AccumulateRows<kRows>(d, w, v, v_stride, count, head_dim, out, next_v);
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
    constexpr bool kPaced = Block::template kPacedPrefetch<T>;
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
      WithCount<Block::kRows>(m, attend);
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
