// Attention's block products in bf16, for AttentionMath::kBf16 on x86 CPUs
// with AVX512_BF16 (Zen 4, Cooper Lake, Sapphire Rapids) and on 64-bit ARM
// CPUs with BF16 (Armv8.6: Cortex-A510/A710/X2 and later, Neoverse V1/N2):
// AttendGroup's other Block (attention-inl.h). q, K, V and the softmax
// weights are rounded to bf16 (nearest even) and vdpbf16ps multiplies them
// in pairs into f32 sums, twice the multiply-adds per instruction of an f32
// FMA. Scores, the softmax state and the outputs stay f32.
//
// vdpbf16ps adds a[2i] b[2i] + a[2i+1] b[2i+1] into f32 lane i, so each
// operand holds pairs along the summed dimension:
//   q . k   kp[c / 2][p] is channels (c, c + 1) of position p; row q's
//           channel pair (c, c + 1) is broadcast to every lane.
//   w V     vp[p / 2][c] is positions (p, p + 1) of channel c; the weight
//           pair (w_p, w_p+1) is broadcast.
// BFDOT (Arm) adds the same pairs into each 32-bit lane, 4 lanes a vector.
// Highway 1.0.3 has no bf16 dot op, its AVX3_DL target does not imply
// AVX512_BF16 and its Arm targets do not imply BF16, so these are
// intrinsics. On x86 they are functions with their own target attribute,
// compiled for AVX3_DL with GCC or Clang; AttendGroup calls them (a callee
// with more target features cannot be inlined), each call a whole block or
// group of rows. On Arm the whole file must be built for BF16 (Clang's
// arm_neon.h declares the bf16 types only then): attention_bf16_arm.cc
// builds it once more with BF16, unless the baseline has it already. Both
// are chosen at run time after a CPUID or HWCAP2 check (attention.cc).

#if defined(POCKET_KERNELS_CPU_ATTENTION_BF16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ATTENTION_BF16_INL_H_
#undef POCKET_KERNELS_CPU_ATTENTION_BF16_INL_H_
#else
#define POCKET_KERNELS_CPU_ATTENTION_BF16_INL_H_
#endif

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <hwy/highway.h>

#include "kernels/cpu/amx_tile_config.h"
#include "kernels/cpu/attention-inl.h"
#include "kernels/cpu/hints-inl.h"
#include "kernels/cpu/load-inl.h"

#undef POCKET_ATTENTION_BF16
#undef POCKET_BF16_X86
#undef POCKET_BF16_ARM
#undef POCKET_BF16_ATTR
#undef POCKET_ATTENTION_AMX
#undef POCKET_AMX_ATTR
#if HWY_TARGET == HWY_AVX3_DL && (HWY_COMPILER_GCC_ACTUAL || HWY_COMPILER_CLANG)
#define POCKET_ATTENTION_BF16 1
#define POCKET_BF16_X86 1
#define POCKET_BF16_ATTR __attribute__((target(HWY_TARGET_STR ",avx512bf16")))
#include <immintrin.h>
#elif HWY_ARCH_ARM_A64 && defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC) &&        \
    (HWY_TARGET == HWY_NEON || HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2 || \
     HWY_TARGET == HWY_SVE_256 || HWY_TARGET == HWY_SVE2_128)
#define POCKET_ATTENTION_BF16 1
#define POCKET_BF16_ARM 1
#define POCKET_BF16_ATTR
#include <arm_neon.h>
#else
#define POCKET_ATTENTION_BF16 0
#endif

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if defined(POCKET_BF16_X86)

// 16 values of src widened to f32; lanes from `count` on (count < 16) are 0.
template <typename T>
POCKET_BF16_ATTR HWY_INLINE __m512 Load16(const T* HWY_RESTRICT src, size_t count) {
  if (count >= 16) return LoadF32(hn::Full512<float>(), src).raw;
  HWY_ALIGN float lanes[16] = {};
  for (size_t i = 0; i < count; ++i) lanes[i] = ScalarF32(src + i);
  return _mm512_load_ps(lanes);
}

// `even` and `odd` rounded to bf16 and interleaved: 32-bit lane i holds
// (even_i, odd_i), the low half even.
POCKET_BF16_ATTR HWY_INLINE __m512i PackPairs(__m512 even, __m512 odd) {
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  // cvtne2ps: bf16 lanes 0..15 come from the second operand, 16..31 from
  // the first.
  const __m512i halves = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(odd, even));
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), halves);
}

// 16 f32 values rounded to bf16, in order.
POCKET_BF16_ATTR HWY_INLINE void StoreBf16(const float* HWY_RESTRICT src,
                                           uint16_t* HWY_RESTRICT dst) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                      reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_loadu_ps(src))));
}

// The bf16 pair (x[2 i], x[2 i + 1]) in every 32-bit lane.
POCKET_BF16_ATTR HWY_INLINE __m512bh BroadcastPair(const uint16_t* HWY_RESTRICT x, size_t i) {
  int32_t pair;
  std::memcpy(&pair, x + 2 * i, 4);
  return reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
}

POCKET_BF16_ATTR HWY_INLINE __m512 Dot(__m512 acc, __m512i a, __m512bh b) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), b);
}

// One step of both products: acc[r][i] += the 4 vectors of pairs at p
// times the pair x[r][2 j], x[r][2 j + 1] of each of kRows rows, each vector
// loaded once for every row.
template <size_t kRows>
POCKET_BF16_ATTR HWY_INLINE void DotStep(const uint32_t* HWY_RESTRICT p, const uint16_t* const* x,
                                         size_t j, __m512 (&acc)[kRows][4]) {
  __m512i v[4];
  // Kept in registers: each loaded vector feeds every row's dot product.
  for (size_t i = 0; i < 4; ++i) v[i] = RawInRegister(_mm512_loadu_si512(p + 16 * i));
  for (size_t r = 0; r < kRows; ++r) {
    const __m512bh b = BroadcastPair(x[r], j);
    for (size_t i = 0; i < 4; ++i) acc[r][i] = Dot(acc[r][i], v[i], b);
  }
}

// Asks for the 4 lines a DotStep at p loads, into L1.
HWY_INLINE void PrefetchStep(const uint32_t* p) { PrefetchLines(p, 4 * 64); }

POCKET_BF16_ATTR HWY_INLINE void Load4(const float* HWY_RESTRICT p, __m512 (&v)[4]) {
  for (size_t i = 0; i < 4; ++i) v[i] = _mm512_loadu_ps(p + 16 * i);
}

POCKET_BF16_ATTR HWY_INLINE void Store4(const __m512 (&v)[4], float* HWY_RESTRICT p) {
  for (size_t i = 0; i < 4; ++i) _mm512_storeu_ps(p + 16 * i, v[i]);
}

// AttendGroup's Block in bf16; head_dim must be a multiple of 16. The
// scratch: kp and vp kScoreBlock * head_dim / 2 pairs each, qb a bf16 row of
// head_dim values per query row. A bf16 cache's pages already hold both
// layouts (ops.h), so its blocks are read in place and the scratch is unused.
struct Bf16Block {
  // Softmax weights from Exp2Coarse (1e-4 relative): they are rounded to
  // bf16 (2^-9 relative) before they multiply V.
  static constexpr bool kCoarseExp = true;
  // Query rows that share each loaded K and V vector: 16 accumulators, the
  // 4 loaded vectors and a broadcast fit the 32 registers. Against two rows,
  // on Zen 5: a warm decode step over 512 positions 11.6 -> 7.8 us, a
  // 64-token prefill chunk's attention 1.4x faster (ops_bench).
  static constexpr size_t kRows = 4;
  const float* const* q_rows;
  uint32_t* kp;
  uint32_t* vp;
  uint16_t* qb;
  // The current block: K pair c / 2 of position p at k_pairs[c / 2 *
  // k_pair_stride + p], V pair p / 2 of channel c at v_pairs[p / 2 *
  // head_dim + c]. odd_pair: the V pair whose second position lies past the
  // block (read in place, that half is whatever the page holds there), or
  // none.
  static constexpr size_t kNoPair = ~size_t{0};
  const uint32_t* k_pairs = nullptr;
  size_t k_pair_stride = kScoreBlock;
  const uint32_t* v_pairs = nullptr;
  size_t odd_pair = kNoPair;
  // A block read in place can ask for the next one as it is read: while
  // next_k_pairs / next_v_pairs are set (PaceNext), each K or V step of the
  // products first asks for the lines at the same place in the next block,
  // so its misses are spread over this block's loads, one per line. (A
  // share of requests after each group of rows, the other Block's way,
  // leaves half the next block to be asked for at the end of this one.)
  // (A widened f16 or f32 block is not in the page's layout: no hints.)
  template <typename T>
  static constexpr bool kPacedPrefetch = std::is_same_v<T, hwy::bfloat16_t>;
  const uint32_t* next_k_pairs = nullptr;
  const uint32_t* next_v_pairs = nullptr;

  // The next block's K and V in the page layout (bf16 pairs), or null.
  HWY_INLINE void PaceNext(const void* k_block, const void* v_block) {
    next_k_pairs = static_cast<const uint32_t*>(k_block);
    next_v_pairs = static_cast<const uint32_t*>(v_block);
  }

  // The rows' queries in bf16, once per call of AttendGroup.
  POCKET_BF16_ATTR void PrepareRows(size_t rows, size_t head_dim) {
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < head_dim; c += 16) StoreBf16(q_rows[r] + c, qb + r * head_dim + c);
    }
  }

  // kp and vp from the block's `count` positions; kp's positions [count,
  // padded) and vp's odd half past `count` are zero.
  template <typename T>
  POCKET_BF16_ATTR void Widen(const T* HWY_RESTRICT k_block, size_t k_stride,
                              const T* HWY_RESTRICT v_block, size_t v_stride, size_t count,
                              size_t padded, size_t head_dim, size_t /*slot*/) {
    if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
      // In place: k_stride counts the elements between K's pairs of channels.
      (void)v_stride;
      (void)padded;
      (void)head_dim;
      k_pairs = reinterpret_cast<const uint32_t*>(k_block);
      k_pair_stride = k_stride / 2;
      v_pairs = reinterpret_cast<const uint32_t*>(v_block);
      odd_pair = count % 2 != 0 ? count / 2 : kNoPair;
      return;
    }
    k_pairs = kp;
    k_pair_stride = kScoreBlock;
    v_pairs = vp;
    odd_pair = kNoPair;
    for (size_t c = 0; c < head_dim; c += 2) {
      const T* even = k_block + c * k_stride;
      const T* odd = even + k_stride;
      for (size_t p = 0; p < padded; p += 16) {
        const size_t n = count - p;
        _mm512_storeu_si512(kp + c / 2 * kScoreBlock + p,
                            PackPairs(Load16(even + p, n), Load16(odd + p, n)));
      }
    }
    for (size_t p = 0; p < count; p += 2) {
      const T* even = v_block + p * v_stride;
      const T* odd = even + v_stride;
      const bool has_odd = p + 1 < count;
      for (size_t c = 0; c < head_dim; c += 16) {
        const __m512 o = has_odd ? Load16(odd + c, 16) : _mm512_setzero_ps();
        _mm512_storeu_si512(vp + p / 2 * head_dim + c, PackPairs(Load16(even + c, 16), o));
      }
    }
  }

  // scores[r][0, padded) = q[take[r]] . k for kRows (1 to 4) rows, 4 vectors
  // of positions at a time while they last, each loaded K vector serving
  // every row.
  template <size_t kRows, class D>
  POCKET_BF16_ATTR void Scores(D, const size_t* take, size_t head_dim, size_t padded,
                               float* const* scores) const {
    const uint16_t* q[kRows];
    for (size_t r = 0; r < kRows; ++r) q[r] = qb + take[r] * head_dim;
    const size_t pairs = head_dim / 2;
    size_t p = 0;
    for (; p + 64 <= padded; p += 64) {
      __m512 acc[kRows][4];
      for (size_t r = 0; r < kRows; ++r) {
        for (size_t i = 0; i < 4; ++i) acc[r][i] = _mm512_setzero_ps();
      }
      for (size_t c = 0; c < pairs; ++c) {
        const size_t at = c * k_pair_stride + p;
        if (next_k_pairs != nullptr) PrefetchStep(next_k_pairs + at);
        DotStep(k_pairs + at, q, c, acc);
      }
      for (size_t r = 0; r < kRows; ++r) Store4(acc[r], scores[r] + p);
    }
    // A block's last positions: one vector per row, its channel pairs split
    // over two chains.
    for (; p < padded; p += 16) {
      for (size_t r = 0; r < kRows; ++r) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0;
        for (size_t c = 0; c < pairs; c += 2) {
          a0 = Dot(a0, _mm512_loadu_si512(k_pairs + c * k_pair_stride + p), BroadcastPair(q[r], c));
          a1 = Dot(a1, _mm512_loadu_si512(k_pairs + (c + 1) * k_pair_stride + p),
                   BroadcastPair(q[r], c + 1));
        }
        _mm512_storeu_ps(scores[r] + p, _mm512_add_ps(a0, a1));
      }
    }
  }

  // out[r][head_dim] += sum_p w[r][p] * v[p] for p < count and kRows rows;
  // w[r] is zero from count up to the next multiple of 16. The rows' 4
  // output vectors stay in registers across the block's positions.
  template <size_t kRows, class D>
  POCKET_BF16_ATTR void AddWeightedV(D, float* const* w, size_t count, size_t head_dim,
                                     float* const* out) const {
    alignas(64) uint16_t wb[kRows][kScoreBlock];
    const uint16_t* weights[kRows];
    for (size_t r = 0; r < kRows; ++r) {
      for (size_t p = 0; p < count; p += 16) StoreBf16(w[r] + p, wb[r] + p);
      weights[r] = wb[r];
    }
    const size_t pairs = (count + 1) / 2;
    // A pair with one position of the block, read in place: its other half
    // may hold anything (0 * NaN is NaN), so it is cleared. (count may stop
    // short of the block for a row's last block in a prompt.)
    const size_t whole = std::min(pairs, odd_pair);
    const __m512i even_half = _mm512_set1_epi32(0xFFFF);
    const auto v_at = [&](size_t p, size_t c) {
      const __m512i v = _mm512_loadu_si512(v_pairs + p * head_dim + c);
      return p < whole ? v : _mm512_and_si512(v, even_half);
    };
    size_t c = 0;
    for (; c + 64 <= head_dim; c += 64) {
      __m512 acc[kRows][4];
      for (size_t r = 0; r < kRows; ++r) Load4(out[r] + c, acc[r]);
      for (size_t p = 0; p < whole; ++p) {
        const size_t at = p * head_dim + c;
        if (next_v_pairs != nullptr) PrefetchStep(next_v_pairs + at);
        DotStep(v_pairs + at, weights, p, acc);
      }
      if (whole < pairs) {
        for (size_t r = 0; r < kRows; ++r) {
          const __m512bh b = BroadcastPair(weights[r], whole);
          for (size_t i = 0; i < 4; ++i) acc[r][i] = Dot(acc[r][i], v_at(whole, c + 16 * i), b);
        }
      }
      for (size_t r = 0; r < kRows; ++r) Store4(acc[r], out[r] + c);
    }
    for (; c < head_dim; c += 16) {  // head sizes that are not 64 channels
      for (size_t r = 0; r < kRows; ++r) {
        __m512 a = _mm512_loadu_ps(out[r] + c);
        for (size_t p = 0; p < pairs; ++p) a = Dot(a, v_at(p, c), BroadcastPair(wb[r], p));
        _mm512_storeu_ps(out[r] + c, a);
      }
    }
  }
};

#if POCKET_X86_AMX_KERNELS
#define POCKET_ATTENTION_AMX 1
// GCC pastes tile numbers into its AMX assembly and Clang's builtins check
// their caller's features: the functions that use tiles carry AMX's.
#define POCKET_AMX_ATTR __attribute__((target(HWY_TARGET_STR ",avx512bf16,amx-tile,amx-bf16")))

// AttendGroup's Block with AMX-BF16 tiles, for a bf16 cache read in place on
// x86 CPUs that have them (kernel_target.h: MatrixExtensionMultipliesBf16).
// TDPBF16PS adds A[m][2k] B[k][2n] + A[m][2k + 1] B[k][2n + 1] into C[m][n]
// for 16 x 16 sums and 32 pairs: 8,192 multiply-adds, where vdpbf16ps
// makes 32. A bf16 page already holds both products' B operands in the
// tile layout, 16 pairs of 4 bytes a row:
//   q . k   B row k: channel pair k of 16 positions; A: 16 query rows, 32
//           channels a tile (from the rows' bf16 queries).
//   w V     B row k: position pair k of 16 channels; A: 16 rows' softmax
//           weights in bf16, 32 positions a tile.
// So a tile's 16 rows share each K and V load (Bf16Block's 4 rows do), and
// a 64-position block of head 64 takes 8 tile products each way. Scores go
// through memory to AttendGroup's softmax (AVX-512), and each block's
// weighted V is added to the rows' outputs, which the softmax rescales.
// head_dim: a multiple of 32, at most kMaxHead (Q's tiles stay loaded).
struct AmxBf16Block {
  static constexpr bool kCoarseExp = true;  // as Bf16Block: weights in bf16
  static constexpr size_t kRows = 16;       // a tile's rows
  static constexpr size_t kMaxHead = 128;
  // Only bf16 pages come here, read in place: each B tile's 16 lines are
  // asked for in the next block as the tile is loaded.
  template <typename T>
  static constexpr bool kPacedPrefetch = true;
  const float* const* q_rows;
  // The rows' queries in bf16, then 15 rows of zeros (a tile reads 16 rows
  // from any row); 64-byte aligned.
  uint16_t* qb;
  const uint32_t* k_pairs = nullptr;
  size_t k_pair_stride = 0;  // pairs between K's channel pairs
  const uint32_t* v_pairs = nullptr;
  size_t count = 0;  // the block's positions
  const uint32_t* next_k_pairs = nullptr;
  const uint32_t* next_v_pairs = nullptr;

  HWY_INLINE void PaceNext(const void* k_block, const void* v_block) {
    next_k_pairs = static_cast<const uint32_t*>(k_block);
    next_v_pairs = static_cast<const uint32_t*>(v_block);
  }

  // Every tile 16 rows of 64 bytes.
  POCKET_AMX_ATTR static void Configure() {
    TileConfig config = {};
    config.palette = 1;
    for (int t = 0; t < 8; ++t) {
      config.bytes_per_row[t] = 64;
      config.rows[t] = 16;
    }
    POCKET_LOAD_TILE_CONFIG(config);
  }

  POCKET_AMX_ATTR static void Release() { _tile_release(); }

  POCKET_AMX_ATTR void PrepareRows(size_t rows, size_t head_dim) {
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < head_dim; c += 16) StoreBf16(q_rows[r] + c, qb + r * head_dim + c);
    }
    std::memset(qb + rows * head_dim, 0, 15 * head_dim * sizeof(uint16_t));
    Configure();
  }

  template <typename T>
  HWY_INLINE void Widen(const T* HWY_RESTRICT k_block, size_t k_stride,
                        const T* HWY_RESTRICT v_block, size_t /*v_stride*/, size_t block_count,
                        size_t /*padded*/, size_t /*head_dim*/, size_t /*slot*/) {
    static_assert(std::is_same_v<T, hwy::bfloat16_t>, "AMX reads bf16 pages only");
    k_pairs = reinterpret_cast<const uint32_t*>(k_block);
    k_pair_stride = k_stride / 2;
    v_pairs = reinterpret_cast<const uint32_t*>(v_block);
    count = block_count;
  }

  // Asks for the 16 lines (`stride` bytes apart) at `at` in the next block.
  static HWY_INLINE void PrefetchTile(const uint32_t* next, size_t at, size_t stride) {
    if (next == nullptr) return;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(next + at);
    for (size_t j = 0; j < 16; ++j) hwy::Prefetch(p + j * stride);
  }

  // scores[r][0, padded) = q[take[r]] . k for the kTaken rows (rows of
  // scores kScoreBlock floats apart: the tile also writes the rows past
  // kTaken, which AttendGroup's array holds).
  template <size_t kTaken, class D>
  POCKET_AMX_ATTR void Scores(D, const size_t* take, size_t head_dim, size_t padded,
                              float* const* scores) const {
    // AttendGroup takes rows in order, skipping those that end before the
    // block: with lens in order (AttendGroupAmx), a prefix. So the rows
    // taken follow each other in qb.
    const uint16_t* a = qb + take[0] * head_dim;
    const size_t a_stride = head_dim * sizeof(uint16_t);
    const size_t tiles = head_dim / 32;
    _tile_loadd(0, a, a_stride);
    if (tiles > 1) _tile_loadd(1, a + 32, a_stride);
    if (tiles > 2) _tile_loadd(2, a + 64, a_stride);
    if (tiles > 3) _tile_loadd(3, a + 96, a_stride);
    const size_t b_stride = k_pair_stride * sizeof(uint32_t);
    for (size_t p = 0; p < padded; p += 16) {
      _tile_zero(5);
      // Q tile t times K's channel pairs 16 t .. 16 t + 15 at p, B tiles 4
      // and 6 in turn.
#define POCKET_AMX_SCORE_TILE(t, b)               \
  if (tiles > t) {                                \
    const size_t at = 16 * t * k_pair_stride + p; \
    _tile_loadd(b, k_pairs + at, b_stride);       \
    PrefetchTile(next_k_pairs, at, b_stride);     \
    _tile_dpbf16ps(5, t, b);                      \
  }
      POCKET_AMX_SCORE_TILE(0, 4)
      POCKET_AMX_SCORE_TILE(1, 6)
      POCKET_AMX_SCORE_TILE(2, 4)
      POCKET_AMX_SCORE_TILE(3, 6)
#undef POCKET_AMX_SCORE_TILE
      _tile_stored(5, scores[0] + p, kScoreBlock * sizeof(float));
    }
  }

  // out[r][head_dim] += sum_p w[r][p] * v[p] for p < n and the kTaken rows;
  // w[r] (kScoreBlock floats apart) is zero from n up to the next multiple
  // of 16.
  template <size_t kTaken, class D>
  POCKET_AMX_ATTR void AddWeightedV(D, float* const* w, size_t n, size_t head_dim,
                                    float* const* out) const {
    // The weights in bf16, 32 positions an A tile: zero past n and in the
    // rows not taken.
    alignas(64) uint16_t wb[kRows * kScoreBlock];
    const size_t chunks = (n + 31) / 32;
    const size_t filled = (n + 15) / 16 * 16;
    for (size_t r = 0; r < kRows; ++r) {
      uint16_t* row = wb + r * kScoreBlock;
      size_t p = 0;
      if (r < kTaken) {
        for (; p < filled; p += 16) StoreBf16(w[0] + r * kScoreBlock + p, row + p);
      }
      std::memset(row + p, 0, (32 * chunks - p) * sizeof(uint16_t));
    }
    // V's pairs are read in place but for a chunk that reaches past the
    // block: there a page may hold anything (0 * NaN is NaN), so that chunk
    // is copied with the odd pair's second half and the pairs after it
    // cleared. Only the last chunk can.
    alignas(64) uint32_t cleared[16 * kMaxHead];
    const size_t valid = count / 2;  // pairs wholly in the block
    const size_t last = chunks - 1;
    const bool clear_last = 16 * last + 16 > valid;
    if (clear_last) {
      const uint32_t* b = v_pairs + 16 * last * head_dim;
      const __m512i even_half = _mm512_set1_epi32(0xFFFF);
      for (size_t j = 0; j < 16; ++j) {
        const size_t pair = 16 * last + j;
        for (size_t c = 0; c < head_dim; c += 16) {
          __m512i v = _mm512_setzero_si512();
          if (pair < valid) v = _mm512_loadu_si512(b + j * head_dim + c);
          if (pair == valid && count % 2 != 0) {
            v = _mm512_and_si512(_mm512_loadu_si512(b + j * head_dim + c), even_half);
          }
          _mm512_store_si512(cleared + j * head_dim + c, v);
        }
      }
    }
    const size_t b_stride = head_dim * sizeof(uint32_t);
    alignas(64) float sums[kRows * 64];
    for (size_t c0 = 0; c0 < head_dim; c0 += 64) {
      const size_t tiles = std::min<size_t>(4, (head_dim - c0) / 16);
      _tile_zero(1);
      if (tiles > 1) _tile_zero(3);
      if (tiles > 2) _tile_zero(5);
      if (tiles > 3) _tile_zero(7);
      for (size_t ch = 0; ch < chunks; ++ch) {
        const bool in_place = !(clear_last && ch == last);
        const uint32_t* b = in_place ? v_pairs + 16 * ch * head_dim : cleared;
        _tile_loadd(0, wb + 32 * ch, kScoreBlock * sizeof(uint16_t));
        // The weights times channels c0 + 16 j .. c0 + 16 j + 15 into sums
        // tile 2 j + 1, B tiles 2 and 4 in turn.
#define POCKET_AMX_V_TILE(j, acc, breg)                                                   \
  if (tiles > j) {                                                                        \
    _tile_loadd(breg, b + c0 + 16 * j, b_stride);                                         \
    if (in_place) PrefetchTile(next_v_pairs, 16 * ch * head_dim + c0 + 16 * j, b_stride); \
    _tile_dpbf16ps(acc, 0, breg);                                                         \
  }
        POCKET_AMX_V_TILE(0, 1, 2)
        POCKET_AMX_V_TILE(1, 3, 4)
        POCKET_AMX_V_TILE(2, 5, 2)
        POCKET_AMX_V_TILE(3, 7, 4)
#undef POCKET_AMX_V_TILE
      }
      constexpr size_t kSumStride = 64 * sizeof(float);
      _tile_stored(1, sums, kSumStride);
      if (tiles > 1) _tile_stored(3, sums + 16, kSumStride);
      if (tiles > 2) _tile_stored(5, sums + 32, kSumStride);
      if (tiles > 3) _tile_stored(7, sums + 48, kSumStride);
      for (size_t r = 0; r < kTaken; ++r) {
        for (size_t j = 0; j < tiles; ++j) {
          float* o = out[r] + c0 + 16 * j;
          _mm512_storeu_ps(
              o, _mm512_add_ps(_mm512_loadu_ps(o), _mm512_load_ps(sums + r * 64 + 16 * j)));
        }
      }
    }
  }
};
#endif  // POCKET_X86_AMX_KERNELS

#elif defined(POCKET_BF16_ARM)

// The same Block with 128-bit vectors: 4 positions (q . k) or channels
// (w V) a vector, 4 query rows sharing each loaded K and V vector (16
// accumulators, 4 loaded vectors and 4 of the rows' pairs in the 32
// registers). BFDOT's lane form takes pair j of a vector as the broadcast,
// so one load serves 4 steps of each row. (Where the baseline has BF16 the
// SVE targets build it too: its vectors are its own.)

// 4 values of src widened to f32; lanes from `count` on (count < 4) are 0.
template <typename T>
POCKET_BF16_ATTR inline float32x4_t Load4F32(const T* HWY_RESTRICT src, size_t count) {
  if (count >= 4) {
    if constexpr (std::is_same_v<T, float>) return vld1q_f32(src);
    if constexpr (std::is_same_v<T, hwy::float16_t>) {
      return vcvt_f32_f16(vld1_f16(reinterpret_cast<const float16_t*>(src)));
    }
  }
  float lanes[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (size_t i = 0; i < std::min<size_t>(count, 4); ++i) lanes[i] = ScalarF32(src + i);
  return vld1q_f32(lanes);
}

// 4 f32 values rounded to bf16 (nearest even), in order.
POCKET_BF16_ATTR inline uint16x4_t ToBf16(float32x4_t v) {
  return vreinterpret_u16_bf16(vcvt_bf16_f32(v));
}

// `even` and `odd` rounded to bf16 and interleaved: 32-bit lane i holds
// (even_i, odd_i), the low half even.
POCKET_BF16_ATTR inline uint32x4_t PackPairs(float32x4_t even, float32x4_t odd) {
  const uint16x4_t e = ToBf16(even), o = ToBf16(odd);
  return vreinterpretq_u32_u16(vcombine_u16(vzip1_u16(e, o), vzip2_u16(e, o)));
}

// acc += a . pair j of b, lane by lane.
template <int j>
POCKET_BF16_ATTR inline float32x4_t DotLane(float32x4_t acc, uint32x4_t a, uint32x4_t b) {
  return vbfdotq_laneq_f32(acc, vreinterpretq_bf16_u32(a), vreinterpretq_bf16_u32(b), j);
}

// acc[r][i] += the 4 vectors of pairs at p times pair j of x[r], for kRows
// rows; each vector is loaded once for every row.
template <int j, size_t kRows>
POCKET_BF16_ATTR inline void DotStep(const uint32_t* HWY_RESTRICT p, const uint32x4_t (&x)[kRows],
                                     float32x4_t (&acc)[kRows][4]) {
  uint32x4_t v[4];
  // Loads stay in their step: hoisting the next steps' (GCC loads all 16 of
  // a Scores iteration first) spills accumulators.
  asm volatile("" ::: "memory");
  for (size_t i = 0; i < 4; ++i) v[i] = vld1q_u32(p + 4 * i);
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t i = 0; i < 4; ++i) acc[r][i] = DotLane<j>(acc[r][i], v[i], x[r]);
  }
}

struct Bf16Block {
  // Softmax weights from Exp2Coarse (1e-4 relative), rounded to bf16.
  static constexpr bool kCoarseExp = true;
  static constexpr size_t kRows = 4;
  const float* const* q_rows;
  uint32_t* kp;
  uint32_t* vp;
  uint16_t* qb;
  // The current block, as in the x86 Block: K pair c / 2 of position p at
  // k_pairs[c / 2 * k_pair_stride + p], V pair p / 2 of channel c at
  // v_pairs[p / 2 * head_dim + c]; odd_pair: the V pair read in place whose
  // second position lies past the block, or none.
  static constexpr size_t kNoPair = ~size_t{0};
  const uint32_t* k_pairs = nullptr;
  size_t k_pair_stride = kScoreBlock;
  const uint32_t* v_pairs = nullptr;
  size_t odd_pair = kNoPair;
  // AttendGroup asks for the next block in shares between groups of rows.
  template <typename>
  static constexpr bool kPacedPrefetch = false;

  // The rows' queries in bf16, once per call of AttendGroup (head_dim is a
  // multiple of 16).
  POCKET_BF16_ATTR void PrepareRows(size_t rows, size_t head_dim) {
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < head_dim; c += 4) {
        vst1_u16(qb + r * head_dim + c, ToBf16(vld1q_f32(q_rows[r] + c)));
      }
    }
  }

  // kp and vp from the block's `count` positions (bf16 pages: read in
  // place); kp's positions [count, padded) and vp's odd half past `count`
  // are zero.
  template <typename T>
  POCKET_BF16_ATTR void Widen(const T* HWY_RESTRICT k_block, size_t k_stride,
                              const T* HWY_RESTRICT v_block, size_t v_stride, size_t count,
                              size_t padded, size_t head_dim, size_t /*slot*/) {
    if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
      (void)v_stride;
      (void)padded;
      (void)head_dim;
      k_pairs = reinterpret_cast<const uint32_t*>(k_block);
      k_pair_stride = k_stride / 2;
      v_pairs = reinterpret_cast<const uint32_t*>(v_block);
      odd_pair = count % 2 != 0 ? count / 2 : kNoPair;
      return;
    }
    k_pairs = kp;
    k_pair_stride = kScoreBlock;
    v_pairs = vp;
    odd_pair = kNoPair;
    for (size_t c = 0; c < head_dim; c += 2) {
      const T* even = k_block + c * k_stride;
      const T* odd = even + k_stride;
      for (size_t p = 0; p < padded; p += 4) {
        const size_t n = p < count ? count - p : 0;
        vst1q_u32(kp + c / 2 * kScoreBlock + p,
                  PackPairs(Load4F32(even + p, n), Load4F32(odd + p, n)));
      }
    }
    for (size_t p = 0; p < count; p += 2) {
      const T* even = v_block + p * v_stride;
      const T* odd = even + v_stride;
      const bool has_odd = p + 1 < count;
      for (size_t c = 0; c < head_dim; c += 4) {
        const float32x4_t o = has_odd ? Load4F32(odd + c, 4) : vdupq_n_f32(0.0f);
        vst1q_u32(vp + p / 2 * head_dim + c, PackPairs(Load4F32(even + c, 4), o));
      }
    }
  }

  // scores[r][0, padded) = q[take[r]] . k for kRows (1 to 4) rows: 16
  // positions at a time while they last, then 4.
  template <size_t kRows, class D>
  POCKET_BF16_ATTR void Scores(D, const size_t* take, size_t head_dim, size_t padded,
                               float* const* scores) const {
    const uint16_t* q[kRows];
    for (size_t r = 0; r < kRows; ++r) q[r] = qb + take[r] * head_dim;
    const size_t pairs = head_dim / 2;  // a multiple of 8
    const auto pairs_of = [&](size_t c, uint32x4_t(&x)[kRows]) {
      for (size_t r = 0; r < kRows; ++r) x[r] = vreinterpretq_u32_u16(vld1q_u16(q[r] + 2 * c));
    };
    size_t p = 0;
    for (; p + 16 <= padded; p += 16) {
      float32x4_t acc[kRows][4];
      for (size_t r = 0; r < kRows; ++r) {
        for (size_t i = 0; i < 4; ++i) acc[r][i] = vdupq_n_f32(0.0f);
      }
      for (size_t c = 0; c < pairs; c += 4) {
        uint32x4_t x[kRows];
        pairs_of(c, x);
        const uint32_t* at = k_pairs + c * k_pair_stride + p;
        DotStep<0>(at, x, acc);
        DotStep<1>(at + k_pair_stride, x, acc);
        DotStep<2>(at + 2 * k_pair_stride, x, acc);
        DotStep<3>(at + 3 * k_pair_stride, x, acc);
      }
      for (size_t r = 0; r < kRows; ++r) {
        for (size_t i = 0; i < 4; ++i) vst1q_f32(scores[r] + p + 4 * i, acc[r][i]);
      }
    }
    // A block's last positions: one vector per row, two chains.
    for (; p < padded; p += 4) {
      float32x4_t a[kRows], b[kRows];
      for (size_t r = 0; r < kRows; ++r) a[r] = b[r] = vdupq_n_f32(0.0f);
      for (size_t c = 0; c < pairs; c += 4) {
        uint32x4_t x[kRows];
        pairs_of(c, x);
        const uint32_t* at = k_pairs + c * k_pair_stride + p;
        const uint32x4_t k0 = vld1q_u32(at), k1 = vld1q_u32(at + k_pair_stride);
        const uint32x4_t k2 = vld1q_u32(at + 2 * k_pair_stride);
        const uint32x4_t k3 = vld1q_u32(at + 3 * k_pair_stride);
        for (size_t r = 0; r < kRows; ++r) {
          a[r] = DotLane<2>(DotLane<0>(a[r], k0, x[r]), k2, x[r]);
          b[r] = DotLane<3>(DotLane<1>(b[r], k1, x[r]), k3, x[r]);
        }
      }
      for (size_t r = 0; r < kRows; ++r) vst1q_f32(scores[r] + p, vaddq_f32(a[r], b[r]));
    }
  }

  // out[r][head_dim] += sum_p w[r][p] * v[p] for p < count and kRows rows;
  // w[r] is zero from count up to the next multiple of 4. 16 channels of
  // the rows' outputs stay in registers across the block's positions.
  template <size_t kRows, class D>
  POCKET_BF16_ATTR void AddWeightedV(D, float* const* w, size_t count, size_t head_dim,
                                     float* const* out) const {
    // The weights in bf16, zero up to a multiple of 8 (4 pairs a load).
    alignas(16) uint16_t wb[kRows][kScoreBlock + 8];
    const size_t pairs = (count + 1) / 2;
    const size_t filled = (count + 3) / 4 * 4;
    for (size_t r = 0; r < kRows; ++r) {
      for (size_t p = 0; p < filled; p += 4) vst1_u16(wb[r] + p, ToBf16(vld1q_f32(w[r] + p)));
      for (size_t p = filled; p < (2 * pairs + 7) / 8 * 8; p += 4)
        vst1_u16(wb[r] + p, vdup_n_u16(0));
    }
    // A pair with one position of the block, read in place: its other half
    // may hold anything (0 * NaN is NaN), so it is cleared.
    const size_t whole = std::min(pairs, odd_pair);
    const uint32x4_t even_half = vdupq_n_u32(0xFFFF);
    for (size_t c = 0; c < head_dim; c += 16) {
      float32x4_t acc[kRows][4];
      for (size_t r = 0; r < kRows; ++r) {
        for (size_t i = 0; i < 4; ++i) acc[r][i] = vld1q_f32(out[r] + c + 4 * i);
      }
      size_t p = 0;
      for (; p + 4 <= whole; p += 4) {
        uint32x4_t x[kRows];
        for (size_t r = 0; r < kRows; ++r) x[r] = vreinterpretq_u32_u16(vld1q_u16(wb[r] + 2 * p));
        const uint32_t* at = v_pairs + p * head_dim + c;
        DotStep<0>(at, x, acc);
        DotStep<1>(at + head_dim, x, acc);
        DotStep<2>(at + 2 * head_dim, x, acc);
        DotStep<3>(at + 3 * head_dim, x, acc);
      }
      for (; p < pairs; ++p) {  // the last pairs, one at a time
        uint32x4_t v[4];
        for (size_t i = 0; i < 4; ++i) {
          v[i] = vld1q_u32(v_pairs + p * head_dim + c + 4 * i);
          if (p >= whole) v[i] = vandq_u32(v[i], even_half);
        }
        for (size_t r = 0; r < kRows; ++r) {
          uint32_t pair;
          std::memcpy(&pair, wb[r] + 2 * p, 4);
          const uint32x4_t x = vdupq_n_u32(pair);
          for (size_t i = 0; i < 4; ++i) acc[r][i] = DotLane<0>(acc[r][i], v[i], x);
        }
      }
      for (size_t r = 0; r < kRows; ++r) {
        for (size_t i = 0; i < 4; ++i) vst1q_f32(out[r] + c + 4 * i, acc[r][i]);
      }
    }
  }
};

#endif  // POCKET_BF16_X86, POCKET_BF16_ARM

#if POCKET_ATTENTION_BF16
// AttendGroup over an f32, f16 or bf16 cache with Bf16Block's products:
// what attention.cc runs for AttentionMath::kBf16, and attention_bf16_arm.cc
// builds once more for Arm CPUs with BF16. kb and vb: the Block's pair
// scratch; q_scratch: the rows' queries in bf16. Not inline: that build's
// copy is called from attention.cc.
void AttendGroupBf16(const float* const* q_rows, const size_t* lens, float* const* out_rows,
                     size_t rows, const KvView& kv, size_t kv_offset, size_t head_dim, float scale,
                     size_t begin, size_t end, bool normalize, float* kb, float* vb,
                     void* q_scratch, float* max, float* sum) {
  Bf16Block block{q_rows, reinterpret_cast<uint32_t*>(kb), reinterpret_cast<uint32_t*>(vb),
                  static_cast<uint16_t*>(q_scratch)};
  WithKvElement(kv.type, [&](auto element) {
    using T = decltype(element);
    // A q8 cache gets int8 products (AttentionMathFor), never these.
    if constexpr (!std::is_same_v<T, int8_t>) {
      AttendGroup<T>(block, lens, out_rows, rows, kv, kv_offset, head_dim, scale, begin, end,
                     normalize, max, sum);
    }
  });
}
#endif  // POCKET_ATTENTION_BF16

#if defined(POCKET_ATTENTION_AMX)
// AttendGroup over a bf16 cache with AmxBf16Block's tile products, where
// AttentionByMatrixExtension holds (head_dim a multiple of 32, at most 128),
// for lens in order, as the rows of consecutive tokens are. q_scratch:
// the rows' queries in bf16 and 15 rows more, 64-byte aligned.
POCKET_AMX_ATTR void AttendGroupAmx(const float* const* q_rows, const size_t* lens,
                                    float* const* out_rows, size_t rows, const KvView& kv,
                                    size_t kv_offset, size_t head_dim, float scale, size_t begin,
                                    size_t end, bool normalize, void* q_scratch, float* max,
                                    float* sum) {
  AmxBf16Block block{q_rows, static_cast<uint16_t*>(q_scratch)};
  AttendGroup<hwy::bfloat16_t>(block, lens, out_rows, rows, kv, kv_offset, head_dim, scale, begin,
                               end, normalize, max, sum);
  AmxBf16Block::Release();
}
#endif

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ATTENTION_BF16_INL_H_
