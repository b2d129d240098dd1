// Linear and Embed against the scalar reference, for every dtype, target,
// decode and prefill batch size, with and without threads.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

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
const Format kFormats[] = {
    {DType::kF32, 0},          {DType::kF16, 0},          {DType::kBF16, 0},
    {DType::kQ8, 32},          {DType::kQ4, 32},          {DType::kQ4, 64},
    {DType::kQ4, 128},         {DType::kQ8, 32, kRows16}, {DType::kQ4, 32, kRows16},
    {DType::kQ4, 64, kRows16}, {DType::kQ4, 128, kRows16}};

// Row counts: odd ones (tails of the row tiles), multiples of the 16-row
// block for rows16.
std::vector<size_t> RowsFor(const Format& f) {
  if (f.layout == kRows16) return {16, 48};
  return {1, 5, 13};
}

// Column counts to test: odd ones for plain dtypes (tails of every vector
// width), multiples of the group for quantized ones.
std::vector<size_t> ColsFor(const Format& f) {
  if (f.dtype == DType::kQ4 || f.dtype == DType::kQ8) {
    return {f.group, 3 * f.group, 896 / f.group * f.group};
  }
  return {1, 7, 33, 100, 257};
}

// Error bound of an f32 dot product summed in any order: relative 1e-5 *
// sqrt(cols) of the magnitude. The magnitude includes |row max| per term
// because q4 kernels compute s*sum(q x) + m*sum(x), whose terms can cancel.
std::vector<float> Tolerances(const float* x, size_t n, const WeightView& w) {
  std::vector<float> tol(n * w.rows);
  std::vector<float> row(w.cols);
  for (size_t r = 0; r < w.rows; ++r) {
    reference::DequantizeRow(w, r, row.data());
    float row_max = 0.0f;
    for (float v : row) row_max = std::max(row_max, std::fabs(v));
    for (size_t t = 0; t < n; ++t) {
      double mag = 0.0;
      for (size_t j = 0; j < w.cols; ++j) {
        mag += (std::fabs(row[j]) + row_max) * std::fabs(x[t * w.cols + j]);
      }
      tol[t * w.rows + r] = static_cast<float>(1e-5 * std::sqrt(w.cols) * mag + 1e-6);
    }
  }
  return tol;
}

void CheckLinear(const Format& f, size_t rows, size_t cols, size_t n, bool with_bias,
                 ThreadPool* pool, std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message()
               << DTypeName(f.dtype) << " g" << f.group << " " << LayoutName(f.layout)
               << " rows=" << rows << " cols=" << cols << " n=" << n << " bias=" << with_bias
               << " threads=" << (pool ? pool->NumThreads() : 0));
  const testing::TestWeight w = RandomWeight(rows, cols, f.dtype, f.group, rng, f.layout);
  const std::vector<float> x = RandomFloats(n * cols, rng);
  const std::vector<float> bias = RandomFloats(rows, rng);
  const float* b = with_bias ? bias.data() : nullptr;
  std::vector<float> expected(n * rows);
  reference::Linear(x.data(), n, w.view, b, expected.data());
  const std::vector<float> tol = Tolerances(x.data(), n, w.view);
  ForEachTarget([&] {
    std::vector<float> out(n * rows, NAN);
    Linear(x.data(), n, w.view, b, out.data(), pool);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], expected[i], tol[i]) << "at token " << i / rows << " row " << i % rows;
    }
  });
}

TEST(LinearTest, MatchesReferenceForEveryDtypeAndBatch) {
  std::mt19937 rng(1);
  for (const Format& f : kFormats) {
    for (size_t cols : ColsFor(f)) {
      for (size_t rows : RowsFor(f)) {
        for (size_t n : {1, 2, 5, 67}) CheckLinear(f, rows, cols, n, n % 2 == 1, nullptr, rng);
      }
    }
  }
}

TEST(LinearTest, ThreadedMatchesReference) {
  std::mt19937 rng(2);
  for (size_t threads : {1, 2, 3, 4}) {
    ThreadPool pool(ThreadPoolOptions{threads, false});
    for (const Format& f : kFormats) {
      const size_t cols = f.group ? 2 * f.group : 45;
      for (size_t rows :
           f.layout == kRows16 ? std::vector<size_t>{32, 80} : std::vector<size_t>{3, 37}) {
        for (size_t n : {1, 7}) CheckLinear(f, rows, cols, n, true, &pool, rng);
      }
    }
  }
}

// Decode splits a weight's rows into pieces that threads hand over to each
// other (ThreadPool::ParallelRanges); each row is still computed once by the
// same kernel, so every dtype and layout gives the same bits on 2-4 threads
// as on one, under both maths, for weights of several pieces.
TEST(LinearTest, DecodeAcrossThreadsEqualsOneThread) {
  std::mt19937 rng(4);
  const size_t cols = 512;
  for (const Format& f : kFormats) {
    const size_t rows = f.layout == kRows16 ? 1024 : 1001;
    const testing::TestWeight w = RandomWeight(rows, cols, f.dtype, f.group, rng, f.layout);
    const std::vector<float> x = RandomFloats(cols, rng);
    const std::vector<float> bias = RandomFloats(rows, rng);
    for (QuantMath math : {QuantMath::kF32, QuantMath::kInt8}) {
      std::vector<float> want(rows);
      Linear(x.data(), 1, w.view, bias.data(), want.data(), nullptr, math);
      for (size_t threads : {2, 3, 4}) {
        ThreadPool pool(ThreadPoolOptions{threads, false});
        for (int round = 0; round < 5; ++round) {
          std::vector<float> got(rows, NAN);
          Linear(x.data(), 1, w.view, bias.data(), got.data(), &pool, math);
          ASSERT_EQ(got, want) << DTypeName(f.dtype) << " " << LayoutName(f.layout)
                               << " threads=" << threads << " int8=" << (math == QuantMath::kInt8);
        }
      }
    }
  }
}

TEST(LinearTest, InvalidWeightGivesZeros) {
  std::mt19937 rng(3);
  testing::TestWeight w = RandomWeight(4, 64, DType::kQ4, 64, rng);
  w.view.group = 48;  // not a q4 group size
  const std::vector<float> x = RandomFloats(64, rng);
  std::vector<float> out(4, NAN);
  Linear(x.data(), 1, w.view, nullptr, out.data(), nullptr);
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

TEST(EmbedTest, MatchesReferenceForEveryDtype) {
  std::mt19937 rng(4);
  for (const Format& f : kFormats) {
    for (size_t cols : ColsFor(f)) {
      SCOPED_TRACE(::testing::Message() << DTypeName(f.dtype) << " g" << f.group << " "
                                        << LayoutName(f.layout) << " cols=" << cols);
      const size_t rows = f.layout == kRows16 ? 32 : 11;
      const testing::TestWeight table = RandomWeight(rows, cols, f.dtype, f.group, rng, f.layout);
      const std::vector<int32_t> ids = {0, 10, 3, 3, 7};
      std::vector<float> expected(ids.size() * cols);
      reference::Embed(table.view, ids.data(), ids.size(), expected.data());
      ForEachTarget([&] {
        std::vector<float> out(ids.size() * cols, NAN);
        Embed(table.view, ids.data(), ids.size(), out.data());
        for (size_t i = 0; i < out.size(); ++i) {
          ASSERT_NEAR(out[i], expected[i], 1e-6f * (1.0f + std::fabs(expected[i]))) << i;
        }
      });
    }
  }
}

TEST(EmbedTest, OutOfRangeIdGivesZeros) {
  std::mt19937 rng(5);
  const testing::TestWeight table = RandomWeight(4, 64, DType::kQ4, 32, rng);
  const int32_t ids[] = {-1, 4, 1};
  std::vector<float> out(3 * 64, NAN);
  Embed(table.view, ids, 3, out.data());
  for (size_t j = 0; j < 128; ++j) EXPECT_EQ(out[j], 0.0f);
  std::vector<float> row(64);
  reference::DequantizeRow(table.view, 1, row.data());
  for (size_t j = 0; j < 64; ++j) EXPECT_NEAR(out[128 + j], row[j], 1e-6f);
}

}  // namespace
}  // namespace pocket::cpu
