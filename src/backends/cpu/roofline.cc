// MeasureReadBandwidth and MeasureInt8Peak (roofline.h).

#include "backends/cpu/roofline.h"

#include "quant/rows16.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cpu/parallel.h"
#include "util/fp16.h"
#include "util/huge_page_buffer.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/backends/cpu/roofline.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// XOR of every 64-bit word of p[0, bytes): each byte is loaded once, with
// four independent chains so the loop is bound by the loads alone. bytes is
// a multiple of 4 vectors and p is vector-aligned.
uint64_t XorWords(const uint8_t* p, size_t bytes) {
  const hn::ScalableTag<uint64_t> d;
  const size_t N = hn::Lanes(d);
  const uint64_t* words = reinterpret_cast<const uint64_t*>(p);
  auto a = hn::Zero(d), b = hn::Zero(d), c = hn::Zero(d), e = hn::Zero(d);
  for (size_t i = 0; i < bytes / 8; i += 4 * N) {
    a = hn::Xor(a, hn::Load(d, words + i));
    b = hn::Xor(b, hn::Load(d, words + i + N));
    c = hn::Xor(c, hn::Load(d, words + i + 2 * N));
    e = hn::Xor(e, hn::Load(d, words + i + 3 * N));
  }
  return hn::GetLane(hn::Xor(hn::Xor(a, b), hn::Xor(c, e)));
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace pocket::cpu {

HWY_EXPORT(XorWords);

namespace {

// Slices handed to threads are multiples of this (4 vectors of the widest
// target), so XorWords never needs a tail.
constexpr size_t kSliceAlign = 256;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

double MeasureReadBandwidth(ThreadPool* pool, size_t bytes, int passes) {
  bytes = bytes / kSliceAlign * kSliceAlign;
  if (bytes == 0) return 0.0;
  // In huge pages where the OS has them: the ceiling is the machine's best
  // streaming read, whatever pages the weights being compared sit in.
  auto buffer = HugePageBuffer::Allocate(bytes);
  if (!buffer.ok()) return 0.0;
  uint8_t* data = (*buffer)->data();
  std::memset(data, 1, bytes);  // fault every page in before timing
  const size_t tasks = NumThreads(pool);
  std::vector<uint64_t> sinks(tasks);
  double best = 0.0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    ParallelOrInline(pool, tasks, [&](size_t task, size_t) {
      size_t b0, b1;
      SplitRange(bytes, kSliceAlign, tasks, task, &b0, &b1);
      sinks[task] ^= HWY_DYNAMIC_DISPATCH(XorWords)(data + b0, b1 - b0);
    });
    best = std::max(best, static_cast<double>(bytes) / Seconds(start));
  }
  // The XOR results must be observable, or the reads could be dropped.
  volatile uint64_t keep = 0;
  for (uint64_t s : sinks) keep = keep ^ s;
  (void)keep;
  return best;
}

double MeasureInt8Peak(ThreadPool* pool, size_t tokens, int passes) {
  constexpr size_t kRows = 512, kCols = 896, kGroup = 64;
  constexpr size_t kGroups = kRows * kCols / kGroup;
  std::mt19937 rng(3);
  std::vector<uint8_t> weight(kRows * kCols / 2 + 4 * kGroups);
  for (size_t i = 0; i < kRows * kCols / 2; ++i) weight[i] = static_cast<uint8_t>(rng());
  for (size_t g = 0; g < 2 * kGroups; ++g) {
    const uint16_t half = F32ToF16(g < kGroups ? 0.01f : -0.08f);  // scales, then mins
    std::memcpy(weight.data() + kRows * kCols / 2 + 2 * g, &half, 2);
  }
  // The layout the converter writes, so the peak is that of the kernels a
  // model runs.
  weight = PackQ4Rows16(weight.data(), kRows, kCols, kGroup);
  const WeightView w{weight.data(), DType::kQ4, kGroup, kRows, kCols, TensorLayout::kRows16};
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(tokens * kCols), out(tokens * kRows);
  for (float& v : x) v = dist(rng);
  // About 20 ms of work per pass at 30 GMAC/s.
  const size_t iters = std::max<size_t>(1, 600'000'000 / (tokens * kRows * kCols));
  constexpr QuantMath kInt8 = QuantMath::kInt8;
  Linear(x.data(), tokens, w, nullptr, out.data(), pool, kInt8);  // warm caches and scratch
  double best = 0.0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < iters; ++i)
      Linear(x.data(), tokens, w, nullptr, out.data(), pool, kInt8);
    best = std::max(best, static_cast<double>(iters * tokens * kRows * kCols) / Seconds(start));
  }
  return best;
}

}  // namespace pocket::cpu
#endif  // HWY_ONCE
