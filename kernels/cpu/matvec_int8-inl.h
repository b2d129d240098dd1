// Linear over q4/q8 weights with int8 activations (QuantMath::kInt8):
// x is quantized per weight group (act_quant-inl.h: codes xq, scale dx, exact
// sum xs), so one group g of a row contributes
//   q8: s_g dx_g sum_j q_j xq_j
//   q4: s_g dx_g sum_j q_j xq_j + m_g xs_g
// with the integer sum done by the target's int8 dot (int8_dot-inl.h). Each
// group's int32 lanes are converted once and scaled into f32 lanes, which are
// reduced once per row.
//
// Decode (one token) takes rows 4 at a time and prefetches the next 4 rows'
// codes; the products s_g dx_g of a batch of groups are formed with vector
// f16 loads first. Prefill takes
// tiles of 4 rows x 4 tokens: each weight group is loaded and unpacked once
// per tile and feeds 4 tokens, each token's codes feed 4 rows.
//
// Compiled only for targets where int8_dot-inl.h sets POCKET_INT8_DOT.

#if defined(POCKET_KERNELS_CPU_MATVEC_INT8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_MATVEC_INT8_INL_H_
#undef POCKET_KERNELS_CPU_MATVEC_INT8_INL_H_
#else
#define POCKET_KERNELS_CPU_MATVEC_INT8_INL_H_
#endif

#include <algorithm>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "backends/cpu/linear_int8.h"
#include "kernels/cpu/int8_dot-inl.h"
#include "kernels/cpu/load-inl.h"

#if POCKET_INT8_DOT

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One q4 group of 2H weights stored as H bytes (byte j: weight j low nibble,
// weight j + H high nibble), so the low nibbles meet x[0, H) and the high
// ones x[H, 2H).
template <size_t H>
struct Q4Group {
  using DU8 = hn::CappedTag<uint8_t, H>;
  using D32 = hn::Repartition<int32_t, DU8>;
  static HWY_INLINE hn::Vec<D32> Dot(const uint8_t* HWY_RESTRICT codes,
                                     const int8_t* HWY_RESTRICT x, hn::Vec<D32> acc) {
    const DU8 du8;
    const hn::RebindToSigned<DU8> di8;
    const auto low4 = hn::Set(du8, 0x0F);
    for (size_t c = 0; c < H; c += hn::Lanes(du8)) {
      const auto bytes = hn::LoadU(du8, codes + c);
      acc = DotU7(hn::And(bytes, low4), hn::LoadU(di8, x + c), acc);
      acc = DotU7(hn::ShiftRight<4>(bytes), hn::LoadU(di8, x + H + c), acc);
    }
    return acc;
  }
};

#if defined(POCKET_INT8_X86) && HWY_TARGET <= HWY_AVX3
// G = 64 on AVX-512: the 32 code bytes go to both halves of a 512-bit
// register, the upper half shifted down a nibble, so one 64-lane dot covers
// the whole group (x[0, 64) is one load) instead of two 32-lane ones.
template <>
struct Q4Group<32> {
  using D32 = hn::Full512<int32_t>;
  static HWY_INLINE hn::Vec<D32> Dot(const uint8_t* HWY_RESTRICT codes,
                                     const int8_t* HWY_RESTRICT x, hn::Vec<D32> acc) {
    // The zero-masking form: GCC 12's plain broadcast trips -Wmaybe-uninitialized.
    const __m512i both = _mm512_maskz_broadcast_i64x4(
        0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
    const __m512i nibbles =
        _mm512_and_si512(_mm512_mask_srli_epi64(both, 0xF0, both, 4), _mm512_set1_epi8(0x0F));
    return DotU7(hn::Vec512<uint8_t>{nibbles}, hn::Vec512<int8_t>{_mm512_loadu_si512(x)}, acc);
  }
};
#endif

// One q8 group of 32 int8 codes.
struct Q8Group {
  using DI8 = hn::CappedTag<int8_t, kQ8Group>;
  using D32 = hn::Repartition<int32_t, DI8>;
  static HWY_INLINE hn::Vec<D32> Dot(const uint8_t* HWY_RESTRICT codes,
                                     const int8_t* HWY_RESTRICT x, hn::Vec<D32> acc) {
    const DI8 di8;
    const int8_t* w = reinterpret_cast<const int8_t*>(codes);
    for (size_t c = 0; c < kQ8Group; c += hn::Lanes(di8)) {
      acc = DotS8(hn::LoadU(di8, w + c), hn::LoadU(di8, x + c), acc);
    }
    return acc;
  }
};

// Groups whose scale products are formed in one batch (a stack buffer).
constexpr size_t kScaleBatch = 16;

// Calls fn(d, k) with float tags d whose lanes cover [0, count) exactly:
// full vectors of up to 16 lanes, then 4, then single lanes. Rows have few
// groups (14 at 896 columns, G = 64), so the tail matters, and a scalar f16
// conversion is a slow software routine while a 1-lane vector uses F16C/fcvt.
template <class Fn>
HWY_INLINE void ForEachFloatChunk(size_t count, const Fn& fn) {
  size_t k = 0;
  const hn::CappedTag<float, 16> d16;
  for (; k + hn::Lanes(d16) <= count; k += hn::Lanes(d16)) fn(d16, k);
  const hn::CappedTag<float, 4> d4;
  for (; k + hn::Lanes(d4) <= count; k += hn::Lanes(d4)) fn(d4, k);
  const hn::CappedTag<float, 1> d1;
  for (; k < count; ++k) fn(d1, k);
}

HWY_INLINE const hwy::float16_t* AsHalves(const uint8_t* p) {
  return reinterpret_cast<const hwy::float16_t*>(p);
}

// out[k] = f16 scales[k] * dx[k] for k < count <= kScaleBatch.
HWY_INLINE void ScaleProducts(const uint8_t* HWY_RESTRICT scales, const float* HWY_RESTRICT dx,
                              size_t count, float* HWY_RESTRICT out) {
  ForEachFloatChunk(count, [&](auto d, size_t k) {
    hn::StoreU(hn::Mul(LoadF32(d, AsHalves(scales) + k), hn::LoadU(d, dx + k)), d, out + k);
  });
}

// out[k] = f16 values[k] as f32 for k < count.
HWY_INLINE void WidenHalves(const uint8_t* HWY_RESTRICT values, size_t count,
                            float* HWY_RESTRICT out) {
  ForEachFloatChunk(
      count, [&](auto d, size_t k) { hn::StoreU(LoadF32(d, AsHalves(values) + k), d, out + k); });
}

// sum_k mins[k] * xs[k] (mins f16 or f32): the q4 min term of one row and
// token.
template <typename T>
HWY_INLINE float MinTerm(const T* HWY_RESTRICT mins, const float* HWY_RESTRICT xs, size_t count) {
  float sum = 0.0f;
  ForEachFloatChunk(count, [&](auto d, size_t k) {
    sum += hn::GetLane(hn::SumOfLanes(d, hn::Mul(LoadF32(d, mins + k), hn::LoadU(d, xs + k))));
  });
  return sum;
}

// acc += float(Group::Dot(codes, x)) * scale.
template <class Group, class DF>
HWY_INLINE hn::Vec<DF> ScaledDot(DF df, const uint8_t* HWY_RESTRICT codes,
                                 const int8_t* HWY_RESTRICT x, float scale, hn::Vec<DF> acc) {
  const typename Group::D32 d32;
  return hn::MulAdd(hn::ConvertTo(df, Group::Dot(codes, x, hn::Zero(d32))), hn::Set(df, scale),
                    acc);
}

// Rows [r0, r1) of out for one token (a.q has w.cols codes).
template <class Group>
HWY_INLINE void GemvInt8(const QuantizedRows& w, const QuantizedActs& a, const float* bias,
                         size_t r0, size_t r1, float* HWY_RESTRICT out) {
  const hn::Repartition<float, typename Group::D32> df;
  for (size_t r = r0; r < r1; r += 4) {
    const size_t rows[4] = {r, std::min(r + 1, r1 - 1), std::min(r + 2, r1 - 1),
                            std::min(r + 3, r1 - 1)};
    // The next block's codes: with four rows (plus their scales and mins)
    // streaming at once, the hardware prefetchers alone leave DRAM idle.
    if (r + 4 < r1) {
      const uint8_t* next = w.Codes(r + 4, 0);
      const size_t bytes = std::min(r1 - r - 4, size_t{4}) * w.code_bytes;
      for (size_t off = 0; off < bytes; off += 64) hwy::Prefetch(next + off);
    }
    auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
    for (size_t g0 = 0; g0 < w.groups; g0 += kScaleBatch) {
      const size_t count = std::min(kScaleBatch, w.groups - g0);
      float cs[4][kScaleBatch];
      for (size_t i = 0; i < 4; ++i)
        ScaleProducts(w.Scales(rows[i]) + 2 * g0, a.d + g0, count, cs[i]);
      for (size_t k = 0; k < count; ++k) {
        const size_t g = g0 + k;
        const int8_t* xg = a.q + g * w.group;
        a0 = ScaledDot<Group>(df, w.Codes(rows[0], g), xg, cs[0][k], a0);
        a1 = ScaledDot<Group>(df, w.Codes(rows[1], g), xg, cs[1][k], a1);
        a2 = ScaledDot<Group>(df, w.Codes(rows[2], g), xg, cs[2][k], a2);
        a3 = ScaledDot<Group>(df, w.Codes(rows[3], g), xg, cs[3][k], a3);
      }
    }
    const float sums[4] = {hn::GetLane(hn::SumOfLanes(df, a0)), hn::GetLane(hn::SumOfLanes(df, a1)),
                           hn::GetLane(hn::SumOfLanes(df, a2)),
                           hn::GetLane(hn::SumOfLanes(df, a3))};
    for (size_t i = 0; i < 4 && r + i < r1; ++i) {
      float v = sums[i] + (bias ? bias[r + i] : 0.0f);
      if (w.mins) v += MinTerm(AsHalves(w.Mins(r + i)), a.s, w.groups);
      out[r + i] = v;
    }
  }
}

// The four accumulators of one row of a prefill tile: a_k += (w . x_k) s dx_k.
template <class Group, class DF, class V = hn::Vec<DF>>
HWY_INLINE void TileRow(DF df, const uint8_t* HWY_RESTRICT codes, float s,
                        const int8_t* const* HWY_RESTRICT x, const float* HWY_RESTRICT dx, V& a0,
                        V& a1, V& a2, V& a3) {
  a0 = ScaledDot<Group>(df, codes, x[0], s * dx[0], a0);
  a1 = ScaledDot<Group>(df, codes, x[1], s * dx[1], a1);
  a2 = ScaledDot<Group>(df, codes, x[2], s * dx[2], a2);
  a3 = ScaledDot<Group>(df, codes, x[3], s * dx[3], a3);
}

// The final values of a prefill tile row: reduce, add the q4 min term and
// the bias, store the tokens that exist.
template <class DF, class V = hn::Vec<DF>>
HWY_INLINE void StoreTileRow(DF df, const QuantizedRows& w, const QuantizedActs& a,
                             const float* HWY_RESTRICT mins, float bias, size_t row, size_t t,
                             size_t n, V a0, V a1, V a2, V a3, float* HWY_RESTRICT out) {
  const float sums[4] = {hn::GetLane(hn::SumOfLanes(df, a0)), hn::GetLane(hn::SumOfLanes(df, a1)),
                         hn::GetLane(hn::SumOfLanes(df, a2)), hn::GetLane(hn::SumOfLanes(df, a3))};
  for (size_t k = 0; k < 4 && t + k < n; ++k) {
    float v = sums[k] + bias;
    if (w.mins) v += MinTerm(mins, a.s + (t + k) * w.groups, w.groups);
    out[(t + k) * w.rows + row] = v;
  }
}

// Rows [r0, r1) of out[n, w.rows] for n tokens, in tiles of 4 rows x 4
// tokens (16 accumulators: fits the 32 registers of AVX-512, NEON and SVE).
// scratch holds 8 * w.groups floats: the 4 rows' scales and mins as f32,
// reused by every token tile.
template <class Group>
HWY_INLINE void GemmInt8(const QuantizedRows& w, const QuantizedActs& a, size_t n,
                         const float* bias, size_t r0, size_t r1, float* HWY_RESTRICT scratch,
                         float* HWY_RESTRICT out) {
  const hn::Repartition<float, typename Group::D32> df;
  const size_t groups = w.groups;
  for (size_t r = r0; r < r1; r += 4) {
    size_t rows[4];
    const float* sc[4];
    const float* mins[4];
    for (size_t i = 0; i < 4; ++i) {
      rows[i] = std::min(r + i, r1 - 1);
      float* row_scales = scratch + 2 * i * groups;
      WidenHalves(w.Scales(rows[i]), groups, row_scales);
      if (w.mins) WidenHalves(w.Mins(rows[i]), groups, row_scales + groups);
      sc[i] = row_scales;
      mins[i] = row_scales + groups;
    }
    const size_t step = w.code_bytes / groups;  // code bytes per group
    for (size_t t = 0; t < n; t += 4) {
      // Pointers advanced group by group (no index arithmetic in the loop).
      const int8_t* x[4];
      const float* dxs[4];
      for (size_t k = 0; k < 4; ++k) {
        const size_t tok = std::min(t + k, n - 1);
        x[k] = a.q + tok * w.cols;
        dxs[k] = a.d + tok * groups;
      }
      const uint8_t* c0 = w.Codes(rows[0], 0);
      const uint8_t* c1 = w.Codes(rows[1], 0);
      const uint8_t* c2 = w.Codes(rows[2], 0);
      const uint8_t* c3 = w.Codes(rows[3], 0);
      auto a00 = hn::Zero(df), a01 = hn::Zero(df), a02 = hn::Zero(df), a03 = hn::Zero(df);
      auto a10 = hn::Zero(df), a11 = hn::Zero(df), a12 = hn::Zero(df), a13 = hn::Zero(df);
      auto a20 = hn::Zero(df), a21 = hn::Zero(df), a22 = hn::Zero(df), a23 = hn::Zero(df);
      auto a30 = hn::Zero(df), a31 = hn::Zero(df), a32 = hn::Zero(df), a33 = hn::Zero(df);
      for (size_t g = 0; g < groups; ++g) {
        const float dx[4] = {dxs[0][g], dxs[1][g], dxs[2][g], dxs[3][g]};
        TileRow<Group>(df, c0, sc[0][g], x, dx, a00, a01, a02, a03);
        TileRow<Group>(df, c1, sc[1][g], x, dx, a10, a11, a12, a13);
        TileRow<Group>(df, c2, sc[2][g], x, dx, a20, a21, a22, a23);
        TileRow<Group>(df, c3, sc[3][g], x, dx, a30, a31, a32, a33);
        c0 += step;
        c1 += step;
        c2 += step;
        c3 += step;
        for (size_t k = 0; k < 4; ++k) x[k] += w.group;
      }
      const float b[4] = {bias ? bias[rows[0]] : 0.0f, bias ? bias[rows[1]] : 0.0f,
                          bias ? bias[rows[2]] : 0.0f, bias ? bias[rows[3]] : 0.0f};
      StoreTileRow(df, w, a, mins[0], b[0], r, t, n, a00, a01, a02, a03, out);
      if (r + 1 < r1) StoreTileRow(df, w, a, mins[1], b[1], r + 1, t, n, a10, a11, a12, a13, out);
      if (r + 2 < r1) StoreTileRow(df, w, a, mins[2], b[2], r + 2, t, n, a20, a21, a22, a23, out);
      if (r + 3 < r1) StoreTileRow(df, w, a, mins[3], b[3], r + 3, t, n, a30, a31, a32, a33, out);
    }
  }
}

// Calls body(Group()) with the group kernel of w's dtype and group size.
template <class Body>
HWY_INLINE void WithGroupKernel(const QuantizedRows& w, const Body& body) {
  if (!w.mins) return body(Q8Group());
  switch (w.group) {
    case 32:
      return body(Q4Group<16>());
    case 64:
      return body(Q4Group<32>());
    default:
      return body(Q4Group<64>());
  }
}

HWY_INLINE void LinearInt8DecodeRows(const QuantizedRows& w, const QuantizedActs& a,
                                     const float* bias, size_t r0, size_t r1, float* out) {
  WithGroupKernel(w, [&](auto group) { GemvInt8<decltype(group)>(w, a, bias, r0, r1, out); });
}

HWY_INLINE void LinearInt8PrefillRows(const QuantizedRows& w, const QuantizedActs& a, size_t n,
                                      const float* bias, size_t r0, size_t r1, float* scratch,
                                      float* out) {
  WithGroupKernel(
      w, [&](auto group) { GemmInt8<decltype(group)>(w, a, n, bias, r0, r1, scratch, out); });
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_INT8_DOT
#endif  // POCKET_KERNELS_CPU_MATVEC_INT8_INL_H_
