// Causal attention of one query head over the cached positions [0, len) of
// its kv head, with a single pass over K and V (online softmax): positions
// are scored in blocks of kScoreBlock; each block rescales the running sum
// and output by exp(old_max - new_max) and adds its exp(score - new_max)
// weighted V rows. Scores, exponentials (Highway's vector Exp) and the output
// accumulator are all f32; K/V are read as stored and widened (f16), or as
// q8 codes whose row scale multiplies the score or the softmax weight once
// per row instead of every value.

#if defined(POCKET_KERNELS_CPU_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_ATTENTION_INL_H_
#undef POCKET_KERNELS_CPU_ATTENTION_INL_H_
#else
#define POCKET_KERNELS_CPU_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "backends/cpu/ops.h"
#include "kernels/cpu/load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kScoreBlock = 64;

// out[count] = exp(s[count] - max) in place; returns their sum.
HWY_INLINE float ExpShifted(float* HWY_RESTRICT s, size_t count, float max) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vmax = hn::Set(d, max);
  auto sum = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= count; i += N) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, s + i), vmax));
    hn::StoreU(e, d, s + i);
    sum = hn::Add(sum, e);
  }
  float total = hn::GetLane(hn::SumOfLanes(d, sum));
  for (; i < count; ++i) {
    s[i] = std::exp(s[i] - max);
    total += s[i];
  }
  return total;
}

// acc[count] *= scale.
HWY_INLINE void ScaleRow(float* HWY_RESTRICT acc, float scale, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, scale);
  size_t i = 0;
  for (; i + N <= count; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, acc + i), vs), d, acc + i);
  for (; i < count; ++i) acc[i] *= scale;
}

// acc[count] += weight * v[count] (v widened from T).
template <typename T>
HWY_INLINE void AddScaledRow(float* HWY_RESTRICT acc, float weight, const T* HWY_RESTRICT v,
                             size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vw = hn::Set(d, weight);
  size_t i = 0;
  for (; i + N <= count; i += N) {
    hn::StoreU(hn::MulAdd(vw, LoadF32(d, v + i), hn::LoadU(d, acc + i)), d, acc + i);
  }
  for (; i < count; ++i) acc[i] += weight * ScalarF32(v + i);
}

// x[n] = H x in place, H the orthonormal Walsh-Hadamard matrix of order n (a
// power of two; H is its own inverse), by the fast butterfly transform.
// Plain inline, not HWY_INLINE: attention.cc also calls it through
// HWY_STATIC_DISPATCH from code without the target's attributes, and GCC
// refuses to force-inline across them (aarch64: "target specific option
// mismatch").
inline void Hadamard(float* HWY_RESTRICT x, size_t n) {
  for (size_t len = 1; len < n; len *= 2) {
    for (size_t i = 0; i < n; i += 2 * len) {
      for (size_t j = i; j < i + len; ++j) {
        const float a = x[j], b = x[j + len];
        x[j] = a + b;
        x[j + len] = a - b;
      }
    }
  }
  const float norm = 1.0f / std::sqrt(static_cast<float>(n));
  for (size_t i = 0; i < n; ++i) x[i] *= norm;
}

// q8 codes widened to f32 lanes.
template <class D>
HWY_INLINE hn::Vec<D> LoadI8(D d, const int8_t* HWY_RESTRICT p) {
  const hn::RebindToSigned<D> di;
  return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(hn::Rebind<int8_t, D>(), p)));
}

// Sum of x[0, count) * codes[0, count) (the q8 row's scale is applied by the
// caller, once per row).
HWY_INLINE float Dot(const float* HWY_RESTRICT x, const int8_t* HWY_RESTRICT codes, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto acc = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= count; i += N) acc = hn::MulAdd(hn::LoadU(d, x + i), LoadI8(d, codes + i), acc);
  float sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < count; ++i) sum += x[i] * static_cast<float>(codes[i]);
  return sum;
}

// acc[count] += weight * codes[count].
HWY_INLINE void AddScaledRow(float* HWY_RESTRICT acc, float weight,
                             const int8_t* HWY_RESTRICT codes, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vw = hn::Set(d, weight);
  size_t i = 0;
  for (; i + N <= count; i += N) {
    hn::StoreU(hn::MulAdd(vw, LoadI8(d, codes + i), hn::LoadU(d, acc + i)), d, acc + i);
  }
  for (; i < count; ++i) acc[i] += weight * static_cast<float>(codes[i]);
}

// Address of kv head `kv_offset / head_dim` of cache position t.
template <typename T>
HWY_INLINE const T* KvHeadRow(const KvView& kv, void* const* pages, size_t t, size_t kv_offset) {
  return static_cast<const T*>(pages[t / kv.page_tokens]) + (t % kv.page_tokens) * kv.row_stride +
         kv_offset;
}

// The factor that turns the stored values of that head row into f32: its
// f16 scale for q8 codes (ops.h gives the page layout), 1 otherwise.
template <typename T>
HWY_INLINE float KvHeadScale(const KvView& kv, void* const* pages, size_t t, size_t kv_offset) {
  if constexpr (std::is_same_v<T, int8_t>) {
    const uint8_t* page = static_cast<const uint8_t*>(pages[t / kv.page_tokens]);
    const size_t heads = kv.row_stride / kv.head_dim;
    return HalfAt(page + kv.page_tokens * kv.row_stride +
                  ((t % kv.page_tokens) * heads + kv_offset / kv.head_dim) * 2);
  } else {
    return 1.0f;
  }
}

// out[head_dim] = softmax(q . K[0, len) * scale) V[0, len) for one head.
template <typename T>
HWY_INLINE void AttendHead(const float* HWY_RESTRICT q, const KvView& kv, size_t len,
                           size_t kv_offset, size_t head_dim, float scale,
                           float* HWY_RESTRICT out) {
  float scores[kScoreBlock];
  float running_max = -INFINITY;
  float running_sum = 0.0f;
  std::fill(out, out + head_dim, 0.0f);
  for (size_t p0 = 0; p0 < len; p0 += kScoreBlock) {
    const size_t count = std::min(kScoreBlock, len - p0);
    float block_max = -INFINITY;
    for (size_t p = 0; p < count; ++p) {
      const size_t t = p0 + p;
      scores[p] = Dot(q, KvHeadRow<T>(kv, kv.k_pages, t, kv_offset), head_dim) *
                  (KvHeadScale<T>(kv, kv.k_pages, t, kv_offset) * scale);
      block_max = std::max(block_max, scores[p]);
    }
    const float new_max = std::max(running_max, block_max);
    // exp(-inf) = 0 on the first block: nothing accumulated yet to rescale.
    const float correction = std::exp(running_max - new_max);
    running_sum = running_sum * correction + ExpShifted(scores, count, new_max);
    if (correction != 1.0f) ScaleRow(out, correction, head_dim);
    for (size_t p = 0; p < count; ++p) {
      const size_t t = p0 + p;
      AddScaledRow(out, scores[p] * KvHeadScale<T>(kv, kv.v_pages, t, kv_offset),
                   KvHeadRow<T>(kv, kv.v_pages, t, kv_offset), head_dim);
    }
    running_max = new_max;
  }
  const float inv = 1.0f / running_sum;
  for (size_t j = 0; j < head_dim; ++j) out[j] *= inv;
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_ATTENTION_INL_H_
