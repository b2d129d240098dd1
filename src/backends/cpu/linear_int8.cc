// LinearInt8 (linear_int8.h): quantizes the tokens once per call, then splits
// output rows across threads like Linear and runs the int8 kernels of
// kernels/cpu/matvec_int8-inl.h for the best target of this CPU.

#include "backends/cpu/linear_int8.h"

#include <algorithm>
#include <vector>

#include "backends/cpu/parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/linear_int8.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

// AVX3_DL's int8 dot is AVX512-VNNI, which Highway 1.0.3's flags for that
// target do not enable (they name AVX-VNNI, a different extension), so every
// function compiled for AVX3_DL in this file adds it.
#if HWY_TARGET == HWY_AVX3_DL
HWY_PUSH_ATTRIBUTES("avx512vnni")
#endif

#include "kernels/cpu/act_quant-inl.h"
#include "kernels/cpu/int8_dot-inl.h"
#include "kernels/cpu/matvec_int8-inl.h"
#include "kernels/cpu/matvec_rows16-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

bool HasInt8Dot() { return POCKET_INT8_DOT != 0; }

void QuantizeRow(const float* x, size_t cols, size_t block, int8_t* q, float* d, float* s) {
  QuantizeActivationRow(x, cols, block, q, d, s);
}

void DecodeRowsInt8(const QuantizedRows& w, const QuantizedActs& a, const float* bias, size_t r0,
                    size_t r1, float* out) {
#if POCKET_INT8_DOT
  LinearInt8DecodeRows(w, a, bias, r0, r1, out);
#endif
}

void PrefillRowsInt8(const QuantizedRows& w, const QuantizedActs& a, size_t n, const float* bias,
                     size_t r0, size_t r1, float* scratch, float* out) {
#if POCKET_INT8_DOT
  LinearInt8PrefillRows(w, a, n, bias, r0, r1, scratch, out);
#endif
}

void Rows16DecodeInt8(const Rows16Weights& w, const QuantizedActs& a, const float* bias, size_t r0,
                      size_t r1, float* out) {
#if POCKET_INT8_DOT
  Rows16GemvInt8(w, a, bias, r0, r1, out);
#endif
}

void Rows16PrefillInt8(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                       size_t r0, size_t r1, float* out) {
#if POCKET_INT8_DOT
  Rows16GemmInt8(w, a, n, bias, r0, r1, out);
#endif
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_TARGET == HWY_AVX3_DL
HWY_POP_ATTRIBUTES
#endif

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(HasInt8Dot);
HWY_EXPORT(QuantizeRow);
HWY_EXPORT(DecodeRowsInt8);
HWY_EXPORT(PrefillRowsInt8);
HWY_EXPORT(Rows16DecodeInt8);
HWY_EXPORT(Rows16PrefillInt8);

namespace {

// Thread ranges are multiples of the kernels' 4-row blocks (planar) or of
// the layout's 16-row blocks (rows16).
constexpr size_t kRowAlign = 4;
// Row tasks per thread: a thread that finishes early (or a worker the OS
// runs late) leaves part of its range to be taken by the others, rather
// than all of it or nothing (ThreadPool claims ranges in order).
constexpr size_t kTasksPerThread = 4;
// Prefill walks tokens in chunks so a chunk of codes (64 x cols bytes) stays
// in L2 while the thread's rows pass over it.
constexpr size_t kTokenChunk = 64;

}  // namespace

void QuantizeActivations(const float* x, size_t cols, size_t block, int8_t* q, float* d, float* s) {
  HWY_DYNAMIC_DISPATCH(QuantizeRow)(x, cols, block, q, d, s);
}

bool LinearInt8(const float* x, size_t n, const WeightView& w, const float* bias, float* out,
                ThreadPool* pool) {
  if ((w.dtype != DType::kQ4 && w.dtype != DType::kQ8) || !HWY_DYNAMIC_DISPATCH(HasInt8Dot)()) {
    return false;
  }
  const QuantizedRows rows(w);
  // Reused across calls (decode runs hundreds of Linears per token); owned by
  // the calling thread, read by the workers during this call only.
  thread_local std::vector<int8_t> codes;
  thread_local std::vector<float> scales_sums;
  codes.resize(n * w.cols);
  scales_sums.resize(2 * n * rows.groups);
  // Plain pointers: inside the tasks, the names above would denote the
  // worker's own (empty) thread_local vectors.
  const QuantizedActs acts{codes.data(), scales_sums.data(), scales_sums.data() + n * rows.groups};
  int8_t* q = codes.data();
  float* d = scales_sums.data();
  float* s = d + n * rows.groups;
  const size_t threads = NumThreads(pool);
  const size_t quant_tasks = std::min(threads, n);
  ParallelOrInline(pool, quant_tasks, [&](size_t task, size_t) {
    size_t t0, t1;
    SplitRange(n, 1, quant_tasks, task, &t0, &t1);
    for (size_t t = t0; t < t1; ++t) {
      HWY_DYNAMIC_DISPATCH(QuantizeRow)
      (x + t * w.cols, w.cols, rows.group, q + t * w.cols, d + t * rows.groups,
       s + t * rows.groups);
    }
  });
  const bool rows16 = w.layout == TensorLayout::kRows16;
  const size_t align = rows16 ? kRows16Block : kRowAlign;
  const size_t tasks =
      threads == 1 ? 1 : std::min(threads * kTasksPerThread, (w.rows + align - 1) / align);
  ParallelOrInline(pool, tasks, [&](size_t task, size_t) {
    size_t r0, r1;
    SplitRange(w.rows, align, tasks, task, &r0, &r1);
    if (r0 >= r1) return;
    if (rows16) {
      const Rows16Weights packed(w);
      if (n == 1) {
        HWY_DYNAMIC_DISPATCH(Rows16DecodeInt8)(packed, acts, bias, r0, r1, out);
        return;
      }
      for (size_t t = 0; t < n; t += kTokenChunk) {
        const size_t chunk = std::min(kTokenChunk, n - t);
        const QuantizedActs part{acts.q + t * w.cols, acts.d + t * rows.groups,
                                 acts.s + t * rows.groups};
        HWY_DYNAMIC_DISPATCH(Rows16PrefillInt8)
        (packed, part, chunk, bias, r0, r1, out + t * w.rows);
      }
      return;
    }
    if (n == 1) {
      HWY_DYNAMIC_DISPATCH(DecodeRowsInt8)(rows, acts, bias, r0, r1, out);
      return;
    }
    thread_local std::vector<float> scratch;  // the kernel's per-tile scales and mins
    scratch.resize(8 * rows.groups);
    for (size_t t = 0; t < n; t += kTokenChunk) {
      const size_t chunk = std::min(kTokenChunk, n - t);
      const QuantizedActs part{acts.q + t * w.cols, acts.d + t * rows.groups,
                               acts.s + t * rows.groups};
      HWY_DYNAMIC_DISPATCH(PrefillRowsInt8)
      (rows, part, chunk, bias, r0, r1, scratch.data(), out + t * w.rows);
    }
  });
  return true;
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
