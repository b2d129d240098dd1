// Integer dot products of int8 activations with weight codes, the inner step
// of the int8-activation Linear (kernels/cpu/matvec_int8-inl.h).
//
// Highway 1.0.3 has no int8 dot op, so each target uses its own instruction
// behind one interface. Every function adds products of corresponding bytes
// into the int32 lanes of `acc`, int32 lane i receiving the four products of
// bytes 4i .. 4i+3 on every target (the rows16 kernels rely on it: a lane is
// one weight row there).
//
//   DotU7(a, b, acc): a in [0, 127] (q4 codes), b int8; where
//                     POCKET_INT8_DPBUSD (VNNI's dpbusd, which never
//                     saturates, at the rows16 vectors' width) any u8 a.
//   DotS8(a, b, acc): a, b in [-127, 127] (q8 codes).
//   DotU4(a, b, sums), WidenU4(sums): the same as DotU7 for a in [0, 15]
//                     (q4 nibbles; any u8 with dpbusd), in two steps: DotU4
//                     adds into U4Sums (ZeroU4, AddU4), at most kU4Terms
//                     times, then WidenU4 turns them into the int32 lanes.
//   DotU4Quad<k>, DotU7Quad<k>, DotS8Quad<k>(a, quads, acc): the same with
//                     b = quad k of a run of activations (LoadQuads), in
//                     every 32-bit lane.
//
// x86 (SSSE3 and up): maddubs (u8 x s8 -> pairs summed to i16; neither form
// can saturate: 2 * 127 * 127 < 32768) then madd with ones to i32. AVX3_DL
// uses VNNI's dpbusd for 512-bit vectors (only the EVEX form exists on CPUs
// without AVX-VNNI, and GCC picks the VEX form for 256-bit ones). AVX2 built
// with AVX-VNNI (int8_avx_vnni.cc, the AVX2_VNNI kernels of x86 CPUs
// without AVX-512, e.g. Intel's since Alder Lake) uses the VEX dpbusd for
// 128- and 256-bit vectors. DotS8 moves the sign of a onto b
// (|a| * sign(a) b = a b). NEON uses sdot when compiled with dotprod
// (ARMv8.2+: int8_dotprod.cc), else widening multiplies with pairwise
// adds; SVE uses sdot. Other targets (scalar, emu128) have no int8 kernel:
// POCKET_INT8_DOT is 0 there and Linear keeps the f32 path.
//
// DotU4 exists for x86 without any VNNI: a q4 nibble's pair sums stay far from
// the int16 limit (2 * 15 * 127 = 3810), so U4Sums keeps up to 8 of them in
// int16 lanes and WidenU4 does one madd for all, where DotU7 does one per
// call. (The decode GEMV on 33 MB of weights, AVX2 and SSE4 on Zen 5: 4-10%
// faster.) Elsewhere U4Sums are the int32 lanes and DotU4 is DotU7.

#if defined(POCKET_KERNELS_CPU_INT8_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_INT8_DOT_INL_H_
#undef POCKET_KERNELS_CPU_INT8_DOT_INL_H_
#else
#define POCKET_KERNELS_CPU_INT8_DOT_INL_H_
#endif

#include <cstring>
#include <type_traits>

#include <hwy/highway.h>

#undef POCKET_INT8_DOT
#undef POCKET_INT8_X86
#undef POCKET_INT8_NEON
#undef POCKET_INT8_SVE
#undef POCKET_U4_SUMS_16
#undef POCKET_INT8_DPBUSD
#undef POCKET_INT8_AVX_VNNI
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
#define POCKET_INT8_X86 1
#include <immintrin.h>
#if HWY_TARGET == HWY_AVX2 && defined(__AVXVNNI__)  // int8_avx_vnni.cc
#define POCKET_INT8_AVX_VNNI 1
#endif
// Dot products of u8 and s8 straight into int32 lanes, which never saturate
// (VNNI's dpbusd) at the width of the rows16 kernels' vectors.
#if HWY_TARGET == HWY_AVX3_DL || defined(POCKET_INT8_AVX_VNNI)
#define POCKET_INT8_DPBUSD 1
#endif
#elif HWY_TARGET == HWY_NEON
#define POCKET_INT8_NEON 1
#include <arm_neon.h>
#elif HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2 || HWY_TARGET == HWY_SVE_256 || \
    HWY_TARGET == HWY_SVE2_128
#define POCKET_INT8_SVE 1
#include <arm_sve.h>
#endif
#if defined(POCKET_INT8_X86) || defined(POCKET_INT8_NEON) || defined(POCKET_INT8_SVE)
#define POCKET_INT8_DOT 1
#else
#define POCKET_INT8_DOT 0
#endif

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if defined(POCKET_INT8_X86)

HWY_INLINE hn::Vec128<int32_t> DotU7(hn::Vec128<uint8_t> a, hn::Vec128<int8_t> b,
                                     hn::Vec128<int32_t> acc) {
#if defined(POCKET_INT8_AVX_VNNI)
  return hn::Vec128<int32_t>{_mm_dpbusd_avx_epi32(acc.raw, a.raw, b.raw)};
#else
  const __m128i pairs = _mm_maddubs_epi16(a.raw, b.raw);
  return hn::Vec128<int32_t>{_mm_add_epi32(acc.raw, _mm_madd_epi16(pairs, _mm_set1_epi16(1)))};
#endif
}
HWY_INLINE hn::Vec128<int32_t> DotS8(hn::Vec128<int8_t> a, hn::Vec128<int8_t> b,
                                     hn::Vec128<int32_t> acc) {
  const hn::Vec128<uint8_t> abs_a{_mm_abs_epi8(a.raw)};
  return DotU7(abs_a, hn::Vec128<int8_t>{_mm_sign_epi8(b.raw, a.raw)}, acc);
}

#if !defined(POCKET_INT8_DPBUSD)
#define POCKET_U4_SUMS_16 1
HWY_INLINE hn::Vec128<int16_t> DotU4(hn::Vec128<uint8_t> a, hn::Vec128<int8_t> b,
                                     hn::Vec128<int16_t> sums) {
  return hn::Vec128<int16_t>{_mm_add_epi16(sums.raw, _mm_maddubs_epi16(a.raw, b.raw))};
}
HWY_INLINE hn::Vec128<int32_t> WidenU4(hn::Vec128<int16_t> sums) {
  return hn::Vec128<int32_t>{_mm_madd_epi16(sums.raw, _mm_set1_epi16(1))};
}
#endif

#if HWY_TARGET <= HWY_AVX2
HWY_INLINE hn::Vec256<int32_t> DotU7(hn::Vec256<uint8_t> a, hn::Vec256<int8_t> b,
                                     hn::Vec256<int32_t> acc) {
#if defined(POCKET_INT8_AVX_VNNI)
  return hn::Vec256<int32_t>{_mm256_dpbusd_avx_epi32(acc.raw, a.raw, b.raw)};
#else
  const __m256i pairs = _mm256_maddubs_epi16(a.raw, b.raw);
  return hn::Vec256<int32_t>{
      _mm256_add_epi32(acc.raw, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))};
#endif
}
HWY_INLINE hn::Vec256<int32_t> DotS8(hn::Vec256<int8_t> a, hn::Vec256<int8_t> b,
                                     hn::Vec256<int32_t> acc) {
  const hn::Vec256<uint8_t> abs_a{_mm256_abs_epi8(a.raw)};
  return DotU7(abs_a, hn::Vec256<int8_t>{_mm256_sign_epi8(b.raw, a.raw)}, acc);
}

#if !defined(POCKET_INT8_DPBUSD)
HWY_INLINE hn::Vec256<int16_t> DotU4(hn::Vec256<uint8_t> a, hn::Vec256<int8_t> b,
                                     hn::Vec256<int16_t> sums) {
  return hn::Vec256<int16_t>{_mm256_add_epi16(sums.raw, _mm256_maddubs_epi16(a.raw, b.raw))};
}
HWY_INLINE hn::Vec256<int32_t> WidenU4(hn::Vec256<int16_t> sums) {
  return hn::Vec256<int32_t>{_mm256_madd_epi16(sums.raw, _mm256_set1_epi16(1))};
}
#endif
#endif  // HWY_TARGET <= HWY_AVX2

#if HWY_TARGET <= HWY_AVX3
HWY_INLINE hn::Vec512<int32_t> DotU7(hn::Vec512<uint8_t> a, hn::Vec512<int8_t> b,
                                     hn::Vec512<int32_t> acc) {
#if HWY_TARGET == HWY_AVX3_DL
  return hn::Vec512<int32_t>{_mm512_dpbusd_epi32(acc.raw, a.raw, b.raw)};
#else
  const __m512i pairs = _mm512_maddubs_epi16(a.raw, b.raw);
  return hn::Vec512<int32_t>{
      _mm512_add_epi32(acc.raw, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)))};
#endif
}
// AVX-512 has no sign_epi8: b is negated where a < 0 (under a mask).
HWY_INLINE hn::Vec512<int32_t> DotS8(hn::Vec512<int8_t> a, hn::Vec512<int8_t> b,
                                     hn::Vec512<int32_t> acc) {
  const __m512i signed_b =
      _mm512_mask_sub_epi8(b.raw, _mm512_movepi8_mask(a.raw), _mm512_setzero_si512(), b.raw);
  return DotU7(hn::Vec512<uint8_t>{_mm512_abs_epi8(a.raw)}, hn::Vec512<int8_t>{signed_b}, acc);
}
#if HWY_TARGET != HWY_AVX3_DL
HWY_INLINE hn::Vec512<int16_t> DotU4(hn::Vec512<uint8_t> a, hn::Vec512<int8_t> b,
                                     hn::Vec512<int16_t> sums) {
  return hn::Vec512<int16_t>{_mm512_add_epi16(sums.raw, _mm512_maddubs_epi16(a.raw, b.raw))};
}
HWY_INLINE hn::Vec512<int32_t> WidenU4(hn::Vec512<int16_t> sums) {
  return hn::Vec512<int32_t>{_mm512_madd_epi16(sums.raw, _mm512_set1_epi16(1))};
}
#endif
#endif  // HWY_TARGET <= HWY_AVX3

#elif defined(POCKET_INT8_NEON)

HWY_INLINE hn::Vec128<int32_t> DotS8(hn::Vec128<int8_t> a, hn::Vec128<int8_t> b,
                                     hn::Vec128<int32_t> acc) {
#if defined(__ARM_FEATURE_DOTPROD)
  return hn::Vec128<int32_t>{vdotq_s32(acc.raw, a.raw, b.raw)};
#else
  // Products of bytes 0..7 and 8..15, summed in adjacent pairs (at most
  // 2 * 127 * 127, no i16 overflow), then pairs of pairs into lane i.
  const int16x8_t lo = vmull_s8(vget_low_s8(a.raw), vget_low_s8(b.raw));
  const int16x8_t hi = vmull_s8(vget_high_s8(a.raw), vget_high_s8(b.raw));
  return hn::Vec128<int32_t>{vpadalq_s16(acc.raw, vpaddq_s16(lo, hi))};
#endif
}
HWY_INLINE hn::Vec128<int32_t> DotU7(hn::Vec128<uint8_t> a, hn::Vec128<int8_t> b,
                                     hn::Vec128<int32_t> acc) {
  return DotS8(hn::Vec128<int8_t>{vreinterpretq_s8_u8(a.raw)}, b, acc);
}

#if !defined(__ARM_FEATURE_DOTPROD)
// ARMv8.0 (Cortex-A53/A72/A73): a nibble's products (at most 15 * 127 =
// 1905) add into int16 lanes per byte with smlal / smlal2, 2 operations per
// 16 bytes where DotU7 takes 4, and WidenU4 sums each row's 4 bytes once
// per kU4Terms chunks: per lane at most 8 * 1905, a pair of lanes 30480.
#define POCKET_U4_SUMS_16 1
struct U4Pair {
  int16x8_t lo, hi;  // bytes 0..7 and 8..15: rows 0-1 and 2-3
};
HWY_INLINE U4Pair DotU4(hn::Vec128<uint8_t> a, hn::Vec128<int8_t> b, U4Pair sums) {
  const int8x16_t codes = vreinterpretq_s8_u8(a.raw);
  return U4Pair{vmlal_s8(sums.lo, vget_low_s8(codes), vget_low_s8(b.raw)),
                vmlal_high_s8(sums.hi, codes, b.raw)};
}
HWY_INLINE hn::Vec128<int32_t> WidenU4(U4Pair sums) {
  return hn::Vec128<int32_t>{vpaddlq_s16(vpaddq_s16(sums.lo, sums.hi))};
}
HWY_INLINE U4Pair AddU4(U4Pair a, U4Pair b) {
  return U4Pair{vaddq_s16(a.lo, b.lo), vaddq_s16(a.hi, b.hi)};
}
template <class D32>
HWY_INLINE U4Pair ZeroU4(D32) {
  return U4Pair{vdupq_n_s16(0), vdupq_n_s16(0)};
}
template <class D32>
using U4Sums = U4Pair;
#endif

#elif defined(POCKET_INT8_SVE)

HWY_INLINE svint32_t DotS8(svint8_t a, svint8_t b, svint32_t acc) { return svdot_s32(acc, a, b); }
HWY_INLINE svint32_t DotU7(svuint8_t a, svint8_t b, svint32_t acc) {
  return svdot_s32(acc, svreinterpret_s8_u8(a), b);
}

#endif

#if POCKET_INT8_DOT
#if defined(POCKET_U4_SUMS_16)  // set above for x86 without VNNI and ARMv8.0
// int16 sums: kU4Terms terms of at most 3810 (x86's pair sums) each stay
// below 32768, as do ARMv8.0's (above).
constexpr size_t kU4Terms = 8;
#if defined(POCKET_INT8_X86)
template <class D32>
using U4Sums = hn::Vec<hn::Repartition<int16_t, D32>>;
#endif
#else
// Straight into int32 lanes (VNNI, sdot): no limit that a group can reach.
constexpr size_t kU4Terms = 1 << 20;
template <class D32>
using U4Sums = hn::Vec<D32>;
template <class VA, class VB, class VS>
HWY_INLINE VS DotU4(VA a, VB b, VS sums) {
  return DotU7(a, b, sums);
}
template <class VS>
HWY_INLINE VS WidenU4(VS sums) {
  return sums;
}
#endif
#if !defined(POCKET_U4_SUMS_16) || defined(POCKET_INT8_X86)  // U4Sums are Highway vectors
template <class D32>
HWY_INLINE U4Sums<D32> ZeroU4(D32) {
  return hn::Zero(hn::DFromV<U4Sums<D32>>());
}
template <class VS>
HWY_INLINE VS AddU4(VS a, VS b) {
  return hn::Add(a, b);
}
#endif

// A run of activation quads, x[0, 4 kQuads) for kQuads 2 (a q4 chunk's 8
// activations) or 4, and the dot steps that take one quad of it:
//   const auto q = LoadQuads<2>(d8, x);
//   acc = DotU7Quad<1>(codes, q, acc);  // DotU7(codes, x[4, 8) in every lane)
// (likewise DotU4Quad, DotS8Quad). On NEON with dotprod the run is one load
// and each step names its quad (sdot by element): there a broadcast is a
// load and a dup, which run in the vector pipes beside the dots. Elsewhere
// each step broadcasts its quad as it is used: x86 loads it broadcast; SVE
// too (ld1rw), while its indexed sdot takes only z0-z7, and GCC 12 then
// copied a run into z3 before every step.
#if defined(POCKET_INT8_NEON) && defined(__ARM_FEATURE_DOTPROD)
template <size_t kQuads>
struct ActQuads {
  std::conditional_t<kQuads == 2, int8x8_t, int8x16_t> raw;
};
template <size_t kQuads, class D8>
HWY_INLINE ActQuads<kQuads> LoadQuads(D8, const int8_t* HWY_RESTRICT x) {
  static_assert(kQuads == 2 || kQuads == 4, "a run of 2 or 4 quads");
  if constexpr (kQuads == 2) {
    return ActQuads<kQuads>{vld1_s8(x)};
  } else {
    return ActQuads<kQuads>{vld1q_s8(x)};
  }
}
template <size_t kQuad, size_t kQuads>
HWY_INLINE hn::Vec128<int32_t> DotS8Quad(hn::Vec128<int8_t> a, ActQuads<kQuads> x,
                                         hn::Vec128<int32_t> acc) {
  static_assert(kQuad < kQuads, "a quad of the run");
  if constexpr (kQuads == 2) {
    return hn::Vec128<int32_t>{vdotq_lane_s32(acc.raw, a.raw, x.raw, kQuad)};
  } else {
    return hn::Vec128<int32_t>{vdotq_laneq_s32(acc.raw, a.raw, x.raw, kQuad)};
  }
}
template <size_t kQuad, size_t kQuads>
HWY_INLINE hn::Vec128<int32_t> DotU7Quad(hn::Vec128<uint8_t> a, ActQuads<kQuads> x,
                                         hn::Vec128<int32_t> acc) {
  return DotS8Quad<kQuad>(hn::Vec128<int8_t>{vreinterpretq_s8_u8(a.raw)}, x, acc);
}
template <size_t kQuad, size_t kQuads>  // U4Sums are the int32 lanes here
HWY_INLINE hn::Vec128<int32_t> DotU4Quad(hn::Vec128<uint8_t> a, ActQuads<kQuads> x,
                                         hn::Vec128<int32_t> sums) {
  return DotU7Quad<kQuad>(a, x, sums);
}
#else
template <size_t kQuads>
struct ActQuads {
  const int8_t* x;
};
template <size_t kQuads, class D8>
HWY_INLINE ActQuads<kQuads> LoadQuads(D8, const int8_t* HWY_RESTRICT x) {
  static_assert(kQuads == 2 || kQuads == 4, "a run of 2 or 4 quads");
  return ActQuads<kQuads>{x};
}
// Quad kQuad of the run broadcast to every 32-bit lane of a vector like a.
template <size_t kQuad, size_t kQuads, class VA>
HWY_INLINE hn::Vec<hn::Repartition<int8_t, hn::DFromV<VA>>> Broadcast4(VA, ActQuads<kQuads> x) {
  static_assert(kQuad < kQuads, "a quad of the run");
  const hn::Repartition<int32_t, hn::DFromV<VA>> d32;
  int32_t quad;
  std::memcpy(&quad, x.x + 4 * kQuad, 4);
  return hn::BitCast(hn::Repartition<int8_t, decltype(d32)>(), hn::Set(d32, quad));
}
template <size_t kQuad, size_t kQuads, class VA, class VS>
HWY_INLINE VS DotS8Quad(VA a, ActQuads<kQuads> x, VS acc) {
  return DotS8(a, Broadcast4<kQuad>(a, x), acc);
}
template <size_t kQuad, size_t kQuads, class VA, class VS>
HWY_INLINE VS DotU7Quad(VA a, ActQuads<kQuads> x, VS acc) {
  return DotU7(a, Broadcast4<kQuad>(a, x), acc);
}
template <size_t kQuad, size_t kQuads, class VA, class VS>
HWY_INLINE VS DotU4Quad(VA a, ActQuads<kQuads> x, VS sums) {
  return DotU4(a, Broadcast4<kQuad>(a, x), sums);
}
#endif

#endif  // POCKET_INT8_DOT

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_INT8_DOT_INL_H_
