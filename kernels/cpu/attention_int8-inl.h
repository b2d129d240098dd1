// Attention's q . k products in int8, for q8 caches (AttentionMath::kInt8)
// on every target with an int8 dot product (int8_dot-inl.h): AttendGroup's
// third Block (attention-inl.h). Each query row is quantized once per call
// to int8 codes with one scale (max|q| / 127, in the basis the cache's rows
// are stored in), so a position's score is the integer sum of the code
// products times the row's scale (and, in AttendGroup, the position's K
// scale). q8 K pages hold a position's channels in quads (ops.h), the
// operand order of the 4-byte dot products (dpbusd, sdot), so blocks are
// read in place, at half a bf16 cache's bytes; the next block is asked for
// line by line as this one is read (Bf16Block's pacing). The weighted sum
// of V widens each code to f32 in registers, once for all the rows of a
// group, and multiplies it with the softmax weights, which carry V's scales.
//
// Against f32 products of the same codes, a score moves by at most
// sum_c |k_c| * scale_q / 2 (the query's rounding), the error q8's own
// rounding of K already makes; weights and outputs stay f32.

#if defined(POCKET_KERNELS_CPU_ATTENTION_INT8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ATTENTION_INT8_INL_H_
#undef POCKET_KERNELS_CPU_ATTENTION_INT8_INL_H_
#else
#define POCKET_KERNELS_CPU_ATTENTION_INT8_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <hwy/highway.h>

#include "kernels/cpu/attention-inl.h"
#include "kernels/cpu/int8_dot-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if POCKET_INT8_DOT

// vpdpwssd (int16 pairs into int32 lanes), which Highway 1.0.3 has no op
// for, where the target has it: AVX3_DL (AVX512-VNNI) on 512-bit vectors,
// AVX2_VNNI (int8_avx_vnni.cc) on 256-bit ones. A pass takes kPairChannels
// channels: two halves, each widened to int16 and interleaved with the next
// position's; PairFirst / PairSecond put two such vectors' int32 sums back
// in channel order.
#undef POCKET_INT16_PAIRS
#if HWY_TARGET == HWY_AVX3_DL
#define POCKET_INT16_PAIRS 1
using PairVector = __m512i;
constexpr size_t kPairChannels = 64;
HWY_INLINE __m512i PairZero() { return _mm512_setzero_si512(); }
HWY_INLINE __m512i PairWiden(const int8_t* p) {
  return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
HWY_INLINE __m512i PairLow(__m512i a, __m512i b) { return _mm512_unpacklo_epi16(a, b); }
HWY_INLINE __m512i PairHigh(__m512i a, __m512i b) { return _mm512_unpackhi_epi16(a, b); }
HWY_INLINE __m512i PairSet(int32_t pair) { return _mm512_set1_epi32(pair); }
HWY_INLINE __m512i PairDot(__m512i acc, __m512i v, __m512i w) {
  return _mm512_dpwssd_epi32(acc, v, w);
}
// 64-bit lanes: 128-bit lane k of lo (channels 8k .. 8k+3) then of hi
// (8k+4 .. 8k+7), for k = 0, 1 (First) and 2, 3 (Second).
HWY_INLINE __m512i PairFirst(__m512i lo, __m512i hi) {
  return _mm512_permutex2var_epi64(lo, _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), hi);
}
HWY_INLINE __m512i PairSecond(__m512i lo, __m512i hi) {
  return _mm512_permutex2var_epi64(lo, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), hi);
}
#elif defined(POCKET_INT8_AVX_VNNI)
#define POCKET_INT16_PAIRS 1
using PairVector = __m256i;
constexpr size_t kPairChannels = 32;
HWY_INLINE __m256i PairZero() { return _mm256_setzero_si256(); }
HWY_INLINE __m256i PairWiden(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
HWY_INLINE __m256i PairLow(__m256i a, __m256i b) { return _mm256_unpacklo_epi16(a, b); }
HWY_INLINE __m256i PairHigh(__m256i a, __m256i b) { return _mm256_unpackhi_epi16(a, b); }
HWY_INLINE __m256i PairSet(int32_t pair) { return _mm256_set1_epi32(pair); }
HWY_INLINE __m256i PairDot(__m256i acc, __m256i v, __m256i w) {
  return _mm256_dpwssd_avx_epi32(acc, v, w);
}
HWY_INLINE __m256i PairFirst(__m256i lo, __m256i hi) {
  return _mm256_permute2x128_si256(lo, hi, 0x20);
}
HWY_INLINE __m256i PairSecond(__m256i lo, __m256i hi) {
  return _mm256_permute2x128_si256(lo, hi, 0x31);
}
#else
#define POCKET_INT16_PAIRS 0
#endif

struct Int8Block {
  // Exp2Coarse (1e-4 relative): the weights are then rounded to 15 bits of
  // the block's largest (AVX3_DL) or meet q8 codes.
  static constexpr bool kCoarseExp = true;
  // Query rows that share each loaded K and V vector: where 32 registers
  // hold 4 rows' 16 accumulators beside the 4 loaded vectors, 4; else 2.
  // (SVE's sizeless vectors cannot form those arrays: it takes one vector
  // of one row at a time, 2 rows a group.)
  static constexpr size_t kRows = HWY_HAVE_SCALABLE                          ? 2
                                  : (HWY_ARCH_ARM || HWY_TARGET <= HWY_AVX3) ? 4
                                                                             : 2;
  template <typename>
  static constexpr bool kPacedPrefetch = true;
#if defined(POCKET_INT8_DPBUSD)
  // dpbusd multiplies unsigned by signed bytes: K's codes go in as k + 128
  // (one xor per loaded vector, for all the rows), and each row's sums lose
  // 128 * (its codes' sum) again (q_bias).
  static constexpr bool kBiasedK = true;
#else
  static constexpr bool kBiasedK = false;
#endif
  const float* const* q_rows;
  int8_t* q_codes;  // head_dim per row
  float* q_scales;  // one per row
  int32_t* q_bias;  // one per row (kBiasedK)
  // The current block: K quad g of position p at k_quads[g * k_quad_stride
  // + 4 p], V channel c of position p at v_rows[p * head_dim + c].
  const int8_t* k_quads = nullptr;
  size_t k_quad_stride = 0;
  const int8_t* v_rows = nullptr;
  const int8_t* next_k = nullptr;
  const int8_t* next_v = nullptr;

  HWY_INLINE void PaceNext(const void* k_block, const void* v_block) {
    next_k = static_cast<const int8_t*>(k_block);
    next_v = static_cast<const int8_t*>(v_block);
  }

  // code = round(q * 127 / max|q|) (to nearest even), scale = max|q| / 127
  // (0 and all codes 0 for a zero row).
  void PrepareRows(size_t rows, size_t head_dim) {
    const hn::CappedTag<float, 16> d;
    const hn::RebindToSigned<decltype(d)> di;
    const hn::Rebind<int8_t, decltype(d)> d8;
    const size_t N = hn::Lanes(d);
    const size_t whole = head_dim / N * N;
    for (size_t r = 0; r < rows; ++r) {
      const float* x = q_rows[r];
      int8_t* codes = q_codes + r * head_dim;
      auto vmax = hn::Zero(d);
      for (size_t c = 0; c < whole; c += N) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(d, x + c)));
      float max = hn::GetLane(hn::MaxOfLanes(d, vmax));
      for (size_t c = whole; c < head_dim; ++c) max = std::max(max, std::fabs(x[c]));
      const float inv = max > 0.0f ? 127.0f / max : 0.0f;
      const auto vinv = hn::Set(d, inv);
      const auto lo = hn::Set(di, -127), hi = hn::Set(di, 127);
      auto vsum = hn::Zero(di);
      for (size_t c = 0; c < whole; c += N) {
        const auto code =
            hn::Min(hn::Max(hn::NearestInt(hn::Mul(hn::LoadU(d, x + c), vinv)), lo), hi);
        hn::StoreU(hn::DemoteTo(d8, code), d8, codes + c);
        vsum = hn::Add(vsum, code);
      }
      int32_t sum = hn::GetLane(hn::SumOfLanes(di, vsum));
      for (size_t c = whole; c < head_dim; ++c) {
        const float code = std::clamp(std::nearbyint(x[c] * inv), -127.0f, 127.0f);
        codes[c] = static_cast<int8_t>(code);
        sum += static_cast<int32_t>(code);
      }
      q_scales[r] = max / 127.0f;
      q_bias[r] = kBiasedK ? 128 * sum : 0;
    }
  }

  // Reads the block in place (T is int8_t: Attention sends no other cache
  // here). k_stride: elements between K's quads.
  template <typename T>
  HWY_INLINE void Widen(const T* HWY_RESTRICT k_block, size_t k_stride,
                        const T* HWY_RESTRICT v_block, size_t, size_t, size_t, size_t, size_t) {
    static_assert(std::is_same_v<T, int8_t>, "q8 caches only");
    k_quads = k_block;
    k_quad_stride = k_stride;
    v_rows = v_block;
  }

  // One K vector of quads as the dot product's first operand.
  template <class D8>
  static HWY_INLINE hn::Vec<D8> LoadK(D8 d8, const int8_t* p) {
    const auto k = hn::LoadU(d8, p);
    return kBiasedK ? hn::Xor(k, hn::Set(d8, static_cast<int8_t>(-128))) : k;
  }

  template <class V8, class V32>
  static HWY_INLINE V32 Dot(V8 k, V8 q, V32 acc) {
#if defined(POCKET_INT8_DPBUSD)
    return DotU7(hn::BitCast(hn::RebindToUnsigned<hn::DFromV<V8>>(), k), q, acc);
#else
    return DotS8(k, q, acc);
#endif
  }

  // A row's 4 query codes from channel 4 g, in every 32-bit lane.
  template <class D8>
  static HWY_INLINE hn::Vec<D8> QuadOf(D8 d8, const int8_t* codes, size_t g) {
    int32_t word;
    std::memcpy(&word, codes + 4 * g, 4);
    return hn::BitCast(d8, hn::Set(hn::Repartition<int32_t, D8>(), word));
  }

  // scores[r][0, padded) = q[take[r]] . k for kRows rows (head_dim a
  // multiple of 4): 4 vectors of positions at a time while they last, each
  // loaded K vector serving every row.
  template <size_t kRows, class D>
  HWY_INLINE void Scores(D d, const size_t* take, size_t head_dim, size_t padded,
                         float* const* scores) const {
    const hn::RebindToSigned<D> di;
    const hn::Repartition<int8_t, decltype(di)> d8;
    const size_t N = hn::Lanes(di);
    const size_t quads = head_dim / 4;
    const int8_t* q[kRows];
    for (size_t r = 0; r < kRows; ++r) q[r] = q_codes + take[r] * head_dim;
    const auto finish = [&](size_t r, hn::Vec<decltype(di)> sums, size_t p) {
      const auto exact = hn::Sub(sums, hn::Set(di, q_bias[take[r]]));
      hn::Store(hn::Mul(hn::ConvertTo(d, exact), hn::Set(d, q_scales[take[r]])), d, scores[r] + p);
    };
    size_t p = 0;
    // SVE's sizeless vectors cannot form arrays: the loop below serves it.
    if constexpr (!HWY_HAVE_SCALABLE) {
      for (; p + 4 * N <= padded; p += 4 * N) {
        hn::Vec<decltype(di)> acc[kRows][4];
        for (size_t r = 0; r < kRows; ++r) {
          for (size_t i = 0; i < 4; ++i) acc[r][i] = hn::Zero(di);
        }
        for (size_t g = 0; g < quads; ++g) {
          const int8_t* at = k_quads + g * k_quad_stride + 4 * p;
          if (next_k != nullptr) PrefetchLines(next_k + (at - k_quads), 16 * N);
          hn::Vec<decltype(d8)> k[4];
          for (size_t i = 0; i < 4; ++i) k[i] = InRegister(LoadK(d8, at + 4 * N * i));
          for (size_t r = 0; r < kRows; ++r) {
            const auto qg = QuadOf(d8, q[r], g);
            for (size_t i = 0; i < 4; ++i) acc[r][i] = Dot(k[i], qg, acc[r][i]);
          }
          // Else GCC moves the sums through copies and the stack each step.
          for (size_t r = 0; r < kRows; ++r) {
            for (size_t i = 0; i < 4; ++i) acc[r][i] = InRegister(acc[r][i]);
          }
        }
        for (size_t r = 0; r < kRows; ++r) {
          for (size_t i = 0; i < 4; ++i) finish(r, acc[r][i], p + N * i);
        }
      }
    }
    // A block's last positions (SVE: all of them): one vector per row, its
    // quads split over two chains; the first row asks for the next block.
    for (; p < padded; p += N) {
      for (size_t r = 0; r < kRows; ++r) {
        auto a0 = hn::Zero(di), a1 = a0;
        // (A line holds 16 positions' quads.)
        for (size_t g = 0; r == 0 && next_k != nullptr && p % 16 == 0 && g < quads; ++g) {
          PrefetchLines(next_k + g * k_quad_stride + 4 * p, 64);
        }
        size_t g = 0;
        for (; g + 2 <= quads; g += 2) {
          a0 = Dot(LoadK(d8, k_quads + g * k_quad_stride + 4 * p), QuadOf(d8, q[r], g), a0);
          a1 = Dot(LoadK(d8, k_quads + (g + 1) * k_quad_stride + 4 * p), QuadOf(d8, q[r], g + 1),
                   a1);
        }
        if (g < quads) {
          a0 = Dot(LoadK(d8, k_quads + g * k_quad_stride + 4 * p), QuadOf(d8, q[r], g), a0);
        }
        finish(r, hn::Add(a0, a1), p);
      }
    }
  }

  // out[r][head_dim] += sum_p w[r][p] * code[p] for p < count and kRows
  // rows; w[r] is zero from count up to the next multiple of the lanes.
  // Each code vector is widened once for all the rows, whose 4 output
  // vectors stay in registers across the block's positions.
  template <size_t kRows, class D>
  HWY_INLINE void AddWeightedV(D d, float* const* w, size_t count, size_t head_dim,
                               float* const* out) const {
#if POCKET_INT16_PAIRS
    if (head_dim % kPairChannels == 0) return AddWeightedVPairs<kRows>(w, count, head_dim, out);
#endif
    const hn::RebindToSigned<D> di;
    const hn::Rebind<int8_t, D> d8;
    const size_t N = hn::Lanes(d);
    const auto widen = [&](const int8_t* p) {
      return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, p)));
    };
    size_t c = 0;
    if constexpr (!HWY_HAVE_SCALABLE) {  // SVE: the loop below, one vector at a time
      for (; c + 4 * N <= head_dim; c += 4 * N) {
        hn::Vec<D> acc[kRows][4];
        for (size_t r = 0; r < kRows; ++r) {
          for (size_t i = 0; i < 4; ++i) acc[r][i] = hn::LoadU(d, out[r] + c + N * i);
        }
        for (size_t p = 0; p < count; ++p) {
          const int8_t* at = v_rows + p * head_dim + c;
          if (next_v != nullptr) PrefetchLines(next_v + (at - v_rows), 4 * N);
          hn::Vec<D> v[4];
          for (size_t i = 0; i < 4; ++i) v[i] = InRegister(widen(at + N * i));
          for (size_t r = 0; r < kRows; ++r) {
            const auto wr = hn::Set(d, w[r][p]);
            for (size_t i = 0; i < 4; ++i) acc[r][i] = hn::MulAdd(wr, v[i], acc[r][i]);
          }
        }
        for (size_t r = 0; r < kRows; ++r) {
          for (size_t i = 0; i < 4; ++i) hn::StoreU(acc[r][i], d, out[r] + c + N * i);
        }
      }
    }
    for (size_t r = 0; r < kRows; ++r) {  // head sizes that are not 4 vectors
      size_t cr = c;
      for (; cr + N <= head_dim; cr += N) {
        auto a = hn::LoadU(d, out[r] + cr);
        for (size_t p = 0; p < count; ++p) {
          const int8_t* at = v_rows + p * head_dim + cr;
          if (r == 0 && cr == c && next_v != nullptr) {  // the rest of the row, once
            PrefetchLines(next_v + (at - v_rows), head_dim - c);
          }
          a = hn::MulAdd(hn::Set(d, w[r][p]), widen(at), a);
        }
        hn::StoreU(a, d, out[r] + cr);
      }
      for (; cr < head_dim; ++cr) {
        float a = out[r][cr];
        for (size_t p = 0; p < count; ++p) {
          a += w[r][p] * static_cast<float>(v_rows[p * head_dim + cr]);
        }
        out[r][cr] = a;
      }
    }
  }

#if POCKET_INT16_PAIRS
  // AddWeightedV with VNNI's int16 pair products (vpdpwssd, 2 per lane per
  // instruction where the f32 form makes 1 and widens each code twice):
  // each row's weights are rounded to int16 steps of the block's largest,
  // w16 = round(w * 32767 / max w), and summed with the codes in int32
  // (at most 64 * 32767 * 127 < 2^31); the block's sums, times max w /
  // 32767, are added to out. A weight moves by at most max w / 65534, so an
  // output moves by at most kScoreBlock / 65534 max|v| (docs/kernels.md).
  // Each pass takes kPairChannels channels as 4 vectors of position pairs.
  template <size_t kRows>
  HWY_INLINE void AddWeightedVPairs(float* const* w, size_t count, size_t head_dim,
                                    float* const* out) const {
    using V = PairVector;
    const hn::CappedTag<float, 16> d;
    const hn::Rebind<int16_t, decltype(d)> d16;
    const hn::CappedTag<float, kPairChannels / 4> dc;  // a quarter of a pass
    const hn::RebindToSigned<decltype(dc)> dci;
    const size_t N = hn::Lanes(d);
    const size_t padded = (count + N - 1) / N * N;
    HWY_ALIGN int16_t w16[kRows][kScoreBlock];
    float step[kRows];
    for (size_t r = 0; r < kRows; ++r) {
      auto vmax = hn::Zero(d);
      for (size_t p = 0; p < padded; p += N) vmax = hn::Max(vmax, hn::Load(d, w[r] + p));
      const float max = hn::GetLane(hn::MaxOfLanes(d, vmax));
      const auto inv = hn::Set(d, max > 0.0f ? 32767.0f / max : 0.0f);
      for (size_t p = 0; p < padded; p += N) {
        const auto q = hn::NearestInt(hn::Mul(hn::Load(d, w[r] + p), inv));
        hn::Store(hn::DemoteTo(d16, q), d16, w16[r] + p);
      }
      step[r] = max / 32767.0f;
    }
    constexpr size_t kHalf = kPairChannels / 2;
    for (size_t c = 0; c < head_dim; c += kPairChannels) {
      V acc[kRows][4];
      for (size_t r = 0; r < kRows; ++r) {
        for (size_t i = 0; i < 4; ++i) acc[r][i] = PairZero();
      }
      for (size_t p = 0; p < count; p += 2) {
        const int8_t* at = v_rows + p * head_dim + c;
        if (next_v != nullptr) PrefetchLines(next_v + (at - v_rows), 2 * kPairChannels);
        // Position p + 1 past the block (odd count) has weight 0; its row
        // may lie past the page, so zeros stand in for it.
        const bool both = p + 1 < count;
        const V a0 = PairWiden(at), a1 = PairWiden(at + kHalf);
        const V b0 = both ? PairWiden(at + head_dim) : PairZero();
        const V b1 = both ? PairWiden(at + head_dim + kHalf) : PairZero();
        // unpacklo/hi: channels 8k .. 8k+3 / 8k+4 .. 8k+7 of each half
        // into 128-bit lane k, each with positions p and p + 1.
        V v[4] = {PairLow(a0, b0), PairHigh(a0, b0), PairLow(a1, b1), PairHigh(a1, b1)};
        for (size_t i = 0; i < 4; ++i) v[i] = RawInRegister(v[i]);
        for (size_t r = 0; r < kRows; ++r) {
          int32_t pair;
          std::memcpy(&pair, w16[r] + p, 4);
          const V wp = PairSet(pair);
          for (size_t i = 0; i < 4; ++i) acc[r][i] = PairDot(acc[r][i], v[i], wp);
        }
        for (size_t r = 0; r < kRows; ++r) {
          for (size_t i = 0; i < 4; ++i) acc[r][i] = RawInRegister(acc[r][i]);
        }
      }
      for (size_t r = 0; r < kRows; ++r) {
        const auto s = hn::Set(dc, step[r]);
        for (size_t h = 0; h < 2; ++h) {  // channels c + kHalf h .. c + kHalf (h + 1)
          const V lo = acc[r][2 * h], hi = acc[r][2 * h + 1];
          float* o = out[r] + c + kHalf * h;
          const hn::Vec<decltype(dci)> sums[2] = {{PairFirst(lo, hi)}, {PairSecond(lo, hi)}};
          for (size_t k = 0; k < 2; ++k) {
            const size_t at = kHalf / 2 * k;
            hn::StoreU(hn::MulAdd(hn::ConvertTo(dc, sums[k]), s, hn::LoadU(dc, o + at)), dc,
                       o + at);
          }
        }
      }
    }
  }
#endif
};

// AttendGroup over a q8 cache with Int8Block's products: what attention.cc
// runs for AttentionMath::kInt8, and the int8 extension builds
// (int8_extension-inl.h) once more. q_scratch: head_dim codes per row, then
// a float scale and an int32 bias per row. Not inline: the extension
// builds' copies are called from attention.cc.
void AttendGroupInt8(const float* const* q_rows, const size_t* lens, float* const* out_rows,
                     size_t rows, const KvView& kv, size_t kv_offset, size_t head_dim, float scale,
                     size_t begin, size_t end, bool normalize, void* q_scratch, float* max,
                     float* sum) {
  int8_t* codes = static_cast<int8_t*>(q_scratch);
  float* scales = reinterpret_cast<float*>(codes + rows * head_dim);
  Int8Block block{q_rows, codes, scales, reinterpret_cast<int32_t*>(scales + rows)};
  AttendGroup<int8_t>(block, lens, out_rows, rows, kv, kv_offset, head_dim, scale, begin, end,
                      normalize, max, sum);
}

#endif  // POCKET_INT8_DOT

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ATTENTION_INT8_INL_H_
