// Linear over q4 weights in the rows16 layout (format/dtype.h): a vector of
// int32 lanes holds L <= 16 rows ("a lane block"; AVX-512 16, AVX2 8, NEON
// and SSE4 4), and each 32-bit lane of a 64-byte code chunk is 8 weights of
// its row. One step broadcasts 4 activations to every lane (on NEON with
// dotprod, names them in an indexed dot: int8_dot-inl.h's ActQuads) and adds
// their products with 4 weights of each row, so a group needs no reduction across
// lanes and no shuffles: per group and lane block the int32 sums are
// converted once and scaled by the rows' (f16) scales, which lie beside the
// codes in the same record.
//
// With int8 activations (act_quant-inl.h: codes xq, scale dx, exact sum xs
// per group), row r of one token is
//   sum_g  s_rg dx_g (sum_k q_rk xq_k)  +  m_rg xs_g,
// the integer sums made by int8_dot-inl.h's DotU7. Decode streams one lane
// block at a time with four accumulators (low/high nibbles of even/odd
// chunks); prefill tiles lane blocks by 4 tokens, so each chunk is loaded
// and split into nibbles once for 4 tokens.
//
// With f32 activations (the exact path, and targets without an int8 dot) the
// nibbles are widened to f32 lanes and multiplied by broadcast activations:
//   sum_g  s_rg (sum_k q_rk x_k)  +  m_rg (sum_k x_k).

#if defined(POCKET_KERNELS_CPU_MATVEC_ROWS16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_MATVEC_ROWS16_INL_H_
#undef POCKET_KERNELS_CPU_MATVEC_ROWS16_INL_H_
#else
#define POCKET_KERNELS_CPU_MATVEC_ROWS16_INL_H_
#endif

#include <algorithm>
#include <type_traits>

#include <hwy/highway.h>

#include "backends/cpu/linear_int8.h"
#include "backends/cpu/rows16.h"
#include "kernels/cpu/hints-inl.h"
#include "kernels/cpu/int8_dot-inl.h"
#include "kernels/cpu/load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lanes are rows: at most one 16-row block per vector.
using Rows16Tag = hn::CappedTag<int32_t, kRows16Block>;

// Where lane block [r, r + L) of a rows16 tensor lives in group g's record.
struct Rows16Lanes {
  const uint8_t* codes;  // chunk c at codes + 64 c, 4 L bytes
  const hwy::float16_t* scales;
  const hwy::float16_t* mins;
};

HWY_INLINE Rows16Lanes LanesAt(const Rows16Weights& w, size_t r, size_t g) {
  const uint8_t* record = w.Record(r / kRows16Block, g);
  const size_t first = r % kRows16Block;
  const uint8_t* meta = record + w.code_bytes;
  return Rows16Lanes{record + 4 * first, reinterpret_cast<const hwy::float16_t*>(meta) + first,
                     reinterpret_cast<const hwy::float16_t*>(meta) + kRows16Block + first};
}

// Decode streams each thread's rows once: asks for the record
// w.read_ahead bytes past group g's of row block r into L2 (kernel_target.h:
// DecodeReadAhead), once per record. Hints past the weight's end are
// harmless (a prefetch never faults).
HWY_INLINE void ReadAhead(const Rows16Weights& w, size_t r, size_t g) {
  if (w.read_ahead != 0 && r % kRows16Block == 0) {
    PrefetchBytes(w.Record(r / kRows16Block, g) + w.read_ahead, w.record_bytes);
  }
}

// out[r, r + L) = acc (+ bias), for each of the L rows.
template <class DF>
HWY_INLINE void StoreRows(DF df, hn::Vec<DF> acc, const float* bias, size_t r, float* out) {
  if (bias) acc = hn::Add(acc, hn::LoadU(df, bias + r));
  hn::StoreU(acc, df, out + r);
}

#if POCKET_INT8_DOT

// The high nibbles of code bytes, for DotU7. Generally (v >> 4); with dpbusd
// (u8 x s8 products summed straight into int32, nothing saturates) v & 0xF0
// is one operation less and gives 16 times the dot product, which
// GroupSum divides out exactly.
#if defined(POCKET_INT8_DPBUSD)
constexpr int kHighShift = 4;
template <class D8>
HWY_INLINE hn::Vec<D8> HighNibbles(D8 d8, hn::Vec<D8> bytes) {
  return hn::And(bytes, hn::Set(d8, 0xF0));
}
#else
constexpr int kHighShift = 0;
template <class D8>
HWY_INLINE hn::Vec<D8> HighNibbles(D8, hn::Vec<D8> bytes) {
  return hn::ShiftRight<4>(bytes);
}
#endif

// The group's integer dot products: low plus high nibble sums.
template <class V>
HWY_INLINE V GroupSum(V lo, V hi) {
  if constexpr (kHighShift != 0) hi = hn::ShiftRight<kHighShift>(hi);
  return hn::Add(lo, hi);
}

// One group of a lane block with one token: the low and high nibble dot
// products of its G / 8 chunks, as int32 lanes. Even and odd chunks go to
// separate sums: four independent chains hide the dot latency, each of
// G / 16 <= 8 DotU4 terms (G <= 128), within kU4Terms. kGroup is G where
// the caller knows it at compile time (the loop is then unrolled), else 0.
template <size_t kGroup, class D32, class V = hn::Vec<D32>>
HWY_INLINE void GroupDot(D32 d32, const uint8_t* HWY_RESTRICT codes, const int8_t* HWY_RESTRICT x,
                         size_t group, V& lo, V& hi) {
  const hn::Repartition<uint8_t, D32> du8;
  const hn::Repartition<int8_t, D32> di8;
  const auto low4 = hn::Set(du8, 0x0F);
  if constexpr (kGroup != 0) group = kGroup;
  U4Sums<D32> l0 = ZeroU4(d32), h0 = l0, l1 = l0, h1 = l0;
  for (size_t c = 0; c < group / 8; c += 2) {  // group / 8 is even (G >= 32)
    const auto b0 = hn::LoadU(du8, codes + 64 * c);
    const auto b1 = hn::LoadU(du8, codes + 64 * c + 64);
    const auto xq = LoadQuads<4>(di8, x + 8 * c);  // both chunks' activations
    l0 = DotU4Quad<0>(hn::And(b0, low4), xq, l0);
    h0 = DotU4Quad<1>(HighNibbles(du8, b0), xq, h0);
    l1 = DotU4Quad<2>(hn::And(b1, low4), xq, l1);
    h1 = DotU4Quad<3>(HighNibbles(du8, b1), xq, h1);
  }
  if constexpr (kGroup != 0 && kGroup / 8 <= kU4Terms) {
    // The even and odd chunks' terms fit one sum together (G <= 64 where
    // the sums are int16): one widening each for lo and hi.
    lo = WidenU4(AddU4(l0, l1));
    hi = WidenU4(AddU4(h0, h1));
  } else {
    lo = hn::Add(WidenU4(l0), WidenU4(l1));
    hi = hn::Add(WidenU4(h0), WidenU4(h1));
  }
}

// acc += float(sums) * scales * dx + mins * xs: one q4 group's contribution
// from its exact integer dot products. Every q4 int8 kernel scales through
// this one sequence, so a row rounds the same whichever kernel summed it.
template <class DF, class V32 = hn::Vec<hn::RebindToSigned<DF>>>
HWY_INLINE hn::Vec<DF> ScaleSums(DF df, const Rows16Lanes& p, V32 sums, float dx, float xs,
                                 hn::Vec<DF> acc) {
  acc = hn::MulAdd(hn::ConvertTo(df, sums), hn::Mul(LoadF32(df, p.scales), hn::Set(df, dx)), acc);
  return hn::MulAdd(LoadF32(df, p.mins), hn::Set(df, xs), acc);
}

// ScaleSums of the low and high nibbles' sums.
template <class DF, class V32 = hn::Vec<hn::RebindToSigned<DF>>>
HWY_INLINE hn::Vec<DF> ScaleGroup(DF df, const Rows16Lanes& p, V32 lo, V32 hi, float dx, float xs,
                                  hn::Vec<DF> acc) {
  return ScaleSums(df, p, GroupSum(lo, hi), dx, xs, acc);
}

// f += float(i) * s * dx: one q8 group's contribution for one lane block
// and token; every q8 int8 kernel scales through it (ScaleSums' reason).
template <class DF, class V32>
HWY_INLINE hn::Vec<DF> Q8Scale(DF df, V32 i, hn::Vec<DF> s, float dx, hn::Vec<DF> f) {
  return hn::MulAdd(hn::ConvertTo(df, i), hn::Mul(s, hn::Set(df, dx)), f);
}

// Rows [r0, r1) of one token; r0 and r1 are multiples of 16. The records
// of a 16-row block are one sequential stream, read once. (Two blocks at
// once, two streams 8 KB apart, ran at less than half the DRAM rate on
// Zen 4.) Where a vector holds 16 rows (AVX-512) a group is one lane block
// with four chains (GroupDot). Where it holds fewer, the lane blocks of each
// group go one after another, the sums of all but the first kept in `acc`
// between groups. Rows16GemvInt8Blocks below does better where every lane
// block's sums fit in registers (AVX2, aarch64 NEON), so this loop serves
// those vectors on SSE4 and on SVE (whose vectors an array cannot hold).
template <size_t kGroup>
HWY_INLINE void Rows16GemvInt8Group(const Rows16Weights& w, const QuantizedActs& a,
                                    const float* bias, size_t r0, size_t r1,
                                    float* HWY_RESTRICT out) {
  const Rows16Tag d32;
  const hn::Repartition<float, Rows16Tag> df;
  const size_t L = hn::Lanes(d32);
  HWY_ALIGN float acc[kRows16Block];
  for (size_t r = r0; r < r1; r += kRows16Block) {
    for (size_t s = L; s < kRows16Block; s += L) hn::Store(hn::Zero(df), df, acc + s);
    auto acc0 = hn::Zero(df);
    for (size_t g = 0; g < w.groups; ++g) {
      ReadAhead(w, r, g);
      const int8_t* x = a.q + g * w.group;
      hn::Vec<Rows16Tag> lo, hi;
      const Rows16Lanes p0 = LanesAt(w, r, g);
      GroupDot<kGroup>(d32, p0.codes, x, w.group, lo, hi);
      acc0 = ScaleGroup(df, p0, lo, hi, a.d[g], a.s[g], acc0);
      for (size_t s = L; s < kRows16Block; s += L) {
        const Rows16Lanes p = LanesAt(w, r + s, g);
        GroupDot<kGroup>(d32, p.codes, x, w.group, lo, hi);
        hn::Store(ScaleGroup(df, p, lo, hi, a.d[g], a.s[g], hn::Load(df, acc + s)), df, acc + s);
      }
    }
    StoreRows(df, acc0, bias, r, out);
    for (size_t s = L; s < kRows16Block; s += L)
      StoreRows(df, hn::Load(df, acc + s), bias, r + s, out);
  }
}

// Whether Rows16GemvInt8Blocks serves this target: vectors of fewer than 16
// rows, of a fixed size (an array can hold them), and registers for every
// lane block's sums. x86 has 16 vector registers: AVX2's two lane blocks
// fit, SSE4's four (8 sums, 2 broadcasts, the mask, the loads) do not, and
// spilling made it slower than lane blocks in turn (ops_bench, 33 MB
// weight: 13.1-14.9 GB/s against 13.3-15.3). aarch64 has 32.
#undef POCKET_ROWS16_GEMV_BLOCKS
#if !HWY_HAVE_SCALABLE && (HWY_TARGET == HWY_AVX2 || HWY_ARCH_ARM_A64)
#define POCKET_ROWS16_GEMV_BLOCKS 1
#else
#define POCKET_ROWS16_GEMV_BLOCKS 0
#endif

#if POCKET_ROWS16_GEMV_BLOCKS
// The same rows with all kRows16LaneBlocks lane blocks of a 16-row block in
// one pass over each chunk: every 64-byte line is used whole as it arrives,
// each activation broadcast feeds every lane block, and all sums stay in
// registers (a low and a high nibble chain per lane block: 4 on AVX2, 8 on
// NEON, enough to hide the dot latency). Int16 sums (U4Sums: x86 without
// VNNI, ARMv8.0) are widened every kU4Terms chunks. A counted chunk loop: fully unrolled for group
// 64, GCC computed every product first and spilled them, for no gain. (On AVX2 this streams a
// 33 MB weight at 34-35 GB/s where lane blocks in turn read 23-26 on a Zen 5;
// docs/performance.md.)
HWY_INLINE void Rows16GemvInt8Blocks(const Rows16Weights& w, const QuantizedActs& a,
                                     const float* bias, size_t r0, size_t r1,
                                     float* HWY_RESTRICT out) {
  constexpr size_t kB = kRows16Block / hn::MaxLanes(Rows16Tag());  // lane blocks: 2 or 4
  const Rows16Tag d32;
  const hn::Repartition<float, Rows16Tag> df;
  const hn::Repartition<uint8_t, Rows16Tag> du8;
  const hn::Repartition<int8_t, Rows16Tag> di8;
  constexpr size_t L = hn::MaxLanes(d32);
  const auto low4 = hn::Set(du8, 0x0F);
  const size_t chunks = w.group / 8;
  for (size_t r = r0; r < r1; r += kRows16Block) {
    hn::Vec<decltype(df)> acc[kB];
    HWY_UNROLL(4)
    for (size_t b = 0; b < kB; ++b) acc[b] = hn::Zero(df);
    for (size_t g = 0; g < w.groups; ++g) {
      ReadAhead(w, r, g);
      const int8_t* x = a.q + g * w.group;
      const Rows16Lanes p = LanesAt(w, r, g);  // lane block b: 4 L b bytes, L b scales on
      hn::Vec<Rows16Tag> lo[kB], hi[kB];
      HWY_UNROLL(4)
      for (size_t b = 0; b < kB; ++b) lo[b] = hi[b] = hn::Zero(d32);
      for (size_t c0 = 0; c0 < chunks; c0 += kU4Terms) {
        U4Sums<Rows16Tag> l[kB], h[kB];
        HWY_UNROLL(4)
        for (size_t b = 0; b < kB; ++b) l[b] = h[b] = ZeroU4(d32);
        const size_t c1 = HWY_MIN(chunks, c0 + kU4Terms);
        for (size_t c = c0; c < c1; ++c) {
          const auto xq = LoadQuads<2>(di8, x + 8 * c);
          HWY_UNROLL(4)
          for (size_t b = 0; b < kB; ++b) {
            const auto bytes = hn::LoadU(du8, p.codes + 64 * c + 4 * L * b);
            l[b] = DotU4Quad<0>(hn::And(bytes, low4), xq, l[b]);
            h[b] = DotU4Quad<1>(HighNibbles(du8, bytes), xq, h[b]);
          }
        }
        HWY_UNROLL(4)
        for (size_t b = 0; b < kB; ++b) {
          lo[b] = hn::Add(lo[b], WidenU4(l[b]));
          hi[b] = hn::Add(hi[b], WidenU4(h[b]));
        }
      }
      HWY_UNROLL(4)
      for (size_t b = 0; b < kB; ++b) {
        const Rows16Lanes pb{p.codes + 4 * L * b, p.scales + L * b, p.mins + L * b};
        acc[b] = ScaleGroup(df, pb, lo[b], hi[b], a.d[g], a.s[g], acc[b]);
      }
    }
    HWY_UNROLL(4)
    for (size_t b = 0; b < kB; ++b) StoreRows(df, acc[b], bias, r + L * b, out);
  }
}
#endif  // POCKET_ROWS16_GEMV_BLOCKS

// With GroupDot, group 64 (the converter's default) gets a group loop the
// compiler unrolls: for AVX3_DL on the Zen 5 host it streamed a 256 MiB
// weight at 0.87-0.94 of the read probe on 1 thread (the counted loop
// 0.87-0.88) and 0.91-0.98 on 2 (0.87-0.94), in 3 alternated invocations.
HWY_INLINE void Rows16GemvInt8(const Rows16Weights& w, const QuantizedActs& a, const float* bias,
                               size_t r0, size_t r1, float* HWY_RESTRICT out) {
#if POCKET_ROWS16_GEMV_BLOCKS
  Rows16GemvInt8Blocks(w, a, bias, r0, r1, out);
#else
  if (w.group == 64) return Rows16GemvInt8Group<64>(w, a, bias, r0, r1, out);
  Rows16GemvInt8Group<0>(w, a, bias, r0, r1, out);
#endif
}

// The activations of tokens t .. t + 3 of n (the last token stands in for
// those past the end, whose results are not stored).
struct TokenQuad {
  const int8_t* x[4];
  const float* dx[4];
  const float* xs[4];
  const int32_t* qs[4];  // null where the activations carry no code sums
};
HWY_INLINE TokenQuad TokensAt(const Rows16Weights& w, const QuantizedActs& a, size_t n, size_t t) {
  TokenQuad q;
  for (size_t k = 0; k < 4; ++k) {
    const size_t tok = std::min(t + k, n - 1);
    q.x[k] = a.q + tok * w.cols;
    q.dx[k] = a.d + tok * w.groups;
    q.xs[k] = a.s + tok * w.groups;
    q.qs[k] = a.qs ? a.qs + tok * w.groups : nullptr;
  }
  return q;
}

// Rows [r, r + L) of tokens t .. t + 3 of out[n, rows], those that exist.
template <class DF, class V = hn::Vec<DF>>
HWY_INLINE void StoreTokens(DF df, V f0, V f1, V f2, V f3, const float* bias, size_t r, size_t t,
                            size_t n, size_t rows, float* HWY_RESTRICT out) {
  StoreRows(df, f0, bias, r, out + t * rows);
  if (t + 1 < n) StoreRows(df, f1, bias, r, out + (t + 1) * rows);
  if (t + 2 < n) StoreRows(df, f2, bias, r, out + (t + 2) * rows);
  if (t + 3 < n) StoreRows(df, f3, bias, r, out + (t + 3) * rows);
}

// Targets with 32 vector registers (AVX-512, aarch64 NEON and SVE) tile two
// lane blocks by 4 tokens, so each activation broadcast feeds two dots. So
// does AVX2 with AVX-VNNI, whose 16 registers then spill the f32 sums (one
// update per group): with one vpdpbusd per dot the broadcasts were the cost,
// and the pair tile ran 1.49-1.57x the single one in ops_bench (896 x 896 x
// 64 tokens). Plain AVX2 (maddubs and madd per dot) gained nothing from it.
#if HWY_TARGET <= HWY_AVX3 || HWY_ARCH_ARM_A64 || defined(POCKET_INT8_AVX_VNNI)
#define POCKET_ROWS16_GEMM_PAIRS 1
#else
#define POCKET_ROWS16_GEMM_PAIRS 0
#endif

#if POCKET_ROWS16_GEMM_PAIRS
// Lane blocks [r, r + L) and [r + L, r + 2L) for tokens [t, t + 4) of n:
// 8 int32 accumulators (a lane block's low and high nibble products go to
// one), 8 f32 ones, 4 nibble vectors and 2 broadcasts.
HWY_INLINE void Rows16TilePair(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                               const float* bias, size_t r, size_t t, float* HWY_RESTRICT out) {
  const Rows16Tag d32;
  const hn::Repartition<float, Rows16Tag> df;
  const hn::Repartition<uint8_t, Rows16Tag> du8;
  const hn::Repartition<int8_t, Rows16Tag> di8;
  const size_t L = hn::Lanes(d32);
  const auto low4 = hn::Set(du8, 0x0F);
  const TokenQuad q = TokensAt(w, a, n, t);
  const int8_t* const* x = q.x;
  const float* const* dx = q.dx;
  const float* const* xs = q.xs;
  auto f00 = hn::Zero(df), f01 = hn::Zero(df), f02 = hn::Zero(df), f03 = hn::Zero(df);
  auto f10 = hn::Zero(df), f11 = hn::Zero(df), f12 = hn::Zero(df), f13 = hn::Zero(df);
  for (size_t g = 0; g < w.groups; ++g) {
    const Rows16Lanes p0 = LanesAt(w, r, g), p1 = LanesAt(w, r + L, g);
    auto i00 = hn::Zero(d32), i01 = hn::Zero(d32), i02 = hn::Zero(d32), i03 = hn::Zero(d32);
    auto i10 = hn::Zero(d32), i11 = hn::Zero(d32), i12 = hn::Zero(d32), i13 = hn::Zero(d32);
    const size_t k0 = g * w.group;
    for (size_t c = 0; c < w.group / 8; ++c) {
      const auto b0 = hn::LoadU(du8, p0.codes + 64 * c);
      const auto b1 = hn::LoadU(du8, p1.codes + 64 * c);
      const auto lo0 = hn::And(b0, low4), hi0 = hn::ShiftRight<4>(b0);
      const auto lo1 = hn::And(b1, low4), hi1 = hn::ShiftRight<4>(b1);
      const size_t k = k0 + 8 * c;
      // Token t's low and high nibble products with both lane blocks.
      const auto dot = [&](const int8_t* xt, auto& i0, auto& i1) {
        const auto xq = LoadQuads<2>(di8, xt + k);
        i0 = DotU7Quad<1>(hi0, xq, DotU7Quad<0>(lo0, xq, i0));
        i1 = DotU7Quad<1>(hi1, xq, DotU7Quad<0>(lo1, xq, i1));
      };
      dot(x[0], i00, i10);
      dot(x[1], i01, i11);
      dot(x[2], i02, i12);
      dot(x[3], i03, i13);
      KeepInRegisters(i00, i01, i02, i03, i10, i11, i12, i13);
    }
    const auto s0 = LoadF32(df, p0.scales), m0 = LoadF32(df, p0.mins);
    const auto s1 = LoadF32(df, p1.scales), m1 = LoadF32(df, p1.mins);
    // f += float(i) * s * dx + m * xs for each block and token.
    const auto scale_add = [&](auto i, auto sc, auto mn, size_t k, auto f) {
      f = hn::MulAdd(hn::ConvertTo(df, i), hn::Mul(sc, hn::Set(df, dx[k][g])), f);
      return hn::MulAdd(mn, hn::Set(df, xs[k][g]), f);
    };
    f00 = scale_add(i00, s0, m0, 0, f00);
    f01 = scale_add(i01, s0, m0, 1, f01);
    f02 = scale_add(i02, s0, m0, 2, f02);
    f03 = scale_add(i03, s0, m0, 3, f03);
    f10 = scale_add(i10, s1, m1, 0, f10);
    f11 = scale_add(i11, s1, m1, 1, f11);
    f12 = scale_add(i12, s1, m1, 2, f12);
    f13 = scale_add(i13, s1, m1, 3, f13);
  }
  StoreTokens(df, f00, f01, f02, f03, bias, r, t, n, w.rows, out);
  StoreTokens(df, f10, f11, f12, f13, bias, r + L, t, n, w.rows, out);
}
#endif  // POCKET_ROWS16_GEMM_PAIRS

// Prefill reads each lane block's records from DRAM once per token chunk, in
// runs too short for the hardware prefetchers to get ahead of. So while the
// tiles of rows [r, r + rows) run, each requests its share of the records of
// the next rows, [r + rows, r + 2 rows) (bounded by r1), into L2: tile
// `tile` of `tiles`. Lane blocks narrower than 16 rows share their records
// with a neighbour, so only a unit that ends a 16-row block prefetches.
HWY_INLINE void PrefetchNextRows(const Rows16Weights& w, size_t r, size_t rows, size_t r1,
                                 size_t tile, size_t tiles) {
  const size_t next = r + rows;
  if (next % kRows16Block != 0 || next >= r1) return;
  const size_t blocks =
      (std::min(next + std::max<size_t>(rows, kRows16Block), r1) - next + kRows16Block - 1) /
      kRows16Block;
  const size_t bytes = blocks * w.groups * w.record_bytes;
  const size_t share = (bytes / tiles + 63) / 64 * 64;
  const size_t begin = std::min(bytes, tile * share);
  PrefetchBytes(w.Record(next / kRows16Block, 0) + begin, std::min(bytes, begin + share) - begin);
}

// One 64-byte chunk of a lane block's record (8 weights of each row, from
// weight k of the activations) times tokens x[0..3]: adds each token's low
// and high nibble products into l*, h* (U4Sums or int32 lanes).
template <class VS>
HWY_INLINE void TileChunk(const uint8_t* HWY_RESTRICT chunk, const int8_t* const* x, size_t k,
                          VS& l0, VS& h0, VS& l1, VS& h1, VS& l2, VS& h2, VS& l3, VS& h3) {
  const hn::Repartition<uint8_t, Rows16Tag> du8;
  const hn::Repartition<int8_t, Rows16Tag> di8;
  const auto bytes = hn::LoadU(du8, chunk);
  const auto lo = hn::And(bytes, hn::Set(du8, 0x0F));
  const auto hi = HighNibbles(du8, bytes);
  const auto dot = [&](const int8_t* xt, VS& l, VS& h) {
    const auto xq = LoadQuads<2>(di8, xt + k);
    l = DotU4Quad<0>(lo, xq, l);
    h = DotU4Quad<1>(hi, xq, h);
  };
  dot(x[0], l0, h0);
  dot(x[1], l1, h1);
  dot(x[2], l2, h2);
  dot(x[3], l3, h3);
}

// Tiles of rows [r0, r1) of out[n, w.rows] by 4 tokens: Tiles::Pair (two
// lane blocks) where Tiles::kPairs (the target has the registers for it,
// and it pays), then Tiles::Single (one), each after asking for its share
// of the next rows.
template <class Tiles>
HWY_INLINE void Rows16Gemm(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                           const float* bias, size_t r0, size_t r1, float* HWY_RESTRICT out) {
  const size_t L = hn::Lanes(Rows16Tag());
  const size_t tiles = (n + 3) / 4;
  size_t r = r0;
  if constexpr (Tiles::kPairs) {
    for (; r + 2 * L <= r1; r += 2 * L) {
      for (size_t t = 0; t < n; t += 4) {
        PrefetchNextRows(w, r, 2 * L, r1, t / 4, tiles);
        Tiles::Pair(w, a, n, bias, r, t, out);
      }
    }
  }
  for (; r < r1; r += L) {
    for (size_t t = 0; t < n; t += 4) {
      PrefetchNextRows(w, r, L, r1, t / 4, tiles);
      Tiles::Single(w, a, n, bias, r, t, out);
    }
  }
}

// q4's tiles. Single: one lane block by 4 tokens, 8 int32 and 4 f32
// accumulators plus the two nibble vectors and two broadcasts fit the 16
// registers of AVX2. ARMv8.0 NEON (no sdot) takes Single only: its int16
// sums (U4Pair) make a dot 2 vector operations where the pair tile's DotU7
// takes 4, more than the pair tile saves by sharing broadcasts (llvm-mca's
// A53 model: 46 cycles per 64-byte step against the pair tile's 56.5;
// docs/performance.md).
struct Q4Tiles {
#if HWY_TARGET == HWY_NEON && !defined(__ARM_FEATURE_DOTPROD)
  static constexpr bool kPairs = false;
#else
  static constexpr bool kPairs = POCKET_ROWS16_GEMM_PAIRS;
#endif
#if POCKET_ROWS16_GEMM_PAIRS
  static HWY_INLINE void Pair(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                              const float* bias, size_t r, size_t t, float* HWY_RESTRICT out) {
    Rows16TilePair(w, a, n, bias, r, t, out);
  }
#endif
  static HWY_INLINE void Single(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                                const float* bias, size_t r, size_t t, float* HWY_RESTRICT out) {
    const Rows16Tag d32;
    const hn::Repartition<float, Rows16Tag> df;
    const TokenQuad q = TokensAt(w, a, n, t);
    const int8_t* const* x = q.x;
    const float* const* dx = q.dx;
    const float* const* xs = q.xs;
    auto f0 = hn::Zero(df), f1 = hn::Zero(df), f2 = hn::Zero(df), f3 = hn::Zero(df);
    for (size_t g = 0; g < w.groups; ++g) {
      const Rows16Lanes p = LanesAt(w, r, g);
      auto lo0 = hn::Zero(d32), hi0 = hn::Zero(d32), lo1 = hn::Zero(d32), hi1 = hn::Zero(d32);
      auto lo2 = hn::Zero(d32), hi2 = hn::Zero(d32), lo3 = hn::Zero(d32), hi3 = hn::Zero(d32);
      const size_t k0 = g * w.group, chunks = w.group / 8;
#if !defined(POCKET_U4_SUMS_16)
      for (size_t c = 0; c < chunks; ++c) {
        TileChunk(p.codes + 64 * c, x, k0 + 8 * c, lo0, hi0, lo1, hi1, lo2, hi2, lo3, hi3);
      }
#else
      // Int16 sums: runs of at most kU4Terms chunks (G 128: two).
      for (size_t c0 = 0; c0 < chunks; c0 += kU4Terms) {
        U4Sums<Rows16Tag> l0 = ZeroU4(d32), h0 = l0, l1 = l0, h1 = l0;
        U4Sums<Rows16Tag> l2 = l0, h2 = l0, l3 = l0, h3 = l0;
        for (size_t c = c0; c < std::min(chunks, c0 + kU4Terms); ++c) {
          TileChunk(p.codes + 64 * c, x, k0 + 8 * c, l0, h0, l1, h1, l2, h2, l3, h3);
        }
        lo0 = hn::Add(lo0, WidenU4(l0));
        hi0 = hn::Add(hi0, WidenU4(h0));
        lo1 = hn::Add(lo1, WidenU4(l1));
        hi1 = hn::Add(hi1, WidenU4(h1));
        lo2 = hn::Add(lo2, WidenU4(l2));
        hi2 = hn::Add(hi2, WidenU4(h2));
        lo3 = hn::Add(lo3, WidenU4(l3));
        hi3 = hn::Add(hi3, WidenU4(h3));
      }
#endif
      f0 = ScaleGroup(df, p, lo0, hi0, dx[0][g], xs[0][g], f0);
      f1 = ScaleGroup(df, p, lo1, hi1, dx[1][g], xs[1][g], f1);
      f2 = ScaleGroup(df, p, lo2, hi2, dx[2][g], xs[2][g], f2);
      f3 = ScaleGroup(df, p, lo3, hi3, dx[3][g], xs[3][g], f3);
    }
    StoreTokens(df, f0, f1, f2, f3, bias, r, t, n, w.rows, out);
  }
};

HWY_INLINE void Rows16GemmInt8(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                               const float* bias, size_t r0, size_t r1, float* HWY_RESTRICT out) {
  Rows16Gemm<Q4Tiles>(w, a, n, bias, r0, r1, out);
}

// q8 weights (format/dtype.h): each 32-bit lane of a 64-byte chunk is 4
// int8 codes of its row, so a chunk is one DotS8 step against 4 broadcast
// activations, and a group (32 weights: 8 chunks) adds s_rg dx_g times its
// integer sums; there are no mins.

// A chunk of q8 codes as a dot product takes them. With dpbusd (u8 x s8
// into int32, no saturation) the codes go in as w + 128, one xor per chunk
// for every token it meets, and Finish takes 128 times the group's
// activation code sum back out of a token's sums; elsewhere DotS8 moves the
// codes' signs onto each token's activations (|w| once per chunk).
struct Q8Chunk {
  using DI8 = hn::Repartition<int8_t, Rows16Tag>;
#if defined(POCKET_INT8_DPBUSD)
  using DW = hn::Repartition<uint8_t, Rows16Tag>;
  static HWY_INLINE hn::Vec<DW> Load(const uint8_t* p) {
    const DW du8;
    return hn::Xor(hn::LoadU(du8, p), hn::Set(du8, 0x80));
  }
  template <size_t kQuad, class Q, class V32>
  static HWY_INLINE V32 Dot(hn::Vec<DW> w, Q x, V32 acc) {
    return DotU7Quad<kQuad>(w, x, acc);
  }
  template <class V32>
  static HWY_INLINE V32 Finish(V32 sums, const int32_t* code_sum) {
    return hn::Sub(sums, hn::Set(Rows16Tag(), 128 * *code_sum));
  }
#else
  using DW = DI8;
  static HWY_INLINE hn::Vec<DW> Load(const uint8_t* p) {
    return hn::LoadU(DW(), reinterpret_cast<const int8_t*>(p));
  }
  template <size_t kQuad, class Q, class V32>
  static HWY_INLINE V32 Dot(hn::Vec<DW> w, Q x, V32 acc) {
    return DotS8Quad<kQuad>(w, x, acc);
  }
  template <class V32>
  static HWY_INLINE V32 Finish(V32 sums, const int32_t*) {
    return sums;
  }
#endif
};

// Tokens q.x[0..3] times one lane block's group g (8 chunks of 64 bytes
// from `codes`, two a step, so each token's quads are one run): 4 int32
// sums.
template <class V32>
HWY_INLINE void Q8TileGroup(const uint8_t* HWY_RESTRICT codes, const TokenQuad& q, size_t g,
                            size_t group, V32& i0, V32& i1, V32& i2, V32& i3) {
  const Q8Chunk::DI8 di8;
  for (size_t c = 0; c < group / 4; c += 2) {
    const auto w0 = Q8Chunk::Load(codes + 64 * c), w1 = Q8Chunk::Load(codes + 64 * c + 64);
    const size_t k = g * group + 4 * c;
    const auto x0 = LoadQuads<2>(di8, q.x[0] + k), x1 = LoadQuads<2>(di8, q.x[1] + k);
    const auto x2 = LoadQuads<2>(di8, q.x[2] + k), x3 = LoadQuads<2>(di8, q.x[3] + k);
    // The first chunk for every token, then the second (Rows16TilePair's order).
    const auto step = [&](auto quad, const auto& wq) {
      constexpr size_t kQ = decltype(quad)::value;
      i0 = Q8Chunk::Dot<kQ>(wq, x0, i0);
      i1 = Q8Chunk::Dot<kQ>(wq, x1, i1);
      i2 = Q8Chunk::Dot<kQ>(wq, x2, i2);
      i3 = Q8Chunk::Dot<kQ>(wq, x3, i3);
    };
    step(std::integral_constant<size_t, 0>(), w0);
    step(std::integral_constant<size_t, 1>(), w1);
  }
  i0 = Q8Chunk::Finish(i0, q.qs[0] + g);
  i1 = Q8Chunk::Finish(i1, q.qs[1] + g);
  i2 = Q8Chunk::Finish(i2, q.qs[2] + g);
  i3 = Q8Chunk::Finish(i3, q.qs[3] + g);
}

#if POCKET_ROWS16_GEMM_PAIRS
// Lane blocks [r, r + L) and [r + L, r + 2L) of a q8 weight for tokens
// [t, t + 4) of n, each broadcast feeding both blocks (Rows16TilePair's
// reason), two chunks a step: 8 int32 and 8 f32 accumulators, 4 code
// vectors, a token's quads.
HWY_INLINE void Rows16TilePairQ8(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                                 const float* bias, size_t r, size_t t, float* HWY_RESTRICT out) {
  const Rows16Tag d32;
  const hn::Repartition<float, Rows16Tag> df;
  const Q8Chunk::DI8 di8;
  const size_t L = hn::Lanes(d32);
  const TokenQuad q = TokensAt(w, a, n, t);
  auto f00 = hn::Zero(df), f01 = hn::Zero(df), f02 = hn::Zero(df), f03 = hn::Zero(df);
  auto f10 = hn::Zero(df), f11 = hn::Zero(df), f12 = hn::Zero(df), f13 = hn::Zero(df);
  for (size_t g = 0; g < w.groups; ++g) {
    const Rows16Lanes p0 = LanesAt(w, r, g), p1 = LanesAt(w, r + L, g);
    auto i00 = hn::Zero(d32), i01 = hn::Zero(d32), i02 = hn::Zero(d32), i03 = hn::Zero(d32);
    auto i10 = hn::Zero(d32), i11 = hn::Zero(d32), i12 = hn::Zero(d32), i13 = hn::Zero(d32);
    for (size_t c = 0; c < w.group / 4; c += 2) {
      const auto w00 = Q8Chunk::Load(p0.codes + 64 * c),
                 w01 = Q8Chunk::Load(p0.codes + 64 * c + 64);
      const auto w10 = Q8Chunk::Load(p1.codes + 64 * c),
                 w11 = Q8Chunk::Load(p1.codes + 64 * c + 64);
      const size_t k = g * w.group + 4 * c;
      const auto x0 = LoadQuads<2>(di8, q.x[0] + k), x1 = LoadQuads<2>(di8, q.x[1] + k);
      const auto x2 = LoadQuads<2>(di8, q.x[2] + k), x3 = LoadQuads<2>(di8, q.x[3] + k);
      // The first chunk for every token, then the second (Rows16TilePair's order).
      const auto step = [&](auto quad, const auto& c0, const auto& c1) {
        constexpr size_t kQ = decltype(quad)::value;
        i00 = Q8Chunk::Dot<kQ>(c0, x0, i00);
        i10 = Q8Chunk::Dot<kQ>(c1, x0, i10);
        i01 = Q8Chunk::Dot<kQ>(c0, x1, i01);
        i11 = Q8Chunk::Dot<kQ>(c1, x1, i11);
        i02 = Q8Chunk::Dot<kQ>(c0, x2, i02);
        i12 = Q8Chunk::Dot<kQ>(c1, x2, i12);
        i03 = Q8Chunk::Dot<kQ>(c0, x3, i03);
        i13 = Q8Chunk::Dot<kQ>(c1, x3, i13);
      };
      step(std::integral_constant<size_t, 0>(), w00, w10);
      step(std::integral_constant<size_t, 1>(), w01, w11);
      KeepInRegisters(i00, i01, i02, i03, i10, i11, i12, i13);
    }
    const auto s0 = LoadF32(df, p0.scales), s1 = LoadF32(df, p1.scales);
    f00 = Q8Scale(df, Q8Chunk::Finish(i00, q.qs[0] + g), s0, q.dx[0][g], f00);
    f01 = Q8Scale(df, Q8Chunk::Finish(i01, q.qs[1] + g), s0, q.dx[1][g], f01);
    f02 = Q8Scale(df, Q8Chunk::Finish(i02, q.qs[2] + g), s0, q.dx[2][g], f02);
    f03 = Q8Scale(df, Q8Chunk::Finish(i03, q.qs[3] + g), s0, q.dx[3][g], f03);
    f10 = Q8Scale(df, Q8Chunk::Finish(i10, q.qs[0] + g), s1, q.dx[0][g], f10);
    f11 = Q8Scale(df, Q8Chunk::Finish(i11, q.qs[1] + g), s1, q.dx[1][g], f11);
    f12 = Q8Scale(df, Q8Chunk::Finish(i12, q.qs[2] + g), s1, q.dx[2][g], f12);
    f13 = Q8Scale(df, Q8Chunk::Finish(i13, q.qs[3] + g), s1, q.dx[3][g], f13);
  }
  StoreTokens(df, f00, f01, f02, f03, bias, r, t, n, w.rows, out);
  StoreTokens(df, f10, f11, f12, f13, bias, r + L, t, n, w.rows, out);
}
#endif  // POCKET_ROWS16_GEMM_PAIRS

#if POCKET_ROWS16_GEMV_BLOCKS
// Rows16GemvQ8 where vectors hold fewer than 16 rows (AVX2, aarch64 NEON),
// as Rows16GemvInt8Blocks does for q4: one pass over each chunk feeds every
// lane block from one broadcast, so each 64-byte line is used whole as it
// arrives (lane blocks in turn read the stream with the first, using part of
// each line: on AVX2 this q8 model decoded slower than from planar weights).
// Even and odd chunks go to two chains per lane block.
HWY_INLINE void Rows16GemvQ8Blocks(const Rows16Weights& w, const QuantizedActs& a,
                                   const float* bias, size_t r0, size_t r1,
                                   float* HWY_RESTRICT out) {
  constexpr size_t kB = kRows16Block / hn::MaxLanes(Rows16Tag());  // lane blocks: 2 or 4
  const Rows16Tag d32;
  const hn::Repartition<float, Rows16Tag> df;
  const hn::Repartition<int8_t, Rows16Tag> di8;
  constexpr size_t L = hn::MaxLanes(d32);
  for (size_t r = r0; r < r1; r += kRows16Block) {
    hn::Vec<decltype(df)> acc[kB];
    HWY_UNROLL(4)
    for (size_t b = 0; b < kB; ++b) acc[b] = hn::Zero(df);
    for (size_t g = 0; g < w.groups; ++g) {
      ReadAhead(w, r, g);
      const Rows16Lanes p = LanesAt(w, r, g);  // lane block b: 4 L b bytes, L b scales on
      const int8_t* codes = reinterpret_cast<const int8_t*>(p.codes);
      const int8_t* x = a.q + g * w.group;
      hn::Vec<Rows16Tag> even[kB], odd[kB];
      HWY_UNROLL(4)
      for (size_t b = 0; b < kB; ++b) even[b] = odd[b] = hn::Zero(d32);
      for (size_t c = 0; c < w.group / 4; c += 2) {
        const auto xq = LoadQuads<2>(di8, x + 4 * c);
        HWY_UNROLL(4)
        for (size_t b = 0; b < kB; ++b) {
          even[b] = DotS8Quad<0>(hn::LoadU(di8, codes + 64 * c + 4 * L * b), xq, even[b]);
          odd[b] = DotS8Quad<1>(hn::LoadU(di8, codes + 64 * c + 64 + 4 * L * b), xq, odd[b]);
        }
      }
      HWY_UNROLL(4)
      for (size_t b = 0; b < kB; ++b) {
        acc[b] =
            Q8Scale(df, hn::Add(even[b], odd[b]), LoadF32(df, p.scales + L * b), a.d[g], acc[b]);
      }
    }
    HWY_UNROLL(4)
    for (size_t b = 0; b < kB; ++b) StoreRows(df, acc[b], bias, r + L * b, out);
  }
}
#endif  // POCKET_ROWS16_GEMV_BLOCKS

// Rows [r0, r1) of one token over a q8 rows16 weight. Where a vector holds
// 16 rows (AVX-512), or an array cannot hold vectors (SVE), or registers are
// few (SSE4): one lane block at a time (a 16-row block's records, 544 bytes
// per group, are still in L1 for its next lane block), the chunks of a group
// split over four chains.
HWY_INLINE void Rows16GemvQ8(const Rows16Weights& w, const QuantizedActs& a, const float* bias,
                             size_t r0, size_t r1, float* HWY_RESTRICT out) {
#if POCKET_ROWS16_GEMV_BLOCKS
  return Rows16GemvQ8Blocks(w, a, bias, r0, r1, out);
#endif
  const Rows16Tag d32;
  const hn::Repartition<float, Rows16Tag> df;
  const hn::Repartition<int8_t, Rows16Tag> di8;
  const size_t L = hn::Lanes(d32);
  const size_t chunks = w.group / 4;  // 8: a multiple of 4
  for (size_t r = r0; r < r1; r += L) {
    auto acc = hn::Zero(df);
    for (size_t g = 0; g < w.groups; ++g) {
      ReadAhead(w, r, g);
      const Rows16Lanes p = LanesAt(w, r, g);
      const int8_t* codes = reinterpret_cast<const int8_t*>(p.codes);
      const int8_t* x = a.q + g * w.group;
      auto s0 = hn::Zero(d32), s1 = hn::Zero(d32), s2 = hn::Zero(d32), s3 = hn::Zero(d32);
      for (size_t c = 0; c < chunks; c += 4) {
        const auto xq = LoadQuads<4>(di8, x + 4 * c);
        s0 = DotS8Quad<0>(hn::LoadU(di8, codes + 64 * c), xq, s0);
        s1 = DotS8Quad<1>(hn::LoadU(di8, codes + 64 * c + 64), xq, s1);
        s2 = DotS8Quad<2>(hn::LoadU(di8, codes + 64 * c + 128), xq, s2);
        s3 = DotS8Quad<3>(hn::LoadU(di8, codes + 64 * c + 192), xq, s3);
      }
      acc = Q8Scale(df, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), LoadF32(df, p.scales), a.d[g],
                    acc);
    }
    StoreRows(df, acc, bias, r, out);
  }
}

// q8's tiles: Single is one lane block by 4 tokens (4 int32 and 4 f32
// accumulators, the codes and a broadcast fit 16 registers).
struct Q8Tiles {
  static constexpr bool kPairs = POCKET_ROWS16_GEMM_PAIRS;
#if POCKET_ROWS16_GEMM_PAIRS
  static HWY_INLINE void Pair(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                              const float* bias, size_t r, size_t t, float* HWY_RESTRICT out) {
    Rows16TilePairQ8(w, a, n, bias, r, t, out);
  }
#endif
  static HWY_INLINE void Single(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                                const float* bias, size_t r, size_t t, float* HWY_RESTRICT out) {
    const Rows16Tag d32;
    const hn::Repartition<float, Rows16Tag> df;
    const TokenQuad q = TokensAt(w, a, n, t);
    auto f0 = hn::Zero(df), f1 = hn::Zero(df), f2 = hn::Zero(df), f3 = hn::Zero(df);
    for (size_t g = 0; g < w.groups; ++g) {
      const Rows16Lanes p = LanesAt(w, r, g);
      auto i0 = hn::Zero(d32), i1 = hn::Zero(d32), i2 = hn::Zero(d32), i3 = hn::Zero(d32);
      Q8TileGroup(p.codes, q, g, w.group, i0, i1, i2, i3);
      const auto s = LoadF32(df, p.scales);
      f0 = Q8Scale(df, i0, s, q.dx[0][g], f0);
      f1 = Q8Scale(df, i1, s, q.dx[1][g], f1);
      f2 = Q8Scale(df, i2, s, q.dx[2][g], f2);
      f3 = Q8Scale(df, i3, s, q.dx[3][g], f3);
    }
    StoreTokens(df, f0, f1, f2, f3, bias, r, t, n, w.rows, out);
  }
};

// Rows [r0, r1) of out[n, w.rows] for n tokens over a q8 rows16 weight;
// a.qs must hold the code sums where Q8Chunk uses them (LinearInt8Group
// makes them for q8 rows16 weights).
HWY_INLINE void Rows16GemmQ8(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                             const float* bias, size_t r0, size_t r1, float* HWY_RESTRICT out) {
  Rows16Gemm<Q8Tiles>(w, a, n, bias, r0, r1, out);
}

// A few tokens at once (speculation's verify step, a short prompt's last
// chunk): rows [r0, r1) (multiples of 16) of out[n, w.rows], the records
// streamed as decode streams them (each 16-row block's in order, once from
// memory), each chunk loaded once for kT tokens. A token's integer group sums
// are exact and scale through ScaleSums / Q8Scale in group order, so its
// outputs equal Rows16GemvInt8's / Rows16GemvQ8's bit for bit.
//
// kBatchPass tokens per pass over a lane block's records (the passes after
// the first read them from L1): int32 sums and f32 accumulators for each,
// which 32 vector registers hold for 8 tokens and 16 for 4.
#if HWY_TARGET <= HWY_AVX3 || HWY_ARCH_ARM_A64
constexpr size_t kBatchPass = 8;
#else
constexpr size_t kBatchPass = 4;
#endif

#if !HWY_HAVE_SCALABLE
// The batch kernels' group step for q4: each token's exact integer sums of
// one group of a lane block (x: the first token's activations of the group,
// the next token's `stride` on), then their ScaleSums.
struct BatchQ4 {
  template <size_t kT, class V32>
  static HWY_INLINE void Sums(const uint8_t* HWY_RESTRICT codes, const int8_t* x, size_t stride,
                              size_t group, V32 (&sums)[kT]) {
    const hn::Repartition<uint8_t, Rows16Tag> du8;
    const hn::Repartition<int8_t, Rows16Tag> di8;
    for (size_t c = 0; c < group / 8; ++c) {
      const auto bytes = hn::LoadU(du8, codes + 64 * c);
      const auto lo = hn::And(bytes, hn::Set(du8, 0x0F)), hi = hn::ShiftRight<4>(bytes);
      for (size_t k = 0; k < kT; ++k) {
        const auto xq = LoadQuads<2>(di8, x + k * stride + 8 * c);
        sums[k] = DotU7Quad<1>(hi, xq, DotU7Quad<0>(lo, xq, sums[k]));
      }
      for (size_t k = 0; k < kT; ++k) sums[k] = InRegister(sums[k]);  // KeepInRegisters' reason
    }
  }
  template <class DF, class V32>
  static HWY_INLINE hn::Vec<DF> Scale(DF df, const Rows16Lanes& p, V32 sums, const QuantizedActs& a,
                                      size_t at, hn::Vec<DF> acc) {
    return ScaleSums(df, p, sums, a.d[at], a.s[at], acc);
  }
};

// q8's: two chunks a step, then Q8Scale.
struct BatchQ8 {
  template <size_t kT, class V32>
  static HWY_INLINE void Sums(const uint8_t* HWY_RESTRICT codes, const int8_t* x, size_t stride,
                              size_t group, V32 (&sums)[kT]) {
    const Q8Chunk::DI8 di8;
    for (size_t c = 0; c < group / 4; c += 2) {
      const auto w0 = Q8Chunk::Load(codes + 64 * c), w1 = Q8Chunk::Load(codes + 64 * c + 64);
      for (size_t k = 0; k < kT; ++k) {
        const auto xq = LoadQuads<2>(di8, x + k * stride + 4 * c);
        sums[k] = Q8Chunk::Dot<1>(w1, xq, Q8Chunk::Dot<0>(w0, xq, sums[k]));
      }
      for (size_t k = 0; k < kT; ++k) sums[k] = InRegister(sums[k]);
    }
  }
  template <class DF, class V32>
  static HWY_INLINE hn::Vec<DF> Scale(DF df, const Rows16Lanes& p, V32 sums, const QuantizedActs& a,
                                      size_t at, hn::Vec<DF> acc) {
    return Q8Scale(df, Q8Chunk::Finish(sums, a.qs + at), LoadF32(df, p.scales), a.d[at], acc);
  }
};

// Tokens [t, t + kT) over lane block [r, r + L).
template <size_t kT, class Step>
HWY_INLINE void Rows16BatchPass(const Rows16Weights& w, const QuantizedActs& a, size_t t,
                                const float* bias, size_t r, float* HWY_RESTRICT out) {
  const Rows16Tag d32;
  const hn::Repartition<float, Rows16Tag> df;
  hn::Vec<decltype(df)> acc[kT];
  for (size_t k = 0; k < kT; ++k) acc[k] = hn::Zero(df);
  for (size_t g = 0; g < w.groups; ++g) {
    ReadAhead(w, r, g);
    const Rows16Lanes p = LanesAt(w, r, g);
    hn::Vec<Rows16Tag> sums[kT];
    for (size_t k = 0; k < kT; ++k) sums[k] = hn::Zero(d32);
    Step::template Sums<kT>(p.codes, a.q + t * w.cols + g * w.group, w.cols, w.group, sums);
    for (size_t k = 0; k < kT; ++k) {
      acc[k] = Step::Scale(df, p, sums[k], a, (t + k) * w.groups + g, acc[k]);
    }
  }
  for (size_t k = 0; k < kT; ++k) StoreRows(df, acc[k], bias, r, out + (t + k) * w.rows);
}

#endif  // !HWY_HAVE_SCALABLE

// f(std::integral_constant<size_t, count>()) for count in [1, kT].
template <size_t kT, class F>
HWY_INLINE void WithTokenCount(size_t count, const F& f) {
  if constexpr (kT > 1) {
    if (count < kT) return WithTokenCount<kT - 1>(count, f);
  }
  f(std::integral_constant<size_t, kT>());
}

// Every token of n, for each lane block of rows [r0, r1), in as few passes
// as kBatchPass allows (each pass loads and splits the codes again), of
// equal sizes. Where vectors are scalable (SVE), which arrays cannot hold,
// each token takes decode's GEMV over one 16-row block at a time instead
// (the block's records in L1 for the tokens after the first).
template <bool kQ8>
HWY_INLINE void Rows16Batch(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                            const float* bias, size_t r0, size_t r1, float* HWY_RESTRICT out) {
#if HWY_HAVE_SCALABLE
  for (size_t r = r0; r < r1; r += kRows16Block) {
    for (size_t t = 0; t < n; ++t) {
      const QuantizedActs one = a.From(t, w.cols, w.groups);
      if constexpr (kQ8) {
        Rows16GemvQ8(w, one, bias, r, r + kRows16Block, out + t * w.rows);
      } else {
        Rows16GemvInt8(w, one, bias, r, r + kRows16Block, out + t * w.rows);
      }
    }
  }
#else
  constexpr size_t L = hn::MaxLanes(Rows16Tag());
  const size_t passes = (n + kBatchPass - 1) / kBatchPass;
  for (size_t r = r0; r < r1; r += L) {
    for (size_t t = 0, pass = 0; pass < passes; ++pass) {
      const size_t count = (n - t + passes - pass - 1) / (passes - pass);
      WithTokenCount<kBatchPass>(count, [&](auto tokens) {
        using Step = std::conditional_t<kQ8, BatchQ8, BatchQ4>;
        Rows16BatchPass<decltype(tokens)::value, Step>(w, a, t, bias, r, out);
      });
      t += count;
    }
  }
#endif
}

#endif  // POCKET_INT8_DOT

// Nibble `kNibble` (0..7, little-endian) of every 32-bit lane as f32.
template <int kNibble, class DF, class VU = hn::Vec<hn::RebindToUnsigned<DF>>>
HWY_INLINE hn::Vec<DF> NibbleF32(DF df, VU quads) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto code = hn::And(hn::ShiftRight<4 * kNibble>(quads), hn::Set(du, 0xF));
  return hn::ConvertTo(df, hn::BitCast(di, code));
}

// Byte `kByte` (0..3, little-endian) of every 32-bit lane, a signed q8
// code, as f32.
template <int kByte, class DF, class VU = hn::Vec<hn::RebindToUnsigned<DF>>>
HWY_INLINE hn::Vec<DF> CodeF32(DF df, VU quads) {
  const hn::RebindToSigned<DF> di;
  return hn::ConvertTo(df,
                       hn::ShiftRight<24>(hn::ShiftLeft<24 - 8 * kByte>(hn::BitCast(di, quads))));
}

// One group of a q8 lane block times f32 activations xk[0, 32).
template <class DF, class V = hn::Vec<DF>>
HWY_INLINE V Q8GroupF32(DF df, const uint8_t* HWY_RESTRICT codes, const float* HWY_RESTRICT xk) {
  const hn::RebindToUnsigned<DF> du;
  auto dot0 = hn::Zero(df), dot1 = hn::Zero(df);
  for (size_t c = 0; c < kQ8Group / 4; ++c, xk += 4) {
    const auto q = hn::LoadU(du, reinterpret_cast<const uint32_t*>(codes + 64 * c));
    dot0 = hn::MulAdd(CodeF32<0>(df, q), hn::Set(df, xk[0]), dot0);
    dot1 = hn::MulAdd(CodeF32<1>(df, q), hn::Set(df, xk[1]), dot1);
    dot0 = hn::MulAdd(CodeF32<2>(df, q), hn::Set(df, xk[2]), dot0);
    dot1 = hn::MulAdd(CodeF32<3>(df, q), hn::Set(df, xk[3]), dot1);
  }
  return hn::Add(dot0, dot1);
}

// Rows [r0, r1) (multiples of 16) of out[n, w.rows] with f32 activations
// x[n, w.cols] and (q4) their group sums xsum[n, w.groups]. A lane block's
// records stay in L1 while the tokens pass over them.
HWY_INLINE void Rows16GemvF32(const Rows16Weights& w, const float* HWY_RESTRICT x,
                              const float* HWY_RESTRICT xsum, size_t n, const float* bias,
                              size_t r0, size_t r1, float* HWY_RESTRICT out) {
  const hn::Repartition<float, Rows16Tag> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const size_t L = hn::Lanes(df);
  for (size_t r = r0; r < r1; r += L) {
    for (size_t t = 0; t < n; ++t) {
      const float* xt = x + t * w.cols;
      auto acc = hn::Zero(df);
      for (size_t g = 0; g < w.groups; ++g) {
        const Rows16Lanes p = LanesAt(w, r, g);
        if (w.q8) {
          acc = hn::MulAdd(Q8GroupF32(df, p.codes, xt + g * w.group), LoadF32(df, p.scales), acc);
          continue;
        }
        auto dot0 = hn::Zero(df), dot1 = hn::Zero(df);
        for (size_t c = 0; c < w.group / 8; ++c) {
          // u32 loads: one lane per row (also on the 1-lane scalar target).
          const auto q = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p.codes + 64 * c));
          const float* xk = xt + g * w.group + 8 * c;
          // Low nibbles of bytes 0..3 are weights k..k+3, high ones k+4..k+7.
          dot0 = hn::MulAdd(NibbleF32<0>(df, q), hn::Set(df, xk[0]), dot0);
          dot1 = hn::MulAdd(NibbleF32<1>(df, q), hn::Set(df, xk[4]), dot1);
          dot0 = hn::MulAdd(NibbleF32<2>(df, q), hn::Set(df, xk[1]), dot0);
          dot1 = hn::MulAdd(NibbleF32<3>(df, q), hn::Set(df, xk[5]), dot1);
          dot0 = hn::MulAdd(NibbleF32<4>(df, q), hn::Set(df, xk[2]), dot0);
          dot1 = hn::MulAdd(NibbleF32<5>(df, q), hn::Set(df, xk[6]), dot1);
          dot0 = hn::MulAdd(NibbleF32<6>(df, q), hn::Set(df, xk[3]), dot0);
          dot1 = hn::MulAdd(NibbleF32<7>(df, q), hn::Set(df, xk[7]), dot1);
        }
        acc = hn::MulAdd(hn::Add(dot0, dot1), LoadF32(df, p.scales), acc);
        acc = hn::MulAdd(LoadF32(df, p.mins), hn::Set(df, xsum[t * w.groups + g]), acc);
      }
      StoreRows(df, acc, bias, r, out + t * w.rows);
    }
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_MATVEC_ROWS16_INL_H_
