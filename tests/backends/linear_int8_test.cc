// The int8-activation Linear (QuantMath::kInt8) against its scalar reference
// and against the f32 reference within the documented error bound, on every
// target, for decode and prefill batches, with and without threads.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_target.h"
#include "backends/cpu/linear_int8.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/thread_pool.h"
#include "backends/reference/ops.h"
#include "ops_test_util.h"

namespace pocket::cpu {
namespace {

using testing::ForEachTarget;
using testing::RandomFloats;
using testing::RandomWeight;

struct Format {
  DType dtype;
  uint32_t group;
  TensorLayout layout = TensorLayout::kRowMajor;
};
constexpr TensorLayout kRows16 = TensorLayout::kRows16;
const Format kFormats[] = {{DType::kQ8, 32},          {DType::kQ4, 32},
                           {DType::kQ4, 64},          {DType::kQ4, 128},
                           {DType::kQ8, 32, kRows16}, {DType::kQ4, 32, kRows16},
                           {DType::kQ4, 64, kRows16}, {DType::kQ4, 128, kRows16}};

// Row counts with tails of the 4-row tiles, or whole 16-row blocks (rows16):
// one block, and an odd number of them (the decode kernel pairs lane blocks).
std::vector<size_t> RowsFor(const Format& f, bool threaded) {
  if (f.layout == kRows16)
    return threaded ? std::vector<size_t>{32, 80} : std::vector<size_t>{16, 48};
  return threaded ? std::vector<size_t>{3, 37} : std::vector<size_t>{1, 6, 13};
}

// Every SIMD target must have an int8 kernel; scalar/emu128 fall back to f32.
bool TargetHasInt8() {
  const std::string name = KernelTargetName();
  return name != "SCALAR" && name != "EMU128";
}

// f32 summation bound as in linear_test.cc: 1e-5 sqrt(cols) sum (|w| + max|w|) |x|.
float RoundingTolerance(const std::vector<float>& row, const float* x) {
  float row_max = 0.0f;
  for (float v : row) row_max = std::max(row_max, std::fabs(v));
  double mag = 0.0;
  for (size_t j = 0; j < row.size(); ++j) mag += (std::fabs(row[j]) + row_max) * std::fabs(x[j]);
  return static_cast<float>(1e-5 * std::sqrt(row.size()) * mag + 1e-6);
}

// The error int8 activations may add (docs/kernels.md): per group,
// (d_g / 2) sum_j |w_j - min_g|, since x_j = d_g q_j + e_j with |e_j| <= d_g/2
// and the min term uses the exact sum of x.
float QuantizationBound(const std::vector<float>& row, const float* x, size_t group) {
  double bound = 0.0;
  for (size_t g = 0; g < row.size() / group; ++g) {
    float amax = 0.0f, lo = row[g * group];
    for (size_t j = 0; j < group; ++j) {
      amax = std::max(amax, std::fabs(x[g * group + j]));
      lo = std::min(lo, row[g * group + j]);
    }
    double weight = 0.0;
    for (size_t j = 0; j < group; ++j) weight += std::fabs(row[g * group + j] - lo);
    bound += amax / 127.0 / 2.0 * weight;
  }
  return static_cast<float>(bound);
}

// Linear with int8 activations on every target against the references:
// w (rows x cols in format f) times x (n tokens), plus b where not null.
void CheckAgainstReferences(const Format& f, const testing::TestWeight& w,
                            const std::vector<float>& x, size_t n, const float* b,
                            ThreadPool* pool) {
  const size_t rows = w.view.rows, cols = w.view.cols;
  SCOPED_TRACE(::testing::Message()
               << DTypeName(f.dtype) << " g" << f.group << " " << LayoutName(f.layout)
               << " rows=" << rows << " cols=" << cols << " n=" << n
               << " threads=" << (pool ? pool->NumThreads() : 0));
  std::vector<float> want_int8(n * rows), want_f32(n * rows);
  reference::LinearInt8(x.data(), n, w.view, b, want_int8.data());
  reference::Linear(x.data(), n, w.view, b, want_f32.data());
  std::vector<float> rounding(n * rows), quant(n * rows), row(cols);
  const size_t group = f.dtype == DType::kQ8 ? kQ8Group : f.group;
  for (size_t r = 0; r < rows; ++r) {
    reference::DequantizeRow(w.view, r, row.data());
    for (size_t t = 0; t < n; ++t) {
      rounding[t * rows + r] = RoundingTolerance(row, x.data() + t * cols);
      quant[t * rows + r] = QuantizationBound(row, x.data() + t * cols, group);
    }
  }
  ForEachTarget([&] {
    std::vector<float> direct(n * rows, NAN), out(n * rows, NAN);
    ASSERT_EQ(LinearInt8(x.data(), n, w.view, b, direct.data(), pool), TargetHasInt8());
    Linear(x.data(), n, w.view, b, out.data(), pool, QuantMath::kInt8);
    for (size_t i = 0; i < out.size(); ++i) {
      if (TargetHasInt8()) {
        ASSERT_EQ(out[i], direct[i]) << i;
        ASSERT_NEAR(out[i], want_int8[i], rounding[i])
            << "token " << i / rows << " row " << i % rows;
        ASSERT_NEAR(out[i], want_f32[i], quant[i] + rounding[i]) << i;
      } else {
        ASSERT_NEAR(out[i], want_f32[i], rounding[i]) << i;
      }
    }
  });
}

void CheckLinearInt8(const Format& f, size_t rows, size_t cols, size_t n, bool with_bias,
                     ThreadPool* pool, std::mt19937& rng) {
  const testing::TestWeight w = RandomWeight(rows, cols, f.dtype, f.group, rng, f.layout);
  // Activations of mixed magnitude, as hidden states are.
  std::vector<float> x = RandomFloats(n * cols, rng);
  for (size_t i = 0; i < x.size(); i += 7) x[i] *= 8.0f;
  const std::vector<float> bias = RandomFloats(rows, rng);
  CheckAgainstReferences(f, w, x, n, with_bias ? bias.data() : nullptr, pool);
}

TEST(LinearInt8Test, MatchesReferenceForEveryFormatAndBatch) {
  std::mt19937 rng(11);
  for (const Format& f : kFormats) {
    for (size_t cols : {size_t{f.group}, size_t{3 * f.group}, size_t{2560}}) {
      for (size_t rows : RowsFor(f, false)) {
        for (size_t n : {1, 2, 5, 67}) CheckLinearInt8(f, rows, cols, n, n % 2 == 1, nullptr, rng);
      }
    }
  }
}

// The largest integer sums a q4 group can make: every code 15 but one per
// group (0, the group's min), every activation code +127 or -127. Kernels
// that keep partial sums narrower than int32 (int8_dot-inl.h's DotU4) must
// still give the reference's results for every group size.
TEST(LinearInt8Test, FullScaleCodesAndActivations) {
  for (const Format& f : kFormats) {
    if (f.dtype != DType::kQ4) continue;
    const size_t rows = 32, cols = 2 * f.group;
    std::vector<float> values(rows * cols, 1.0f);
    for (size_t i = 0; i < values.size(); i += f.group) values[i] = 0.0f;
    const testing::TestWeight w =
        testing::EncodedWeight(values, rows, cols, f.dtype, f.group, f.layout);
    for (float sign : {1.0f, -1.0f}) {
      for (size_t n : {1, 5}) {
        const std::vector<float> x(n * cols, sign);
        CheckAgainstReferences(f, w, x, n, nullptr, nullptr);
      }
    }
  }
}

TEST(LinearInt8Test, ThreadedMatchesReference) {
  std::mt19937 rng(12);
  for (size_t threads : {2, 3}) {
    ThreadPool pool(ThreadPoolOptions{threads, false});
    for (const Format& f : kFormats) {
      for (size_t rows : RowsFor(f, true)) {
        for (size_t n : {1, 9}) CheckLinearInt8(f, rows, 4 * f.group, n, true, &pool, rng);
      }
    }
  }
}

// The matrix extension's prefill kernels (Arm's I8MM, x86's AMX) apply each
// group's scales as the dot-product kernels of the same target do, so a
// prompt's outputs are the same bits with or without them: token tiles
// full and partial (AMX takes 16 tokens a tile), one chunk and two (64
// tokens a chunk), threads or not. It needs the unit: CI runs it on AMX
// (x86 hosts that have it) and I8MM (qemu's "max" CPU); elsewhere it skips.
TEST(LinearInt8Test, MatrixExtensionGivesTheSameBits) {
  if (!MatrixExtensionAvailable()) {
    GTEST_SKIP() << "this CPU has no "
                 << (MatrixExtensionName() ? MatrixExtensionName() : "matrix unit");
  }
  ASSERT_TRUE(MatrixExtensionChosen()) << KernelTargetName();
  std::mt19937 rng(14);
  ThreadPool pool(ThreadPoolOptions{2, false});
  for (const Format& f : kFormats) {
    if (f.layout != kRows16) continue;
    for (size_t n : {2, 16, 17, 67}) {
      const size_t rows = 48, cols = 2560 / f.group * f.group;
      SCOPED_TRACE(::testing::Message() << DTypeName(f.dtype) << " g" << f.group << " n=" << n);
      const testing::TestWeight w = RandomWeight(rows, cols, f.dtype, f.group, rng, f.layout);
      std::vector<float> x = RandomFloats(n * cols, rng);
      for (size_t i = 0; i < x.size(); i += 7) x[i] *= 8.0f;
      const std::vector<float> bias = RandomFloats(rows, rng);
      for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> with(n * rows, NAN), without(n * rows, NAN);
        ASSERT_TRUE(LinearInt8(x.data(), n, w.view, bias.data(), with.data(), threads));
        AllowMatrixExtension(false);
        ASSERT_TRUE(LinearInt8(x.data(), n, w.view, bias.data(), without.data(), threads));
        AllowMatrixExtension(true);
        ASSERT_EQ(0, std::memcmp(with.data(), without.data(), with.size() * sizeof(float)));
      }
    }
  }
}

TEST(LinearInt8Test, PlainDtypesIgnoreInt8) {
  std::mt19937 rng(13);
  const testing::TestWeight w = RandomWeight(5, 64, DType::kF16, 0, rng);
  const std::vector<float> x = RandomFloats(64, rng);
  std::vector<float> f32(5), int8(5);
  Linear(x.data(), 1, w.view, nullptr, f32.data(), nullptr, QuantMath::kF32);
  EXPECT_FALSE(LinearInt8(x.data(), 1, w.view, nullptr, int8.data(), nullptr));
  Linear(x.data(), 1, w.view, nullptr, int8.data(), nullptr, QuantMath::kInt8);
  EXPECT_EQ(f32, int8);
}

TEST(QuantizeActivationsTest, MatchesReferenceExactly) {
  std::mt19937 rng(14);
  for (size_t block : {32, 64, 128}) {
    SCOPED_TRACE(block);
    const size_t cols = 4 * block;
    std::vector<float> x = RandomFloats(cols, rng, -3.0f, 3.0f);
    std::fill(x.begin() + block, x.begin() + 2 * block, 0.0f);  // an all-zero block
    std::vector<int8_t> want_q(cols), q(cols);
    std::vector<float> want_d(4), want_s(4), d(4), s(4);
    reference::QuantizeActivations(x.data(), cols, block, want_q.data(), want_d.data(),
                                   want_s.data());
    ForEachTarget([&] {
      QuantizeActivations(x.data(), cols, block, q.data(), d.data(), s.data());
      EXPECT_EQ(q, want_q);
      EXPECT_EQ(d, want_d);
      for (size_t b = 0; b < 4; ++b) EXPECT_NEAR(s[b], want_s[b], 1e-5f * block);
    });
  }
}

}  // namespace
}  // namespace pocket::cpu

namespace pocket::cpu {
namespace {

// LinearGroup gives each weight exactly what its own Linear gives (same
// kernels and the same quantized activations), for mixed layouts and sizes,
// with and without threads, under both maths.
TEST(LinearGroupTest, EqualsSeparateLinears) {
  std::mt19937 rng(15);
  const size_t cols = 192;
  const testing::TestWeight q = RandomWeight(48, cols, DType::kQ4, 64, rng, kRows16);
  const testing::TestWeight k = RandomWeight(16, cols, DType::kQ4, 64, rng, kRows16);
  const testing::TestWeight v = RandomWeight(13, cols, DType::kQ4, 64, rng);
  const std::vector<float> bias = RandomFloats(48, rng);
  ThreadPool pool(ThreadPoolOptions{3, false});
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    for (QuantMath math : {QuantMath::kInt8, QuantMath::kF32}) {
      for (size_t n : {1, 6}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " int8=" << (math == QuantMath::kInt8));
        const std::vector<float> x = RandomFloats(n * cols, rng);
        std::vector<float> want_q(n * 48), want_k(n * 16), want_v(n * 13);
        Linear(x.data(), n, q.view, bias.data(), want_q.data(), p, math);
        Linear(x.data(), n, k.view, nullptr, want_k.data(), p, math);
        Linear(x.data(), n, v.view, nullptr, want_v.data(), p, math);
        std::vector<float> got_q(n * 48, NAN), got_k(n * 16, NAN), got_v(n * 13, NAN);
        const LinearOut items[] = {{q.view, bias.data(), got_q.data()},
                                   {k.view, nullptr, got_k.data()},
                                   {v.view, nullptr, got_v.data()}};
        LinearGroup(x.data(), n, items, 3, p, math);
        EXPECT_EQ(got_q, want_q);
        EXPECT_EQ(got_k, want_k);
        EXPECT_EQ(got_v, want_v);
      }
    }
  }
}

// Decode splits a group's rows, every weight's blocks one after another, in
// pieces that threads hand over to each other (ThreadPool::ParallelRanges);
// every row is still computed once, by its own weight's kernel: the same
// bits as each Linear alone on one thread, for pieces that span weights and
// layouts, on 2 to 4 threads.
TEST(LinearGroupTest, DecodeAcrossThreadsEqualsSeparateLinears) {
  std::mt19937 rng(17);
  const size_t cols = 64;  // q8's 1 KB blocks: a piece is 32 blocks
  const testing::TestWeight a = RandomWeight(2000, cols, DType::kQ4, 32, rng, kRows16);
  const testing::TestWeight b = RandomWeight(1003, cols, DType::kQ4, 32, rng);
  const testing::TestWeight c = RandomWeight(336, cols, DType::kQ8, 32, rng, kRows16);
  const std::vector<float> x = RandomFloats(cols, rng);
  std::vector<float> want_a(2000), want_b(1003), want_c(336);
  Linear(x.data(), 1, a.view, nullptr, want_a.data(), nullptr, QuantMath::kInt8);
  Linear(x.data(), 1, b.view, nullptr, want_b.data(), nullptr, QuantMath::kInt8);
  Linear(x.data(), 1, c.view, nullptr, want_c.data(), nullptr, QuantMath::kInt8);
  for (size_t threads : {2, 3, 4}) {
    ThreadPool pool(ThreadPoolOptions{threads, false});
    for (int round = 0; round < 20; ++round) {
      std::vector<float> got_a(2000, NAN), got_b(1003, NAN), got_c(336, NAN);
      const LinearOut items[] = {{a.view, nullptr, got_a.data()},
                                 {b.view, nullptr, got_b.data()},
                                 {c.view, nullptr, got_c.data()}};
      LinearGroup(x.data(), 1, items, 3, &pool, QuantMath::kInt8);
      ASSERT_EQ(got_a, want_a) << threads << " threads";
      ASSERT_EQ(got_b, want_b) << threads << " threads";
      ASSERT_EQ(got_c, want_c) << threads << " threads";
    }
  }
}

// Decode's read-ahead hints (kernel_target.h: DecodeReadAhead) change no
// result, whatever the distance, including hints past the weight's end
// (a prefetch never faults; an ordinary load there would fail under ASan).
TEST(LinearInt8Test, DecodeReadAheadGivesTheSameBits) {
  std::mt19937 rng(18);
  const size_t saved = DecodeReadAhead();
  for (const Format& f : kFormats) {
    if (f.layout != kRows16) continue;
    const size_t rows = 64, cols = 4 * f.group;
    const testing::TestWeight w = RandomWeight(rows, cols, f.dtype, f.group, rng, f.layout);
    const std::vector<float> x = RandomFloats(cols, rng);
    ForEachTarget([&] {
      SetDecodeReadAhead(0);
      std::vector<float> want(rows, NAN);
      Linear(x.data(), 1, w.view, nullptr, want.data(), nullptr, QuantMath::kInt8);
      for (size_t ahead : {size_t{64}, size_t{3072}, size_t{1} << 20}) {
        SetDecodeReadAhead(ahead);
        std::vector<float> got(rows, NAN);
        Linear(x.data(), 1, w.view, nullptr, got.data(), nullptr, QuantMath::kInt8);
        ASSERT_EQ(got, want) << "read ahead " << ahead;
      }
    });
  }
  SetDecodeReadAhead(saved);
}

// Up to kBatchTokens tokens in one call (speculation's verify step) give
// each token the bits decode gives it alone, with int8 or f32 maths, on
// every target, layout and thread count, so a verified guess sees the
// logits a single step would; the prompt kernels past kBatchTokens need not.
TEST(LinearInt8Test, BatchTokensGiveEachTokenDecodesBits) {
  std::mt19937 rng(19);
  ThreadPool pool(ThreadPoolOptions{2, false});
  for (const Format& f : kFormats) {
    const size_t rows = f.layout == kRows16 ? 48 : 13, cols = 3 * f.group;
    const testing::TestWeight w = RandomWeight(rows, cols, f.dtype, f.group, rng, f.layout);
    std::vector<float> x = RandomFloats(kBatchTokens * cols, rng);
    for (size_t i = 0; i < x.size(); i += 7) x[i] *= 8.0f;
    const std::vector<float> bias = RandomFloats(rows, rng);
    ForEachTarget([&] {
      for (QuantMath math : {QuantMath::kInt8, QuantMath::kF32}) {
        for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
          std::vector<float> single(kBatchTokens * rows, NAN);
          for (size_t t = 0; t < kBatchTokens; ++t) {
            Linear(x.data() + t * cols, 1, w.view, bias.data(), single.data() + t * rows, threads,
                   math);
          }
          for (size_t n = 2; n <= kBatchTokens; ++n) {
            std::vector<float> batch(n * rows, NAN);
            Linear(x.data(), n, w.view, bias.data(), batch.data(), threads, math);
            ASSERT_EQ(0, std::memcmp(batch.data(), single.data(), n * rows * sizeof(float)))
                << DTypeName(f.dtype) << " g" << f.group << " " << LayoutName(f.layout)
                << " n=" << n << (math == QuantMath::kInt8 ? " int8" : " f32")
                << (threads ? " 2 threads" : "");
          }
        }
      }
    });
  }
}

TEST(LinearGroupTest, MixedColumnsFallBackToSeparateLinears) {
  std::mt19937 rng(16);
  const testing::TestWeight a = RandomWeight(16, 128, DType::kQ4, 64, rng, kRows16);
  const testing::TestWeight b = RandomWeight(16, 64, DType::kQ8, 32, rng);
  const std::vector<float> x = RandomFloats(128, rng);
  const LinearOut items[] = {{a.view, nullptr, nullptr}, {b.view, nullptr, nullptr}};
  EXPECT_FALSE(LinearInt8Group(x.data(), 1, items, 2, nullptr));
}

}  // namespace
}  // namespace pocket::cpu
