// KvAppend and Attention (ops.h). Attention spreads (token, head) pairs over
// the pool; each pair runs the one-pass kernel of kernels/cpu/attention-inl.h.

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/ops.h"
#include "backends/cpu/parallel.h"
#include "util/fp16.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/attention-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

void AttendHeadKernel(const float* q, const KvView& kv, size_t len, size_t kv_offset,
                      size_t head_dim, float scale, float* out) {
  if (kv.type == KvType::kF32) {
    AttendHead<float>(q, kv, len, kv_offset, head_dim, scale, out);
  } else {
    AttendHead<hwy::float16_t>(q, kv, len, kv_offset, head_dim, scale, out);
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pocket::cpu {

HWY_EXPORT(AttendHeadKernel);

// The conversion is a copy of n * kv_dim values per layer, far from the hot
// path, so it stays scalar: F32ToF16 rounds to nearest even on every target,
// which Highway's software DemoteTo for pre-F16C targets does not promise.
void KvAppend(const KvView& kv, size_t n_past, const float* k, const float* v, size_t n) {
  if (k == nullptr || v == nullptr || kv.k_pages == nullptr || kv.v_pages == nullptr ||
      kv.page_tokens == 0) {
    return;
  }
  for (size_t t = 0; t < n; ++t) {
    const size_t pos = n_past + t;
    const size_t page = pos / kv.page_tokens;
    const size_t slot = (pos % kv.page_tokens) * kv.row_stride;
    const float* ksrc = k + t * kv.row_stride;
    const float* vsrc = v + t * kv.row_stride;
    if (kv.type == KvType::kF32) {
      std::memcpy(static_cast<float*>(kv.k_pages[page]) + slot, ksrc, kv.row_stride * 4);
      std::memcpy(static_cast<float*>(kv.v_pages[page]) + slot, vsrc, kv.row_stride * 4);
      continue;
    }
    uint16_t* kdst = static_cast<uint16_t*>(kv.k_pages[page]) + slot;
    uint16_t* vdst = static_cast<uint16_t*>(kv.v_pages[page]) + slot;
    for (size_t i = 0; i < kv.row_stride; ++i) {
      kdst[i] = F32ToF16(ksrc[i]);
      vdst[i] = F32ToF16(vsrc[i]);
    }
  }
}

void Attention(const float* q, size_t n, size_t n_past, const KvView& kv, size_t n_heads,
               size_t n_kv_heads, size_t head_dim, float* out, ThreadPool* pool) {
  if (q == nullptr || out == nullptr || n == 0 || n_heads == 0 || n_kv_heads == 0 ||
      n_heads % n_kv_heads != 0 || kv.page_tokens == 0) {
    return;
  }
  const size_t group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const size_t pairs = n * n_heads;
  const size_t tasks = std::min(NumThreads(pool), pairs);
  ParallelOrInline(pool, tasks, [&](size_t task, size_t) {
    size_t begin, end;
    SplitRange(pairs, 1, tasks, task, &begin, &end);
    for (size_t pair = begin; pair < end; ++pair) {
      const size_t i = pair / n_heads;
      const size_t h = pair % n_heads;
      HWY_DYNAMIC_DISPATCH(AttendHeadKernel)
      (q + pair * head_dim, kv, n_past + i + 1, (h / group) * head_dim, head_dim, scale,
       out + pair * head_dim);
    }
  });
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
