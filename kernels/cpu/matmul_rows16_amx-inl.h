// Prefill's Linear over q4 and q8 rows16 weights with Intel's AMX (AMX-INT8:
// TDPBSUD, TDPBSSD), for linear_amx_x86.cc only.
//
// One TDPBSUD multiplies a tile of 16 tokens x 64 int8 activations by a
// tile of 64 weights x 16 rows and adds the 16 x 16 int32 sums into a third
// tile: 16,384 multiply-adds, where AVX-512's vpdpbusd makes 64. Highway
// 1.0.3 has no tile ops, so this file is written with the intrinsics.
//
// The weight tile ("B") holds, in its row j, weights 4j .. 4j + 3 of each of
// the 16 rows, 4 bytes a row: exactly the shape of a rows16 chunk's 32-bit
// lanes (format/dtype.h).
// - q4: chunk c's low nibbles are B row 2c (weights 8c .. 8c + 3) and its
//   high nibbles B row 2c + 1 (8c + 4 .. 8c + 7); the codes are unsigned
//   and the activations signed (TDPBSUD).
// - q8: chunk c is B row c as stored, signed codes (TDPBSSD).
// Either way a 16-row block's B tiles are first written to a 64-byte aligned
// buffer: tile loads that straddle cache lines ran 2.5x slower here (one
// operand) and 6x (both), and q8's 544-byte records straddle every other
// one. The activation tile ("A") is read in place: 16 tokens' codes of one
// group, a token's `cols` bytes apart (aligned where cols is a multiple of
// 64: LinearInt8Group aligns the codes).
//
// Each group's int32 sums then take the group's scales exactly as
// the AVX-512 kernels of matvec_rows16-inl.h apply them (the same operations
// in the same order, so the outputs are the same bits): per token, the f32
// row sums gain float(sums) * (s * dx) and, for q4, m * xs. Two tile sets
// take groups in turn, so a group's products run while an earlier group's
// sums are scaled.

#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backends/cpu/linear_int8.h"
#include "backends/cpu/rows16.h"
#include "kernels/cpu/amx_tile_config.h"

namespace pocket::cpu::amx {

// Tile registers: two sets of sums, activations and weights (set k: tiles
// k, 2 + k and 4 + k), which take groups in turn. GCC's tile intrinsics
// paste their register numbers into the assembly text, so each set spells
// its own.
template <int kSet>
struct TileSet;
#define POCKET_AMX_TILE_SET(set, sums, acts, weights)               \
  template <>                                                       \
  struct TileSet<set> {                                             \
    static void Zero() { _tile_zero(sums); }                        \
    static void Load(const void* a, size_t stride, const void* w) { \
      _tile_loadd(acts, a, stride);                                 \
      _tile_loadd(weights, w, 64);                                  \
    }                                                               \
    template <bool kSignedWeights>                                  \
    static void Multiply() {                                        \
      if constexpr (kSignedWeights) {                               \
        _tile_dpbssd(sums, acts, weights);                          \
      } else {                                                      \
        _tile_dpbsud(sums, acts, weights);                          \
      }                                                             \
    }                                                               \
    static void Store(int32_t* p) { _tile_stored(sums, p, 64); }    \
  };
POCKET_AMX_TILE_SET(0, 0, 2, 4)
POCKET_AMX_TILE_SET(1, 1, 3, 5)
#undef POCKET_AMX_TILE_SET

// Tiles for m tokens and k weights per product (k <= 64, a multiple of 4).
inline void ConfigureTiles(size_t m, size_t k) {
  TileConfig config = {};
  config.palette = 1;
  for (int set = 0; set < 2; ++set) {
    config.rows[set] = static_cast<uint8_t>(m);
    config.bytes_per_row[set] = 64;
    config.rows[2 + set] = static_cast<uint8_t>(m);
    config.bytes_per_row[2 + set] = static_cast<uint16_t>(k);
    config.rows[4 + set] = static_cast<uint8_t>(k / 4);
    config.bytes_per_row[4 + set] = 64;
  }
  POCKET_LOAD_TILE_CONFIG(config);
}

// Each dtype's codes: whether its groups have mins, whether its codes are
// signed (TDPBSSD) or not (TDPBSUD), and how a 16-row block's records
// become B tiles.
struct Q4Codes {
  static constexpr bool kMins = true;
  static constexpr bool kSigned = false;  // codes 0..15
  // Splits the nibbles of every chunk of block `block` into B rows:
  // 128 bytes a chunk, low then high, so group g starts at 16 G g.
  static void Copy(const Rows16Weights& w, size_t block, uint8_t* tiles) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (size_t g = 0; g < w.groups; ++g) {
      const uint8_t* codes = w.data + (block * w.groups + g) * w.record_bytes;
      for (size_t c = 0; c < w.group / 8; ++c, tiles += 128) {
        const __m512i bytes = _mm512_loadu_si512(codes + 64 * c);
        _mm512_store_si512(tiles, _mm512_and_si512(bytes, low4));
        _mm512_store_si512(tiles + 64, _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low4));
      }
    }
  }
};

struct Q8Codes {
  static constexpr bool kMins = false;
  static constexpr bool kSigned = true;
  // Block `block`'s codes as they are (chunk c is B row c): group g starts
  // at 16 G g.
  static void Copy(const Rows16Weights& w, size_t block, uint8_t* tiles) {
    for (size_t g = 0; g < w.groups; ++g, tiles += w.code_bytes) {
      const uint8_t* codes = w.data + (block * w.groups + g) * w.record_bytes;
      for (size_t c = 0; c < w.code_bytes; c += 64) {
        _mm512_store_si512(tiles + c, _mm512_loadu_si512(codes + c));
      }
    }
  }
};

// acc[i][16 rows] += float(sums[i]) * (s * dx[i]) + m * xs[i] for the 16
// tokens i of a tile (without m * xs where there are no mins).
template <bool kMins>
inline void ScaleGroup(const int32_t* sums, const float* dx, const float* xs, __m512 s, __m512 m,
                       float* __restrict acc) {
#pragma GCC unroll 16
  for (size_t i = 0; i < 16; ++i) {
    const __m512 isum = _mm512_cvtepi32_ps(_mm512_load_si512(sums + 16 * i));
    __m512 f = _mm512_load_ps(acc + 16 * i);
    f = _mm512_fmadd_ps(isum, _mm512_mul_ps(s, _mm512_set1_ps(dx[i])), f);
    if constexpr (kMins) f = _mm512_fmadd_ps(m, _mm512_set1_ps(xs[i]), f);
    _mm512_store_ps(acc + 16 * i, f);
  }
}

// Rows [r0, r1) of out[n, w.rows] (16-row blocks) for n tokens, whose
// scales and sums a.d_tiles and a.s_tiles hold 16 tokens to a run, so every
// broadcast has a constant offset (linear_int8.h). `tiles`: 16 w.cols bytes,
// 64-byte aligned, for a block's B tiles.
template <class Codes>
void Rows16Matmul(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                  size_t r0, size_t r1, uint8_t* tiles, float* out) {
  const size_t k = w.group < 64 ? w.group : 64, steps = w.group / k;
  // A tile of m < 16 tokens stores m rows of sums; the other rows hold an
  // earlier tile's sums or zeros, defined values that are scaled too but
  // never written out.
  alignas(64) int32_t sums[2][16 * 16] = {};
  alignas(64) float acc[16 * 16];
  size_t configured = 0;  // tokens the tiles are configured for
  for (size_t r = r0; r < r1; r += kRows16Block) {
    const size_t block = r / kRows16Block;
    Codes::Copy(w, block, tiles);
    for (size_t t0 = 0; t0 < n; t0 += 16) {
      const size_t m = n - t0 < 16 ? n - t0 : 16;
      if (m != configured) ConfigureTiles(m, k);
      configured = m;
      for (size_t i = 0; i < 16 * 16; i += 16) _mm512_store_ps(acc + i, _mm512_setzero_ps());
      const int8_t* acts = a.q + t0 * w.cols;
      const float* tile_dx = a.d_tiles + t0 * w.groups;  // [g][16]
      const float* tile_xs = a.s_tiles + t0 * w.groups;
      // Step g (of parity kP) multiplies group g, stores group g - 1's sums
      // and scales group g - 2's: vector loads cannot take their data from a
      // tile store in flight, so they read sums stored a step earlier.
      const auto step = [&](auto parity, size_t g) {
        constexpr int kP = decltype(parity)::value;
        if (g < w.groups) {
          TileSet<kP>::Zero();
          for (size_t s = 0; s < steps; ++s) {
            TileSet<kP>::Load(acts + g * w.group + s * k, w.cols,
                              tiles + 16 * (w.group * g + 64 * s));
            TileSet<kP>::template Multiply<Codes::kSigned>();
          }
        }
        if (g >= 1 && g <= w.groups) TileSet<1 - kP>::Store(sums[1 - kP]);
        if (g >= 2) {
          const size_t done = g - 2;
          const uint8_t* meta = w.data + (block * w.groups + done) * w.record_bytes + w.code_bytes;
          const __m512 scales =
              _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(meta)));
          const __m512 mins =
              Codes::kMins
                  ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(meta + 32)))
                  : _mm512_setzero_ps();
          ScaleGroup<Codes::kMins>(sums[kP], tile_dx + 16 * done, tile_xs + 16 * done, scales, mins,
                                   acc);
        }
      };
      for (size_t g = 0; g < w.groups + 2; g += 2) {
        step(std::integral_constant<int, 0>(), g);
        if (g + 1 < w.groups + 2) step(std::integral_constant<int, 1>(), g + 1);
      }
      for (size_t i = 0; i < m; ++i) {
        __m512 f = _mm512_load_ps(acc + 16 * i);
        if (bias) f = _mm512_add_ps(f, _mm512_loadu_ps(bias + r));
        _mm512_storeu_ps(out + (t0 + i) * w.rows + r, f);
      }
    }
  }
  _tile_release();
}

}  // namespace pocket::cpu::amx
