// LinearInt8 (linear_int8.h): quantizes the tokens once per call, then splits
// output rows across threads like Linear and runs the int8 kernels of
// kernels/cpu/matvec_int8-inl.h for the best target of this CPU.

#include "backends/cpu/linear_int8.h"

#include <algorithm>
#include <vector>

#include "backends/cpu/int8_extension.h"
#include "backends/cpu/kernel_target.h"
#include "backends/cpu/parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/linear_int8.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backends/cpu/avx3_dl_vnni-inl.h"

#include "backends/cpu/linear_int8_kernels-inl.h"
#include "kernels/cpu/act_quant-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

bool HasInt8Dot() { return POCKET_INT8_DOT != 0; }

void QuantizeRow(const float* x, size_t cols, size_t block, int8_t* q, float* d, float* s,
                 int32_t* qs) {
  QuantizeActivationRow(x, cols, block, q, d, s, qs);
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(HasInt8Dot);
HWY_EXPORT(QuantizeRow);
HWY_EXPORT(DecodeRowsInt8);
HWY_EXPORT(PrefillRowsInt8);
HWY_EXPORT(Rows16DecodeInt8);
HWY_EXPORT(Rows16PrefillInt8);
HWY_EXPORT(Rows16DecodeQ8);
HWY_EXPORT(Rows16PrefillQ8);
HWY_EXPORT(Rows16BatchInt8);
HWY_EXPORT(Rows16BatchQ8);

// The int8 extension's build of the same kernels (kernel_target.h):
// int8_dotprod.cc (NEON with sdot) or int8_avx_vnni.cc (AVX2
// with vpdpbusd), declared with the types of the base target's ones, which
// this file defines.
#ifdef POCKET_INT8_EXTENSION_NS
namespace POCKET_INT8_EXTENSION_NS {
decltype(POCKET_INT8_EXTENSION_BASE_NS::DecodeRowsInt8) DecodeRowsInt8;
decltype(POCKET_INT8_EXTENSION_BASE_NS::PrefillRowsInt8) PrefillRowsInt8;
decltype(POCKET_INT8_EXTENSION_BASE_NS::Rows16DecodeInt8) Rows16DecodeInt8;
decltype(POCKET_INT8_EXTENSION_BASE_NS::Rows16PrefillInt8) Rows16PrefillInt8;
decltype(POCKET_INT8_EXTENSION_BASE_NS::Rows16DecodeQ8) Rows16DecodeQ8;
decltype(POCKET_INT8_EXTENSION_BASE_NS::Rows16PrefillQ8) Rows16PrefillQ8;
decltype(POCKET_INT8_EXTENSION_BASE_NS::Rows16BatchInt8) Rows16BatchInt8;
decltype(POCKET_INT8_EXTENSION_BASE_NS::Rows16BatchQ8) Rows16BatchQ8;
}  // namespace POCKET_INT8_EXTENSION_NS
#endif

// linear_i8mm_arm.cc's prefill kernels (SMMLA) for Arm CPUs with I8MM,
// declared with the types of the NEON target's.
#if POCKET_ARM_I8MM_KERNELS
namespace N_NEON_I8MM {
decltype(N_NEON::Rows16PrefillInt8) Rows16PrefillI8mm;
decltype(N_NEON::Rows16PrefillQ8) Rows16PrefillQ8I8mm;
}  // namespace N_NEON_I8MM
#endif

// linear_amx_x86.cc's prefill kernels (AMX tiles) for x86 CPUs with
// AMX-INT8; `tiles` is 16 cols bytes, 64-byte aligned.
#if POCKET_X86_AMX_KERNELS
namespace amx {
void Rows16PrefillQ4(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                     size_t r0, size_t r1, uint8_t* tiles, float* out);
void Rows16PrefillQ8(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                     size_t r0, size_t r1, uint8_t* tiles, float* out);
}  // namespace amx
#endif

namespace {

// The first 64-byte boundary at or after p, in a buffer 63 bytes longer
// than its contents: tiles load whole cache lines (matmul_rows16_amx-inl.h).
template <typename T>
T* AlignUp64(T* p) {
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
}

#if POCKET_X86_AMX_KERNELS
// The AMX kernels with the calling thread's buffer for a block's B tiles.
void Rows16PrefillAmx(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                      size_t r0, size_t r1, float* out) {
  thread_local std::vector<uint8_t> tiles;
  tiles.resize(16 * w.cols + 63);
  (w.q8 ? amx::Rows16PrefillQ8 : amx::Rows16PrefillQ4)(w, a, n, bias, r0, r1,
                                                       AlignUp64(tiles.data()), out);
}

// Tokens' per-group values v[t * groups + g] laid out 16 tokens to a run,
// [t / 16][g][16], tokens past n standing in as the last one (QuantizedActs).
void ByTokenTile(const float* v, size_t n, size_t groups, float* out) {
  for (size_t t0 = 0; t0 < n; t0 += 16) {
    for (size_t g = 0; g < groups; ++g) {
      for (size_t i = 0; i < 16; ++i, ++out) *out = v[std::min(t0 + i, n - 1) * groups + g];
    }
  }
}
#endif

// The dot-product kernels of the target the CPU kernels dispatch to now.
struct Int8Kernels {
  bool scales_by_tile;  // the prompt kernels take QuantizedActs::d_tiles, s_tiles
  decltype(&HWY_STATIC_DISPATCH(DecodeRowsInt8)) decode;
  decltype(&HWY_STATIC_DISPATCH(PrefillRowsInt8)) prefill;
  decltype(&HWY_STATIC_DISPATCH(Rows16DecodeInt8)) rows16_decode;
  decltype(&HWY_STATIC_DISPATCH(Rows16PrefillInt8)) rows16_prefill;
  decltype(&HWY_STATIC_DISPATCH(Rows16DecodeQ8)) rows16_decode_q8;
  decltype(&HWY_STATIC_DISPATCH(Rows16PrefillQ8)) rows16_prefill_q8;
  decltype(&HWY_STATIC_DISPATCH(Rows16BatchInt8)) rows16_batch;
  decltype(&HWY_STATIC_DISPATCH(Rows16BatchQ8)) rows16_batch_q8;
  size_t read_ahead = 0;  // decode's rows16 GEMV (DecodeReadAhead), read once per call
};

// `prompt`: more than kBatchTokens tokens, where the matrix extension's
// kernels may take over. The batch kernels come from the same build as
// decode's, so they round as it does.
Int8Kernels ChosenKernels(bool prompt) {
  Int8Kernels kernels = {false,
                         &HWY_DYNAMIC_DISPATCH(DecodeRowsInt8),
                         &HWY_DYNAMIC_DISPATCH(PrefillRowsInt8),
                         &HWY_DYNAMIC_DISPATCH(Rows16DecodeInt8),
                         &HWY_DYNAMIC_DISPATCH(Rows16PrefillInt8),
                         &HWY_DYNAMIC_DISPATCH(Rows16DecodeQ8),
                         &HWY_DYNAMIC_DISPATCH(Rows16PrefillQ8),
                         &HWY_DYNAMIC_DISPATCH(Rows16BatchInt8),
                         &HWY_DYNAMIC_DISPATCH(Rows16BatchQ8)};
#ifdef POCKET_INT8_EXTENSION_NS
  if (Int8ExtensionChosen()) {
    namespace ext = POCKET_INT8_EXTENSION_NS;
    kernels = {false,
               &ext::DecodeRowsInt8,
               &ext::PrefillRowsInt8,
               &ext::Rows16DecodeInt8,
               &ext::Rows16PrefillInt8,
               &ext::Rows16DecodeQ8,
               &ext::Rows16PrefillQ8,
               &ext::Rows16BatchInt8,
               &ext::Rows16BatchQ8};
  } else if (DotprodDecodesForSve128()) {
    namespace ext = POCKET_INT8_EXTENSION_NS;
    kernels.rows16_decode = &ext::Rows16DecodeInt8;
    kernels.rows16_decode_q8 = &ext::Rows16DecodeQ8;
    kernels.rows16_batch = &ext::Rows16BatchInt8;
    kernels.rows16_batch_q8 = &ext::Rows16BatchQ8;
  }
#endif
#if POCKET_ARM_I8MM_KERNELS
  if (prompt && MatrixExtensionChosen()) {
    kernels.rows16_prefill = &N_NEON_I8MM::Rows16PrefillI8mm;
    kernels.rows16_prefill_q8 = &N_NEON_I8MM::Rows16PrefillQ8I8mm;
  }
#elif POCKET_X86_AMX_KERNELS
  if (prompt && MatrixExtensionChosen()) {
    kernels.scales_by_tile = true;
    kernels.rows16_prefill = kernels.rows16_prefill_q8 = &Rows16PrefillAmx;
  }
#endif
  if (!prompt) kernels.read_ahead = DecodeReadAhead();
  return kernels;
}

// Thread ranges are multiples of the kernels' 4-row blocks (planar) or of
// the layout's 16-row blocks (rows16).
constexpr size_t kRowAlign = 4;
// Prompt row tasks per thread: a thread that finishes early (or a worker
// the OS runs late) leaves part of its range to be taken by the others,
// rather than all of it or nothing (ThreadPool claims ranges in order).
constexpr size_t kTasksPerThread = 4;
// The batch kernels spend longer on each record than decode, long enough for
// the hardware prefetchers to fall behind on every CPU tried: they ask for
// the record this many bytes on into L2.
constexpr size_t kBatchReadAhead = 4096;
// Prefill walks tokens in chunks so a chunk of codes (64 x cols bytes) stays
// in L2 while the thread's rows pass over it.
constexpr size_t kTokenChunk = 64;

}  // namespace

size_t DecodePiece(const WeightView& w, size_t block_rows) {
  // Half-bytes per weight, about (q4's scales and mins aside).
  const size_t half_bytes = w.dtype == DType::kQ4    ? 1
                            : w.dtype == DType::kQ8  ? 2
                            : w.dtype == DType::kF32 ? 8
                                                     : 4;  // f16, bf16
  constexpr size_t kPieceBytes = 32 << 10;
  return std::max<size_t>(1,
                          2 * kPieceBytes / std::max<size_t>(1, block_rows * w.cols * half_bytes));
}

void QuantizeActivations(const float* x, size_t cols, size_t block, int8_t* q, float* d, float* s) {
  HWY_DYNAMIC_DISPATCH(QuantizeRow)(x, cols, block, q, d, s, nullptr);
}

namespace {

// Rows [r0, r1) of one weight for n tokens whose activations are quantized.
void RowsInt8(const Int8Kernels& kernels, const LinearOut& item, const QuantizedActs& acts,
              size_t n, size_t r0, size_t r1) {
  const WeightView& w = item.w;
  const QuantizedRows rows(w);
  if (w.layout == TensorLayout::kRows16) {
    Rows16Weights packed(w);
    const auto decode = packed.q8 ? kernels.rows16_decode_q8 : kernels.rows16_decode;
    const auto batch = packed.q8 ? kernels.rows16_batch_q8 : kernels.rows16_batch;
    const auto prefill = packed.q8 ? kernels.rows16_prefill_q8 : kernels.rows16_prefill;
    if (n <= kBatchTokens) {
      packed.read_ahead = n == 1 ? kernels.read_ahead : kBatchReadAhead;
      if (n == 1) {
        decode(packed, acts, item.bias, r0, r1, item.out);
      } else {
        batch(packed, acts, n, item.bias, r0, r1, item.out);
      }
      return;
    }
    for (size_t t = 0; t < n; t += kTokenChunk) {
      const size_t chunk = std::min(kTokenChunk, n - t);
      prefill(packed, acts.From(t, w.cols, rows.groups), chunk, item.bias, r0, r1,
              item.out + t * w.rows);
    }
    return;
  }
  if (n <= kBatchTokens) {  // token by token: the rows stay in cache after the first
    for (size_t t = 0; t < n; ++t) {
      kernels.decode(rows, acts.From(t, w.cols, rows.groups), item.bias, r0, r1,
                     item.out + t * w.rows);
    }
    return;
  }
  thread_local std::vector<float> scratch;  // the kernel's per-tile scales and mins
  scratch.resize(8 * rows.groups);
  for (size_t t = 0; t < n; t += kTokenChunk) {
    const size_t chunk = std::min(kTokenChunk, n - t);
    kernels.prefill(rows, acts.From(t, w.cols, rows.groups), chunk, item.bias, r0, r1,
                    scratch.data(), item.out + t * w.rows);
  }
}

size_t ActGroup(const WeightView& w) { return w.dtype == DType::kQ8 ? kQ8Group : w.group; }

// Rows per kernel block, so thread ranges never split one.
size_t RowAlign(const WeightView& w) {
  return w.layout == TensorLayout::kRows16 ? kRows16Block : kRowAlign;
}

}  // namespace

bool LinearInt8Group(const float* x, size_t n, const LinearOut* items, size_t count,
                     ThreadPool* pool) {
  if (count == 0 || !HWY_DYNAMIC_DISPATCH(HasInt8Dot)()) return false;
  const WeightView& first = items[0].w;
  for (size_t i = 0; i < count; ++i) {
    const WeightView& w = items[i].w;
    if ((w.dtype != DType::kQ4 && w.dtype != DType::kQ8) || w.cols != first.cols ||
        ActGroup(w) != ActGroup(first)) {
      return false;
    }
  }
  const size_t cols = first.cols, group = ActGroup(first), groups = cols / group;
  // Reused across calls (decode runs hundreds of Linears per token); owned by
  // the calling thread, read by the workers during this call only.
  thread_local std::vector<int8_t> codes;
  thread_local std::vector<float> scales_sums;
  thread_local std::vector<int32_t> code_sums;
  codes.resize(n * cols + 63);
  scales_sums.resize(2 * n * groups);
  code_sums.resize(n * groups);
  // Plain pointers: inside the tasks, the names above would denote the
  // worker's own (empty) thread_local vectors.
  int8_t* q = AlignUp64(codes.data());
  float* d = scales_sums.data();
  float* s = d + n * groups;
  // Only the q8 rows16 prefill kernels read the code sums (dpbusd's bias).
  bool q8_rows16 = false;
  for (size_t i = 0; i < count; ++i) {
    q8_rows16 =
        q8_rows16 || (items[i].w.dtype == DType::kQ8 && items[i].w.layout == TensorLayout::kRows16);
  }
  int32_t* qs = n > 1 && q8_rows16 ? code_sums.data() : nullptr;
  const Int8Kernels kernels = ChosenKernels(n > kBatchTokens);
  const size_t threads = NumThreads(pool);
  const size_t quant_tasks = std::min(threads, n);
  ParallelOrInline(pool, quant_tasks, [&](size_t task, size_t) {
    size_t t0, t1;
    SplitRange(n, 1, quant_tasks, task, &t0, &t1);
    for (size_t t = t0; t < t1; ++t) {
      HWY_DYNAMIC_DISPATCH(QuantizeRow)
      (x + t * cols, cols, group, q + t * cols, d + t * groups, s + t * groups,
       qs ? qs + t * groups : nullptr);
    }
  });
  QuantizedActs acts{q, d, s, qs};
#if POCKET_X86_AMX_KERNELS
  thread_local std::vector<float> tiled;
  if (kernels.scales_by_tile) {
    const size_t run = (n + 15) / 16 * 16 * groups;
    tiled.resize(2 * run);
    ByTokenTile(d, n, groups, tiled.data());
    ByTokenTile(s, n, groups, tiled.data() + run);
    acts.d_tiles = tiled.data();
    acts.s_tiles = tiled.data() + run;
  }
#endif
  if (n <= kBatchTokens) {
    // Every weight's kernel blocks, one after another, as one range, in
    // pieces sized for the weight with the largest blocks.
    size_t block_begin[kMaxLinearGroup + 1] = {0};
    size_t piece = ~size_t{0};
    for (size_t i = 0; i < count; ++i) {
      const WeightView& w = items[i].w;
      const size_t align = RowAlign(w);
      block_begin[i + 1] = block_begin[i] + (w.rows + align - 1) / align;
      piece = std::min(piece, DecodePiece(w, align));
    }
    ParallelRangesOrInline(pool, block_begin[count], piece, [&](size_t b0, size_t b1, size_t) {
      for (size_t i = 0; i < count && b0 < b1; ++i) {
        if (b0 >= block_begin[i + 1]) continue;
        const size_t align = RowAlign(items[i].w), end = std::min(b1, block_begin[i + 1]);
        const size_t r0 = (b0 - block_begin[i]) * align;
        RowsInt8(kernels, items[i], acts, n, r0,
                 std::min(items[i].w.rows, (end - block_begin[i]) * align));
        b0 = end;
      }
    });
    return true;
  }
  // One parallel pass over every weight's rows: each weight gets tasks in
  // proportion to its rows (at least one), so the pass ends together.
  size_t total_rows = 0;
  for (size_t i = 0; i < count; ++i) total_rows += items[i].w.rows;
  const size_t want = threads == 1 ? 1 : threads * kTasksPerThread;
  size_t task_begin[kMaxLinearGroup + 1] = {0};
  size_t parts[kMaxLinearGroup];
  for (size_t i = 0; i < count; ++i) {
    const WeightView& w = items[i].w;
    const size_t blocks = (w.rows + RowAlign(w) - 1) / RowAlign(w);
    parts[i] = std::min(blocks, std::max<size_t>(1, want * w.rows / total_rows));
    task_begin[i + 1] = task_begin[i] + parts[i];
  }
  ParallelOrInline(pool, task_begin[count], [&](size_t task, size_t) {
    size_t i = 0;
    while (task >= task_begin[i + 1]) ++i;
    size_t r0, r1;
    SplitRange(items[i].w.rows, RowAlign(items[i].w), parts[i], task - task_begin[i], &r0, &r1);
    if (r0 < r1) RowsInt8(kernels, items[i], acts, n, r0, r1);
  });
  return true;
}

bool LinearInt8(const float* x, size_t n, const WeightView& w, const float* bias, float* out,
                ThreadPool* pool) {
  const LinearOut item{w, bias, out};
  return LinearInt8Group(x, n, &item, 1, pool);
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
