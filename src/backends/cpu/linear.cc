// Linear (ops.h): validates the shape, splits output rows across threads in
// contiguous blocks and runs the decode or prefill kernel of
// kernels/cpu/matvec-inl.h for the best target of this CPU. q4/q8 weights
// under QuantMath::kInt8 go to LinearInt8 (linear_int8.cc) instead.

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/linear_int8.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/rows16.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/linear.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/matvec-inl.h"
#include "kernels/cpu/matvec_rows16-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

void DecodeRows(const float* x, const float* xsum, const WeightView& w, const float* bias,
                size_t r0, size_t r1, float* out) {
  LinearDecodeRows(x, xsum, w, bias, r0, r1, out);
}

void PrefillRows(const float* x, size_t n, const WeightView& w, const float* bias, size_t r0,
                 size_t r1, float* scratch, float* out) {
  LinearPrefillRows(x, n, w, bias, r0, r1, scratch, out);
}

void Rows16RowsF32(const Rows16Weights& w, const float* x, const float* xsum, size_t n,
                   const float* bias, size_t r0, size_t r1, float* out) {
  Rows16GemvF32(w, x, xsum, n, bias, r0, r1, out);
}

void ComputeGroupSums(const float* x, size_t cols, size_t group, float* xsum) {
  GroupSums(x, cols, group, xsum);
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <hwy/aligned_allocator.h>

namespace pocket::cpu {
namespace {

HWY_EXPORT(DecodeRows);
HWY_EXPORT(PrefillRows);
HWY_EXPORT(ComputeGroupSums);
HWY_EXPORT(Rows16RowsF32);

// Row blocks handed to threads are multiples of the kernels' row tile.
constexpr size_t kRowAlign = 4;
// Prefill walks tokens in chunks so a chunk of x stays in L2 while every
// row block of the thread's range passes over it.
constexpr size_t kTokenChunk = 64;

bool ValidWeight(const WeightView& w) {
  if (w.data == nullptr) return false;
  switch (w.dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return true;
    case DType::kQ8:
      return w.cols % kQ8Group == 0 && IsValidLayout(w.layout, w.dtype, w.rows);
    case DType::kQ4:
      return (w.group == 32 || w.group == 64 || w.group == 128) && w.cols % w.group == 0 &&
             IsValidLayout(w.layout, w.dtype, w.rows);
  }
  return false;
}

// Linear with f32 activations over a rows16 q4 or q8 weight: every token's
// group sums (q4's min term), then 16-row blocks per thread
// (kernels/cpu/matvec_rows16-inl.h).
void LinearRows16F32(const float* x, size_t n, const WeightView& w, const float* bias, float* out,
                     ThreadPool* pool) {
  const Rows16Weights packed(w);
  thread_local std::vector<float> xsum;  // reused: decode calls this hundreds of times per token
  xsum.resize(packed.q8 ? 0 : n * packed.groups);
  for (size_t t = 0; t < n && !packed.q8; ++t) {
    HWY_DYNAMIC_DISPATCH(ComputeGroupSums)
    (x + t * w.cols, w.cols, packed.group, xsum.data() + t * packed.groups);
  }
  const float* sums = xsum.data();
  const auto rows = [&](size_t r0, size_t r1) {
    HWY_DYNAMIC_DISPATCH(Rows16RowsF32)(packed, x, sums, n, bias, r0, r1, out);
  };
  if (n <= kBatchTokens) {  // one stream per thread, ending together (ParallelRanges)
    ParallelRangesOrInline(
        pool, w.rows / kRows16Block, DecodePiece(w, kRows16Block),
        [&](size_t b0, size_t b1, size_t) { rows(b0 * kRows16Block, b1 * kRows16Block); });
    return;
  }
  const size_t tasks = std::min(NumThreads(pool), w.rows / kRows16Block);
  ParallelOrInline(pool, tasks, [&](size_t task, size_t) {
    size_t r0, r1;
    SplitRange(w.rows, kRows16Block, tasks, task, &r0, &r1);
    if (r0 < r1) rows(r0, r1);
  });
}

}  // namespace

void Linear(const float* x, size_t n, const WeightView& w, const float* bias, float* out,
            ThreadPool* pool, QuantMath math) {
  if (out == nullptr || n == 0 || w.rows == 0) return;
  if (x == nullptr || !ValidWeight(w)) {  // the planner rejects these; stay defined
    std::memset(out, 0, n * w.rows * sizeof(float));
    return;
  }
  if (math == QuantMath::kInt8 && LinearInt8(x, n, w, bias, out, pool)) return;
  if (w.layout == TensorLayout::kRows16) return LinearRows16F32(x, n, w, bias, out, pool);
  const size_t tasks = std::min(NumThreads(pool), (w.rows + kRowAlign - 1) / kRowAlign);
  if (n <= kBatchTokens) {
    // Decode's kernel token by token over each piece of rows (in cache
    // after the first token), so each token rounds as it would alone.
    // Reused across calls: decode runs Linear hundreds of times per token.
    thread_local std::vector<float> xsum;
    const size_t groups = w.dtype == DType::kQ4 ? w.cols / w.group : 0;
    xsum.resize(n * groups);
    for (size_t t = 0; t < n && groups != 0; ++t) {
      HWY_DYNAMIC_DISPATCH(ComputeGroupSums)
      (x + t * w.cols, w.cols, w.group, xsum.data() + t * groups);
    }
    const float* sums = xsum.data();
    const size_t blocks = (w.rows + kRowAlign - 1) / kRowAlign;
    ParallelRangesOrInline(pool, blocks, DecodePiece(w, kRowAlign),
                           [&](size_t b0, size_t b1, size_t) {
                             for (size_t t = 0; t < n; ++t) {
                               HWY_DYNAMIC_DISPATCH(DecodeRows)
                               (x + t * w.cols, sums + t * groups, w, bias, b0 * kRowAlign,
                                std::min(w.rows, b1 * kRowAlign), out + t * w.rows);
                             }
                           });
    return;
  }
  ParallelOrInline(pool, tasks, [&](size_t task, size_t) {
    size_t r0, r1;
    SplitRange(w.rows, kRowAlign, tasks, task, &r0, &r1);
    if (r0 >= r1) return;
    hwy::AlignedFreeUniquePtr<float[]> scratch;
    if (w.dtype != DType::kF32) {
      scratch = hwy::AllocateAligned<float>(kRowAlign * w.cols);
      if (!scratch) {  // out of memory: leave a defined result rather than crash
        for (size_t t = 0; t < n; ++t) std::memset(out + t * w.rows + r0, 0, (r1 - r0) * 4);
        return;
      }
    }
    for (size_t t = 0; t < n; t += kTokenChunk) {
      const size_t chunk = std::min(kTokenChunk, n - t);
      HWY_DYNAMIC_DISPATCH(PrefillRows)
      (x + t * w.cols, chunk, w, bias, r0, r1, scratch.get(), out + t * w.rows);
    }
  });
}

void LinearGroup(const float* x, size_t n, const LinearOut* items, size_t count, ThreadPool* pool,
                 QuantMath math) {
  if (count > kMaxLinearGroup) count = kMaxLinearGroup;
  bool valid = x != nullptr && n != 0;
  for (size_t i = 0; i < count; ++i) valid = valid && items[i].out && ValidWeight(items[i].w);
  if (valid && math == QuantMath::kInt8 && LinearInt8Group(x, n, items, count, pool)) return;
  for (size_t i = 0; i < count; ++i) {
    Linear(x, n, items[i].w, items[i].bias, items[i].out, pool, math);
  }
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
