// Prefill's Linear over q4 and q8 rows16 weights with Arm's int8 matrix
// multiply (FEAT_I8MM: SMMLA), for linear_i8mm_arm.cc only.
//
// SMMLA multiplies a 2 x 8 int8 matrix by the transpose of another and adds
// the 2 x 2 int32 result into one vector: 32 multiply-adds an instruction
// where sdot makes 16. Here the first matrix is two tokens' activations
// k .. k + 7 and the second two weight rows' codes k .. k + 7, so one
// instruction covers 2 tokens x 2 rows x 8 weights.
//
// The rows16 records (format/dtype.h) give those rows without a shuffle
// table: a NEON lane block is 4 rows, each 32-bit lane one row.
// - q4: a lane holds weights k .. k + 3 in its low nibbles and k + 4 .. k + 7
//   in its high ones, so after splitting the nibbles, a 32-bit zip of the two
//   halves gives rows (0, 1) and rows (2, 3) as 2 x 8 matrices.
// - q8: a lane holds 4 codes and chunk c + 1 the next 4, so a 32-bit zip of
//   two consecutive chunks does.
// The 2 x 2 sums come out as (token, row) pairs; a 64-bit zip of the two row
// pairs gives each token's 4 rows back as one vector, once per group, and the
// group's scales apply as in matvec_rows16-inl.h. Tiles are the rows16
// GEMM's: 8 rows by 4 tokens (8 SMMLA accumulators, 8 f32 sums), then 4.

#if defined(POCKET_KERNELS_CPU_MATMUL_ROWS16_I8MM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_MATMUL_ROWS16_I8MM_INL_H_
#undef POCKET_KERNELS_CPU_MATMUL_ROWS16_I8MM_INL_H_
#else
#define POCKET_KERNELS_CPU_MATMUL_ROWS16_I8MM_INL_H_
#endif

#include <arm_neon.h>

#include <hwy/highway.h>

#include "kernels/cpu/matvec_rows16-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One lane block's 4 rows over 8 weights as two SMMLA operands.
struct RowPairs {
  int8x16_t r01, r23;
};

HWY_INLINE RowPairs ZipRows(uint32x4_t first4, uint32x4_t next4) {
  return {vreinterpretq_s8_u32(vzip1q_u32(first4, next4)),
          vreinterpretq_s8_u32(vzip2q_u32(first4, next4))};
}

// q4: step s is chunk s (8 weights of each row), plus the group's mins.
struct I8mmQ4 {
  static constexpr bool kMins = true;
  static HWY_INLINE RowPairs Load(const uint8_t* HWY_RESTRICT codes, size_t step) {
    const uint8x16_t bytes = vld1q_u8(codes + 64 * step);
    return ZipRows(vreinterpretq_u32_u8(vandq_u8(bytes, vdupq_n_u8(0x0F))),
                   vreinterpretq_u32_u8(vshrq_n_u8(bytes, 4)));
  }
};

// q8: step s is chunks 2s and 2s + 1 (4 codes of each row apiece).
struct I8mmQ8 {
  static constexpr bool kMins = false;
  static HWY_INLINE RowPairs Load(const uint8_t* HWY_RESTRICT codes, size_t step) {
    return ZipRows(vreinterpretq_u32_u8(vld1q_u8(codes + 128 * step)),
                   vreinterpretq_u32_u8(vld1q_u8(codes + 128 * step + 64)));
  }
};

// Two tokens' activations k .. k + 15 as the SMMLA operands of two steps:
// (first k .. k + 7, second k .. k + 7) and (first k + 8 .., second k + 8 ..).
// Two loads and two zips; pairing 8-byte loads instead cost GCC two moves.
struct TokenPairs {
  int8x16_t step0, step1;
};
HWY_INLINE TokenPairs LoadTokenPairs(const int8_t* HWY_RESTRICT first,
                                     const int8_t* HWY_RESTRICT second) {
  const int64x2_t a = vreinterpretq_s64_s8(vld1q_s8(first));
  const int64x2_t b = vreinterpretq_s64_s8(vld1q_s8(second));
  return {vreinterpretq_s8_s64(vzip1q_s64(a, b)), vreinterpretq_s8_s64(vzip2q_s64(a, b))};
}

// kBlocks lane blocks of 4 rows from row r, by tokens t .. t + 3 of n.
template <class Codes, size_t kBlocks>
HWY_INLINE void I8mmTile(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                         const float* bias, size_t r, size_t t, float* HWY_RESTRICT out) {
  const hn::Full128<float> df;
  const TokenQuad q = TokensAt(w, a, n, t);
  float32x4_t f[kBlocks][4];
  for (size_t b = 0; b < kBlocks; ++b) {
    for (size_t k = 0; k < 4; ++k) f[b][k] = vdupq_n_f32(0.0f);
  }
  for (size_t g = 0; g < w.groups; ++g) {
    Rows16Lanes p[kBlocks];
    for (size_t b = 0; b < kBlocks; ++b) p[b] = LanesAt(w, r + 4 * b, g);
    // acc[b][pair of rows][pair of tokens]
    int32x4_t acc[kBlocks][2][2];
    for (size_t b = 0; b < kBlocks; ++b) {
      acc[b][0][0] = acc[b][0][1] = acc[b][1][0] = acc[b][1][1] = vdupq_n_s32(0);
    }
    // Steps of 8 weights in pairs (G / 8 is even: G >= 32).
    for (size_t step = 0; step < w.group / 8; step += 2) {
      const size_t k = g * w.group + 8 * step;
      const TokenPairs x01 = LoadTokenPairs(q.x[0] + k, q.x[1] + k);
      const TokenPairs x23 = LoadTokenPairs(q.x[2] + k, q.x[3] + k);
      for (size_t half = 0; half < 2; ++half) {
        const int8x16_t t01 = half == 0 ? x01.step0 : x01.step1;
        const int8x16_t t23 = half == 0 ? x23.step0 : x23.step1;
        for (size_t b = 0; b < kBlocks; ++b) {
          const RowPairs rows = Codes::Load(p[b].codes, step + half);
          acc[b][0][0] = vmmlaq_s32(acc[b][0][0], t01, rows.r01);
          acc[b][0][1] = vmmlaq_s32(acc[b][0][1], t23, rows.r01);
          acc[b][1][0] = vmmlaq_s32(acc[b][1][0], t01, rows.r23);
          acc[b][1][1] = vmmlaq_s32(acc[b][1][1], t23, rows.r23);
        }
      }
    }
    for (size_t b = 0; b < kBlocks; ++b) {
      const float32x4_t scales = LoadF32(df, p[b].scales).raw;
      for (size_t pair = 0; pair < 2; ++pair) {
        // (t0 r0, t0 r1, t1 r0, t1 r1) and (t0 r2, t0 r3, t1 r2, t1 r3):
        // the first token's rows 0..3 in the low halves, the second's in
        // the high ones.
        const int64x2_t r01 = vreinterpretq_s64_s32(acc[b][0][pair]);
        const int64x2_t r23 = vreinterpretq_s64_s32(acc[b][1][pair]);
        const int32x4_t sums[2] = {vreinterpretq_s32_s64(vzip1q_s64(r01, r23)),
                                   vreinterpretq_s32_s64(vzip2q_s64(r01, r23))};
        for (size_t i = 0; i < 2; ++i) {
          const size_t tok = 2 * pair + i;
          float32x4_t& acc_f = f[b][tok];
          acc_f = vfmaq_f32(acc_f, vcvtq_f32_s32(sums[i]), vmulq_n_f32(scales, q.dx[tok][g]));
          if constexpr (Codes::kMins) {
            acc_f = vfmaq_n_f32(acc_f, LoadF32(df, p[b].mins).raw, q.xs[tok][g]);
          }
        }
      }
    }
  }
  using V = hn::Vec128<float>;
  for (size_t b = 0; b < kBlocks; ++b) {
    StoreTokens(df, V{f[b][0]}, V{f[b][1]}, V{f[b][2]}, V{f[b][3]}, bias, r + 4 * b, t, n, w.rows,
                out);
  }
}

template <class Codes>
struct I8mmTiles {
  static constexpr bool kPairs = true;
  static HWY_INLINE void Pair(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                              const float* bias, size_t r, size_t t, float* HWY_RESTRICT out) {
    I8mmTile<Codes, 2>(w, a, n, bias, r, t, out);
  }
  static HWY_INLINE void Single(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                                const float* bias, size_t r, size_t t, float* HWY_RESTRICT out) {
    I8mmTile<Codes, 1>(w, a, n, bias, r, t, out);
  }
};

// Rows [r0, r1) of out[n, w.rows] for n tokens (the signatures of
// linear_int8_kernels-inl.h's Rows16PrefillInt8 and Rows16PrefillQ8).
void Rows16PrefillI8mm(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                       size_t r0, size_t r1, float* out) {
  Rows16Gemm<I8mmTiles<I8mmQ4>>(w, a, n, bias, r0, r1, out);
}
void Rows16PrefillQ8I8mm(const Rows16Weights& w, const QuantizedActs& a, size_t n,
                         const float* bias, size_t r0, size_t r1, float* out) {
  Rows16Gemm<I8mmTiles<I8mmQ8>>(w, a, n, bias, r0, r1, out);
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_MATMUL_ROWS16_I8MM_INL_H_
