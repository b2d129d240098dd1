// The KV cache ops of ops.h: row storage (f32, f16, q8), KvAppend, KvShift
// and Attention. Attention gives each thread the query rows of one kv head
// and a block of tokens (AttendGroup of kernels/cpu/attention-inl.h, with
// f32 or, where the CPU has AVX512_BF16 or ARM's BF16, bf16 products), and when decoding
// leaves threads idle, a segment of the cached positions as well.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cpu/int8_extension.h"
#include "backends/cpu/kernel_target.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/parallel.h"
#include "util/fp16.h"

#include <hwy/base.h>
#if HWY_ARCH_X86 && defined(__GNUC__)
#include <cpuid.h>
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backends/cpu/avx3_dl_vnni-inl.h"

#include "kernels/cpu/attention-inl.h"
#include "kernels/cpu/attention_bf16-inl.h"
#include "kernels/cpu/attention_int8-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

void HadamardKernel(float* x, size_t n) { Hadamard(x, n); }

// x[0, n) rounded to f16, nearest even: the hardware conversion where
// Highway uses one (x86 F16C on AVX2 and up, aarch64), F32ToF16 elsewhere
// (Highway's software DemoteTo truncates).
void ToF16Kernel(const float* HWY_RESTRICT x, size_t n, uint16_t* HWY_RESTRICT out) {
  size_t i = 0;
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)) || HWY_ARCH_ARM_A64
  const hn::ScalableTag<float> d;
  const hn::Rebind<hwy::float16_t, decltype(d)> dh;
  const size_t N = hn::Lanes(d);
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(d, x + i)), dh,
               reinterpret_cast<hwy::float16_t*>(out + i));
  }
#endif
  for (; i < n; ++i) out[i] = F32ToF16(x[i]);
}

// x[0, n) rounded to bf16, nearest even, as F32ToBF16 (util/fp16.h): f32's
// upper half after adding 0x7FFF plus the lowest kept bit; a NaN keeps its
// upper half with the quiet bit set.
void ToBf16Kernel(const float* HWY_RESTRICT x, size_t n, uint16_t* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const size_t N = hn::Lanes(du);
  const auto bias = hn::Set(du, 0x7FFFu), one = hn::Set(du, 1u), quiet = hn::Set(du, 0x40u);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(df, x + i);
    const auto bits = hn::BitCast(du, v);
    const auto upper = hn::ShiftRight<16>(bits);
    const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(bits, bias), hn::And(upper, one)));
    const auto nan = hn::RebindMask(du, hn::IsNaN(v));
    // Halves as int32 (all below 2^16): Highway demotes those to uint16.
    const auto halves = hn::BitCast(di, hn::IfThenElse(nan, hn::Or(upper, quiet), rounded));
    hn::StoreU(hn::DemoteTo(du16, halves), du16, out + i);
  }
  for (; i < n; ++i) out[i] = F32ToBF16(x[i]);
}

// One q8 head row: codes[n] = x[n] / scale rounded to nearest even and
// clamped to [-127, 127], scale = max|x| / 127 as stored (f16, whose bits
// it returns), so that decoding reproduces the nearest code of every value.
uint16_t QuantizeQ8Kernel(const float* HWY_RESTRICT x, size_t n, int8_t* HWY_RESTRICT codes) {
  const hn::CappedTag<float, 16> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<int8_t, decltype(d)> d8;
  const size_t N = hn::Lanes(d);
  auto vmax = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= n; i += N) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(d, x + i)));
  float amax = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const uint16_t bits = F32ToF16(amax / 127.0f);
  const float scale = F16ToF32(bits);
  if (!(scale > 0.0f)) {
    std::fill(codes, codes + n, int8_t{0});
    return bits;
  }
  const auto vscale = hn::Set(d, scale);
  const auto lo = hn::Set(di, -127), hi = hn::Set(di, 127);
  for (i = 0; i + N <= n; i += N) {
    const auto c = hn::NearestInt(hn::Div(hn::LoadU(d, x + i), vscale));
    hn::StoreU(hn::DemoteTo(d8, hn::Min(hn::Max(c, lo), hi)), d8, codes + i);
  }
  for (; i < n; ++i) {
    codes[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] / scale), -127.0f, 127.0f));
  }
  return bits;
}

// Whether this target has bf16 products (the CPU must have AVX512_BF16, or
// on Arm BF16, as well): AttendGroupKernel's, or on Arm those of
// attention_bf16_arm.cc's build, which every Arm target but the emulated
// ones hands a bf16 group to.
bool AttentionBf16Compiled() {
#if POCKET_ARM_BF16_KERNELS
  return HWY_TARGET == HWY_NEON || HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2 ||
         HWY_TARGET == HWY_SVE_256 || HWY_TARGET == HWY_SVE2_128;
#else
  return POCKET_ATTENTION_BF16;
#endif
}

// Whether this target has AttendGroupKernel's int8 products (q8 caches).
bool AttentionInt8Compiled() { return POCKET_INT8_DOT; }

// AttendGroup with the Block that `math` names (Attention has checked that
// this target and the cache allow it): F32Block, or Int8Block for a q8
// cache (q_scratch: head_dim codes per row, then a float scale and an int32
// bias per row). AttendGroupKernel takes bf16 products elsewhere.
template <typename T>
void AttendGroupAs(const float* const* q_rows, const size_t* lens, float* const* out_rows,
                   size_t rows, const KvView& kv, size_t kv_offset, size_t head_dim, float scale,
                   size_t begin, size_t end, bool normalize, AttentionMath math, float* kb,
                   float* vb, void* q_scratch, float* max, float* sum) {
#if POCKET_INT8_DOT
  if constexpr (std::is_same_v<T, int8_t>) {
    if (math == AttentionMath::kInt8) {
      return AttendGroupInt8(q_rows, lens, out_rows, rows, kv, kv_offset, head_dim, scale, begin,
                             end, normalize, q_scratch, max, sum);
    }
  }
#endif
  (void)math;
  (void)q_scratch;
  F32Block<T> block{q_rows, kb, vb};
  AttendGroup<T>(block, lens, out_rows, rows, kv, kv_offset, head_dim, scale, begin, end, normalize,
                 max, sum);
}

// kb and vb: kScoreBlock * head_dim floats each, 64-byte aligned; max, sum:
// one float per row; q_scratch: the rows' queries in bf16 or int8. tiles:
// AttentionByMatrixExtension holds (lens then must be in order, as the rows
// of consecutive tokens are).
void AttendGroupKernel(const float* const* q_rows, const size_t* lens, float* const* out_rows,
                       size_t rows, const KvView& kv, size_t kv_offset, size_t head_dim,
                       float scale, size_t begin, size_t end, bool normalize, AttentionMath math,
                       bool tiles, float* kb, float* vb, void* q_scratch, float* max, float* sum) {
#if defined(POCKET_ATTENTION_AMX)
  static_assert(AmxBf16Block::kMaxHead == 128, "AttentionByMatrixExtension's limit");
  if (tiles) {
    return AttendGroupAmx(q_rows, lens, out_rows, rows, kv, kv_offset, head_dim, scale, begin, end,
                          normalize, q_scratch, max, sum);
  }
#else
  (void)tiles;  // this target has no tile kernel, and the CPU no tiles for it
#endif
#if POCKET_ATTENTION_BF16
  if (math == AttentionMath::kBf16 && kv.type != KvType::kQ8) {
    return AttendGroupBf16(q_rows, lens, out_rows, rows, kv, kv_offset, head_dim, scale, begin, end,
                           normalize, kb, vb, q_scratch, max, sum);
  }
#endif
  WithKvElement(kv.type, [&](auto element) {
    AttendGroupAs<decltype(element)>(q_rows, lens, out_rows, rows, kv, kv_offset, head_dim, scale,
                                     begin, end, normalize, math, kb, vb, q_scratch, max, sum);
  });
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(AttendGroupKernel);
HWY_EXPORT(HadamardKernel);
HWY_EXPORT(QuantizeQ8Kernel);
HWY_EXPORT(AttentionBf16Compiled);
HWY_EXPORT(AttentionInt8Compiled);
HWY_EXPORT(ToF16Kernel);
HWY_EXPORT(ToBf16Kernel);

// The int8 extension's build of AttendGroupInt8 (int8_dotprod.cc: NEON with
// sdot, int8_avx_vnni.cc: AVX2 with vpdpbusd; kernel_target.h), declared
// with the type of the base target's, which this file defines.
#ifdef POCKET_INT8_EXTENSION_NS
namespace POCKET_INT8_EXTENSION_NS {
decltype(POCKET_INT8_EXTENSION_BASE_NS::AttendGroupInt8) AttendGroupInt8;
}  // namespace POCKET_INT8_EXTENSION_NS
#endif

// attention_bf16_arm.cc's build of AttendGroupBf16 (attention_bf16-inl.h)
// for Arm CPUs with BF16, where the baseline lacks BF16.
#if POCKET_ARM_BF16_KERNELS
namespace N_NEON_BF16 {
void AttendGroupBf16(const float* const* q_rows, const size_t* lens, float* const* out_rows,
                     size_t rows, const KvView& kv, size_t kv_offset, size_t head_dim, float scale,
                     size_t begin, size_t end, bool normalize, float* kb, float* vb,
                     void* q_scratch, float* max, float* sum);
}  // namespace N_NEON_BF16
#endif

namespace {

// The int8 extension's AttendGroupInt8 where the CPU kernels run it now
// (Int8ExtensionChosen), else null.
using AttendInt8Fn = void (*)(const float* const*, const size_t*, float* const*, size_t,
                              const KvView&, size_t, size_t, float, size_t, size_t, bool, void*,
                              float*, float*);
AttendInt8Fn ChosenInt8Extension() {
#ifdef POCKET_INT8_EXTENSION_NS
  if (Int8ExtensionChosen()) return &POCKET_INT8_EXTENSION_NS::AttendGroupInt8;
#endif
  return nullptr;
}

// attention_bf16_arm.cc's AttendGroupBf16 in builds that have it (where
// AttentionMath::kBf16 resolves, it is the only bf16 kernel), else null.
using AttendBf16Fn = void (*)(const float* const*, const size_t*, float* const*, size_t,
                              const KvView&, size_t, size_t, float, size_t, size_t, bool, float*,
                              float*, void*, float*, float*);
AttendBf16Fn ArmBf16Kernel() {
#if POCKET_ARM_BF16_KERNELS
  return &N_NEON_BF16::AttendGroupBf16;
#else
  return nullptr;
#endif
}

// Tokens per grouped-attention task, and the positions of one widened K/V
// block (the kernel's kScoreBlock).
constexpr size_t kAttentionTokenBlock = 32;
constexpr size_t kGroupBlock = 64;
// Positions below which a kv head's decode attention is not split further
// across threads: each segment costs a partial state and a merge.
constexpr size_t kMinSegmentPositions = 256;

// AVX512_BF16 (CPUID leaf 7, subleaf 1, EAX bit 5), which Highway's AVX3_DL
// target does not check; on Arm, FEAT_BF16 (BFDOT), which its NEON and SVE
// targets do not.
bool CpuHasBf16Dot() {
#if HWY_ARCH_X86 && defined(__GNUC__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax >> 5 & 1) != 0;
#elif HWY_ARCH_ARM_A64  // HWCAP2_BF16, arm64 Linux ABI; Apple M2 and later
  return ArmCpuReports(2, 14, "hw.optional.arm.FEAT_BF16");
#else
  return false;
#endif
}

// attention-inl.h's transform, for rotated q8 rows, queries and outputs.
void HadamardRow(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(HadamardKernel)(x, n); }

// Address of element i of row t (the page layouts of ops.h).
uint8_t* ElemAt(const KvView& kv, void* const* pages, size_t t, size_t i) {
  return static_cast<uint8_t*>(pages[t / kv.page_tokens]) +
         KvElemIndex(kv, pages, t % kv.page_tokens, i) * KvElemBytes(kv.type);
}

// Calls f(i, address of element i) for every value of row t, one kv head at
// a time with a fixed step, so the layout is resolved once per head rather
// than once per value (KvAppend runs this for every token of a prefill).
// bf16 K goes by pairs of channels, 2 page_tokens values apart; bf16 V steps
// 2 values, or 1 in a slot without a partner; q8 K goes by quads of a
// head's channels (ops.h).
template <typename F>
void ForEachValue(const KvView& kv, void* const* pages, size_t t, const F& f) {
  if (kv.type == KvType::kQ8 && pages == kv.k_pages) {
    for (size_t h0 = 0; h0 < kv.row_stride; h0 += kv.head_dim) {
      for (size_t g = 0; g < kv.head_dim; g += 4) {
        uint8_t* at = ElemAt(kv, pages, t, h0 + g);
        for (size_t c = g; c < std::min(g + 4, kv.head_dim); ++c) f(h0 + c, at++);
      }
    }
    return;
  }
  size_t step = KvValueStride(kv, pages) * KvElemBytes(kv.type);
  if (kv.type == KvType::kBf16 && pages == kv.k_pages) {
    uint8_t* at = ElemAt(kv, pages, t, 0);
    size_t i = 0;
    for (; i + 1 < kv.row_stride; i += 2, at += step) {
      f(i, at);
      f(i + 1, at + 2);
    }
    if (i < kv.row_stride) f(i, ElemAt(kv, pages, t, i));
    return;
  }
  if (kv.type == KvType::kBf16 && (t % kv.page_tokens | 1) >= kv.page_tokens) step = 2;
  const size_t head = KvHeadSize(kv);
  for (size_t h0 = 0; h0 < kv.row_stride; h0 += head) {
    uint8_t* at = ElemAt(kv, pages, t, h0);
    for (size_t c = 0; c < head; ++c, at += step) f(h0 + c, at);
  }
}

// The f16 scale of kv head h of row t (q8 only): after the page's codes.
uint8_t* HeadScale(const KvView& kv, void* const* pages, size_t t, size_t h) {
  return static_cast<uint8_t*>(pages[t / kv.page_tokens]) +
         KvScaleOffset(kv, t % kv.page_tokens, h);
}

// Stores x[row_stride] as row t.
void StoreRow(const KvView& kv, void* const* pages, size_t t, const float* x) {
  switch (kv.type) {
    case KvType::kF32:
      ForEachValue(kv, pages, t, [&](size_t i, uint8_t* at) { std::memcpy(at, x + i, 4); });
      return;
    case KvType::kF16:
    case KvType::kBf16: {
      thread_local std::vector<uint16_t> halves;
      halves.resize(kv.row_stride);
      if (kv.type == KvType::kF16) {
        HWY_DYNAMIC_DISPATCH(ToF16Kernel)(x, kv.row_stride, halves.data());
      } else {
        HWY_DYNAMIC_DISPATCH(ToBf16Kernel)(x, kv.row_stride, halves.data());
      }
      ForEachValue(kv, pages, t,
                   [&](size_t i, uint8_t* at) { std::memcpy(at, halves.data() + i, 2); });
      return;
    }
    case KvType::kQ8: {
      thread_local std::vector<float> rotated;
      if (KvRotated(kv)) {
        rotated.assign(x, x + kv.row_stride);
        for (size_t h = 0; h < kv.row_stride; h += kv.head_dim) {
          HadamardRow(rotated.data() + h, kv.head_dim);
        }
        x = rotated.data();
      }
      thread_local std::vector<int8_t> codes;
      codes.resize(kv.row_stride);
      for (size_t h = 0; h * kv.head_dim < kv.row_stride; ++h) {
        const uint16_t bits = HWY_DYNAMIC_DISPATCH(QuantizeQ8Kernel)(
            x + h * kv.head_dim, kv.head_dim, codes.data() + h * kv.head_dim);
        std::memcpy(HeadScale(kv, pages, t, h), &bits, 2);
      }
      ForEachValue(kv, pages, t, [&](size_t i, uint8_t* at) { std::memcpy(at, &codes[i], 1); });
      return;
    }
  }
}

}  // namespace

void KvReadRow(const KvView& kv, void* const* pages, size_t t, uint8_t* bytes) {
  const size_t elem = KvElemBytes(kv.type), values = kv.row_stride * elem;
  ForEachValue(kv, pages, t,
               [&](size_t i, uint8_t* at) { std::memcpy(bytes + i * elem, at, elem); });
  for (size_t h = 0; kv.type == KvType::kQ8 && h * kv.head_dim < kv.row_stride; ++h) {
    std::memcpy(bytes + values + 2 * h, HeadScale(kv, pages, t, h), 2);
  }
}

void KvWriteRow(const KvView& kv, void* const* pages, size_t t, const uint8_t* bytes) {
  const size_t elem = KvElemBytes(kv.type), values = kv.row_stride * elem;
  ForEachValue(kv, pages, t,
               [&](size_t i, uint8_t* at) { std::memcpy(at, bytes + i * elem, elem); });
  for (size_t h = 0; kv.type == KvType::kQ8 && h * kv.head_dim < kv.row_stride; ++h) {
    std::memcpy(HeadScale(kv, pages, t, h), bytes + values + 2 * h, 2);
  }
}

void KvRowToF32(const KvView& kv, void* const* pages, size_t t, float* out) {
  switch (kv.type) {
    case KvType::kF32:
      ForEachValue(kv, pages, t, [&](size_t i, uint8_t* at) { std::memcpy(out + i, at, 4); });
      return;
    case KvType::kF16:
    case KvType::kBf16:
      ForEachValue(kv, pages, t, [&](size_t i, uint8_t* at) {
        uint16_t h;
        std::memcpy(&h, at, 2);
        out[i] = kv.type == KvType::kF16 ? F16ToF32(h) : BF16ToF32(h);
      });
      return;
    case KvType::kQ8: {
      ForEachValue(kv, pages, t, [&](size_t i, uint8_t* at) {
        uint16_t scale;
        std::memcpy(&scale, HeadScale(kv, pages, t, i / kv.head_dim), 2);
        out[i] = F16ToF32(scale) * static_cast<float>(static_cast<int8_t>(*at));
      });
      if (KvRotated(kv)) {
        for (size_t h = 0; h < kv.row_stride; h += kv.head_dim) HadamardRow(out + h, kv.head_dim);
      }
      return;
    }
  }
}

void KvAppend(const KvView& kv, size_t n_past, const float* k, const float* v, size_t n,
              ThreadPool* pool) {
  if (k == nullptr || v == nullptr || kv.k_pages == nullptr || kv.v_pages == nullptr ||
      kv.page_tokens == 0 || (kv.type == KvType::kQ8 && kv.head_dim == 0)) {
    return;
  }
  // Runs of consecutive tokens: neighbours share the cache lines of
  // channel-major K pages, so threads meet only at the runs' ends.
  const size_t tasks = std::min(NumThreads(pool), n);
  ParallelOrInline(pool, tasks, [&](size_t task, size_t) {
    size_t begin, end;
    SplitRange(n, 1, tasks, task, &begin, &end);
    for (size_t t = begin; t < end; ++t) {
      StoreRow(kv, kv.k_pages, n_past + t, k + t * kv.row_stride);
      StoreRow(kv, kv.v_pages, n_past + t, v + t * kv.row_stride);
    }
  });
}

void KvPrefetchAppend(const KvView& kv, size_t t) {
  if (kv.k_pages == nullptr || kv.v_pages == nullptr || kv.page_tokens == 0 ||
      (kv.type == KvType::kQ8 && kv.head_dim == 0)) {
    return;
  }
  for (void* const* pages : {kv.k_pages, kv.v_pages}) {
    uintptr_t last_line = 0;
    ForEachValue(kv, pages, t, [&](size_t, uint8_t* at) {
      const uintptr_t line = reinterpret_cast<uintptr_t>(at) / 64;
      if (line == last_line) return;
      last_line = line;
      __builtin_prefetch(at, /*rw=*/1, /*locality=*/3);
    });
    if (kv.type == KvType::kQ8) {
      for (size_t h = 0; h * kv.head_dim < kv.row_stride; ++h) {
        __builtin_prefetch(HeadScale(kv, pages, t, h), 1, 3);
      }
    }
  }
}

void KvShift(const KvView& kv, size_t dst, size_t src, size_t count, const KvRope& rope) {
  if (kv.k_pages == nullptr || kv.v_pages == nullptr || kv.page_tokens == 0 || dst >= src ||
      (kv.type == KvType::kQ8 && kv.head_dim == 0) ||
      (rope.head_dim != 0 && kv.row_stride % rope.head_dim != 0)) {
    return;
  }
  std::vector<uint8_t> bytes(KvRowBytes(kv.type, kv.row_stride, kv.head_dim));
  std::vector<float> row(kv.row_stride);
  // A negative position rotates backwards: R(p) then R(dst - src) is
  // R(p + dst - src).
  const int32_t delta = -static_cast<int32_t>(src - dst);
  for (size_t i = 0; i < count; ++i) {
    KvReadRow(kv, kv.v_pages, src + i, bytes.data());
    KvWriteRow(kv, kv.v_pages, dst + i, bytes.data());
    if (rope.head_dim == 0) {
      KvReadRow(kv, kv.k_pages, src + i, bytes.data());
      KvWriteRow(kv, kv.k_pages, dst + i, bytes.data());
      continue;
    }
    KvRowToF32(kv, kv.k_pages, src + i, row.data());
    Rope(row.data(), 1, kv.row_stride / rope.head_dim, rope.head_dim, &delta, rope.theta,
         rope.style);
    StoreRow(kv, kv.k_pages, dst + i, row.data());
  }
}

namespace {

// One task per (kv head, block of tokens): its rows share every widened K/V
// block. Later token blocks attend more positions, so they come first and
// the short ones even out the threads at the end. When that leaves threads
// idle (decoding: one token block, n_kv_heads tasks), each task's positions
// are also split into segments of at least kMinSegmentPositions, whose
// partial softmax states are merged after.
// Rotated q8 caches hold H k and H v (ops.h): (H q) . (H k) = q . k, so the
// tasks score rotated copies of their queries, and the weighted sum of the
// H v rows, H out, is rotated back once it is complete.
void AttentionGrouped(const float* q, size_t n, size_t n_past, const KvView& kv, size_t n_heads,
                      size_t n_kv_heads, size_t head_dim, float scale, AttentionMath math,
                      float* out, ThreadPool* pool) {
  const size_t group = n_heads / n_kv_heads;
  // Up to kBatchTokens tokens get their single steps' bits (ops.h): each
  // token's rows go to the kernels alone, with its own length, as in its
  // step (the kernels' row blocks and position blocks would otherwise
  // depend on the other rows). Where a head's positions are split across
  // threads (segments), at boundaries that follow the length, each token
  // attends in a call of its own.
  const bool batch = n <= kBatchTokens;
  if (batch && n > 1 && n_kv_heads < NumThreads(pool)) {
    for (size_t t = 0; t < n; ++t) {
      AttentionGrouped(q + t * n_heads * head_dim, 1, n_past + t, kv, n_heads, n_kv_heads, head_dim,
                       scale, math, out + t * n_heads * head_dim, pool);
    }
    return;
  }
  const bool rotated = KvRotated(kv);
  const size_t block_tokens = batch ? 1 : kAttentionTokenBlock;
  const size_t token_blocks = (n + block_tokens - 1) / block_tokens;
  const size_t base_tasks = n_kv_heads * token_blocks;
  const size_t threads = NumThreads(pool);
  const size_t len = n_past + n;  // the longest row's positions
  // Segment boundaries fall on whole pages, so blocks stay within one page.
  const size_t pages = (len + kv.page_tokens - 1) / kv.page_tokens;
  const size_t segments =
      token_blocks == 1 && base_tasks < threads
          ? std::max<size_t>(1, std::min({(threads + base_tasks - 1) / base_tasks,
                                          len / kMinSegmentPositions, pages}))
          : 1;
  const auto boundary = [&](size_t seg) {
    return std::min(len, pages * seg / segments * kv.page_tokens);
  };
  // Segments only come with one token block, so every task has the same
  // n * group rows and the partial states are laid out in the tasks' own
  // row order: [segment][kv head][row] max and sum, and outputs with
  // head_dim floats per row.
  const size_t task_rows = n * group;
  const auto partial_row = [&](size_t seg, size_t h) { return (seg * n_kv_heads + h) * task_rows; };
  thread_local std::vector<float> partial;
  float* part_out = nullptr;
  float* part_max = nullptr;
  float* part_sum = nullptr;
  if (segments > 1) {
    const size_t states = segments * n_kv_heads * task_rows;
    partial.resize(states * (head_dim + 2));
    part_out = partial.data();
    part_max = part_out + states * head_dim;
    part_sum = part_max + states;
  }
  const AttendInt8Fn int8_extension =
      math == AttentionMath::kInt8 ? ChosenInt8Extension() : nullptr;
  // The matrix unit's tiles (AttendGroupKernel), chosen once per call.
  const bool tiles = AttentionByMatrixExtension(kv, head_dim, math);
  const AttendBf16Fn arm_bf16 = math == AttentionMath::kBf16 ? ArmBf16Kernel() : nullptr;
  ParallelOrInline(pool, base_tasks * segments, [&](size_t task, size_t) {
    const size_t seg = task % segments;
    const size_t base = task / segments;
    const size_t block = token_blocks - 1 - base / n_kv_heads;
    const size_t h = base % n_kv_heads;
    const size_t t0 = block * block_tokens;
    const size_t t1 = std::min(n, t0 + block_tokens);
    const size_t rows = (t1 - t0) * group;
    thread_local std::vector<float> buffer;
    thread_local std::vector<const float*> q_rows;
    thread_local std::vector<float*> out_rows;
    thread_local std::vector<size_t> lens;
    thread_local std::vector<float> rotated_q;
    // kb and vb start on a cache line (64 bytes = 16 floats), so no vector
    // load of them straddles two lines; then max and sum (rows each) and, in
    // bf16 or int8, the rows' queries (AttendGroupAs).
    // (bf16: 15 rows more, which AMX's tiles read past the last row.)
    const size_t q_floats = math == AttentionMath::kBf16   ? ((rows + 15) * head_dim + 1) / 2
                            : math == AttentionMath::kInt8 ? (rows * head_dim + 3) / 4 + 2 * rows
                                                           : 0;
    buffer.resize(2 * kGroupBlock * head_dim + 2 * rows + q_floats + 32);
    q_rows.clear();
    out_rows.clear();
    lens.clear();
    rotated_q.resize(rotated ? rows * head_dim : 0);
    const size_t first = partial_row(seg, h);  // segmented: this task's states
    for (size_t t = t0; t < t1; ++t) {
      for (size_t g = 0; g < group; ++g) {
        const size_t at = t * n_heads + h * group + g;  // row of q and out
        const float* row = q + at * head_dim;
        if (rotated) {
          float* copy = rotated_q.data() + q_rows.size() * head_dim;
          std::copy(row, row + head_dim, copy);
          HadamardRow(copy, head_dim);
          row = copy;
        }
        q_rows.push_back(row);
        out_rows.push_back(segments > 1 ? part_out + (first + out_rows.size()) * head_dim
                                        : out + at * head_dim);
        lens.push_back(n_past + t + 1);  // in order, as AttendGroupAmx needs
      }
    }
    float* b = buffer.data() + (16 - reinterpret_cast<uintptr_t>(buffer.data()) / 4 % 16) % 16;
    float* max = segments > 1 ? part_max + first : b + 2 * kGroupBlock * head_dim;
    float* sum = segments > 1 ? part_sum + first : max + rows;
    // On a cache line too: AMX's tiles load its rows.
    float* q_scratch = b + (2 * kGroupBlock * head_dim + 2 * rows + 15) / 16 * 16;
    if (arm_bf16 != nullptr) {
      arm_bf16(q_rows.data(), lens.data(), out_rows.data(), rows, kv, h * head_dim, head_dim, scale,
               boundary(seg), boundary(seg + 1), segments == 1, b, b + kGroupBlock * head_dim,
               q_scratch, max, sum);
    } else if (int8_extension != nullptr) {
      int8_extension(q_rows.data(), lens.data(), out_rows.data(), rows, kv, h * head_dim, head_dim,
                     scale, boundary(seg), boundary(seg + 1), segments == 1, q_scratch, max, sum);
    } else {
      HWY_DYNAMIC_DISPATCH(AttendGroupKernel)
      (q_rows.data(), lens.data(), out_rows.data(), rows, kv, h * head_dim, head_dim, scale,
       boundary(seg), boundary(seg + 1), segments == 1, math, tiles, b, b + kGroupBlock * head_dim,
       q_scratch, max, sum);
    }
    for (size_t i = 0; rotated && segments == 1 && i < rows; ++i) {
      HadamardRow(out_rows[i], head_dim);
    }
  });
  if (segments == 1) return;
  // out = sum_s exp(max_s - M) out_s / sum_s exp(max_s - M) sum_s, M the
  // largest max_s (finite: every row has a position in some segment; an
  // empty segment has max -inf, weight 0).
  for (size_t h = 0; h < n_kv_heads; ++h) {
    for (size_t i = 0; i < task_rows; ++i) {
      float m = -INFINITY;
      for (size_t seg = 0; seg < segments; ++seg) {
        m = std::max(m, part_max[partial_row(seg, h) + i]);
      }
      // Task row i is token i / group, query head h * group + i % group.
      float* o = out + ((i / group) * n_heads + h * group + i % group) * head_dim;
      std::fill(o, o + head_dim, 0.0f);
      float total = 0.0f;
      for (size_t seg = 0; seg < segments; ++seg) {
        const size_t state = partial_row(seg, h) + i;
        const float w = std::exp(part_max[state] - m);
        total += w * part_sum[state];
        const float* po = part_out + state * head_dim;
        for (size_t j = 0; j < head_dim; ++j) o[j] += w * po[j];
      }
      for (size_t j = 0; j < head_dim; ++j) o[j] /= total;
      if (rotated) HadamardRow(o, head_dim);
    }
  }
}

}  // namespace

// Asks the dispatched target each time (tests switch targets); the CPUID
// answer is cached.
bool AttentionBf16Available() {
  static const bool cpu = CpuHasBf16Dot();
  return cpu && HWY_DYNAMIC_DISPATCH(AttentionBf16Compiled)();
}

void Attention(const float* q, size_t n, size_t n_past, const KvView& kv, size_t n_heads,
               size_t n_kv_heads, size_t head_dim, float* out, ThreadPool* pool,
               AttentionMath math) {
  if (q == nullptr || out == nullptr || n == 0 || n_heads == 0 || n_kv_heads == 0 ||
      n_heads % n_kv_heads != 0 || kv.page_tokens == 0 ||
      (kv.type == KvType::kBf16 && (kv.page_tokens % 16 != 0 || head_dim % 2 != 0)) ||
      (kv.head_dim != head_dim &&
       (kv.type == KvType::kQ8 || kv.type == KvType::kBf16 || kv.head_dim != 0))) {
    return;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  AttentionGrouped(q, n, n_past, kv, n_heads, n_kv_heads, head_dim, scale,
                   AttentionMathFor(kv, head_dim, math), out, pool);
}

bool AttentionByMatrixExtension(const KvView& kv, size_t head_dim, AttentionMath math) {
  return kv.type == KvType::kBf16 && head_dim % 32 == 0 && head_dim <= 128 &&
         AttentionMathFor(kv, head_dim, math) == AttentionMath::kBf16 &&
         MatrixExtensionMultipliesBf16();
}

AttentionMath AttentionMathFor(const KvView& kv, size_t head_dim, AttentionMath math) {
  if (math == AttentionMath::kF32) return math;
  if (kv.type == KvType::kQ8) {
    // Whole vectors of positions lie in one page (ops.h), quads in a head.
    return kv.page_tokens % 16 == 0 && head_dim % 4 == 0 &&
                   HWY_DYNAMIC_DISPATCH(AttentionInt8Compiled)()
               ? AttentionMath::kInt8
               : AttentionMath::kF32;
  }
  return head_dim % 16 == 0 && AttentionBf16Available() ? AttentionMath::kBf16
                                                        : AttentionMath::kF32;
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
