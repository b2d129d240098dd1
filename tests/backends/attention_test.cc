// KvAppend, Attention and KvShift against the scalar reference: f32, f16
// and q8 caches, several pages, n_past > 0, GQA ratios 1, 2 and 7, with and
// without threads; q8 rows against the values they encode.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/highway.h>

#include "backends/cpu/kernel_target.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/thread_pool.h"
#include "backends/reference/ops.h"
#include "ops_test_util.h"
#include "util/fp16.h"

namespace pocket::cpu {
namespace {

using testing::ForEachTarget;
using testing::RandomFloats;

// A paged cache with its own storage. Slots not yet written hold all-ones
// bytes (NaN in f32, f16 and bf16), as uninitialized pages may: attention
// must never let one reach an output.
struct TestCache {
  TestCache(KvType type, size_t page_tokens, size_t row_stride, size_t capacity, size_t head_dim) {
    const size_t pages = (capacity + page_tokens - 1) / page_tokens;
    storage.assign(2 * pages, std::vector<uint8_t>(
                                  page_tokens * KvRowBytes(type, row_stride, head_dim), 0xFF));
    for (size_t p = 0; p < pages; ++p) {
      k_pages.push_back(storage[p].data());
      v_pages.push_back(storage[pages + p].data());
    }
    view.type = type;
    view.k_pages = k_pages.data();
    view.v_pages = v_pages.data();
    view.page_tokens = page_tokens;
    view.row_stride = row_stride;
    view.head_dim = head_dim;
  }
  std::vector<std::vector<uint8_t>> storage;
  std::vector<void*> k_pages, v_pages;
  KvView view;
};

const char* TypeName(KvType type) { return KvTypeName(type); }

struct Case {
  KvType type;
  size_t page_tokens, n_past, n, n_heads, n_kv_heads, head_dim;
  // Nonzero: every query points along one direction and each position's
  // keys move `rise` further along it, so scaled scores climb by
  // rise * sqrt(head_dim) per position, far past exp's f32 range over a
  // long cache (the running max must keep up).
  float rise = 0.0f;
};

void CheckAttention(const Case& c, ThreadPool* pool, std::mt19937& rng,
                    AttentionMath math = AttentionMath::kF32) {
  SCOPED_TRACE(::testing::Message()
               << "kv=" << TypeName(c.type) << " page=" << c.page_tokens << " n_past=" << c.n_past
               << " n=" << c.n << " heads=" << c.n_heads << "/" << c.n_kv_heads
               << " hd=" << c.head_dim << " threads=" << (pool ? pool->NumThreads() : 0)
               << " math=" << static_cast<int>(math));
  const size_t kv_dim = c.n_kv_heads * c.head_dim;
  const size_t total = c.n_past + c.n;
  std::vector<float> k = RandomFloats(total * kv_dim, rng, -2.0f, 2.0f);
  const std::vector<float> v = RandomFloats(total * kv_dim, rng);
  std::vector<float> q = RandomFloats(c.n * c.n_heads * c.head_dim, rng, -2.0f, 2.0f);
  if (c.rise != 0.0f) {
    const auto along = [&](size_t i) { return i % c.head_dim % 2 ? 1.0f : -1.0f; };
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = 0.05f * k[i] + c.rise * static_cast<float>(i / kv_dim) * along(i);
    }
    for (size_t i = 0; i < q.size(); ++i) q[i] = along(i) + 0.05f * q[i];
  }

  TestCache expected_cache(c.type, c.page_tokens, kv_dim, total, c.head_dim);
  reference::KvAppend(expected_cache.view, 0, k.data(), v.data(), total);
  std::vector<float> expected(q.size()), expected_bf16(q.size()), expected_int8(q.size());
  reference::Attention(q.data(), c.n, c.n_past, expected_cache.view, c.n_heads, c.n_kv_heads,
                       c.head_dim, expected.data());
  reference::Attention(q.data(), c.n, c.n_past, expected_cache.view, c.n_heads, c.n_kv_heads,
                       c.head_dim, expected_bf16.data(), AttentionMath::kBf16);
  reference::Attention(q.data(), c.n, c.n_past, expected_cache.view, c.n_heads, c.n_kv_heads,
                       c.head_dim, expected_int8.data(), AttentionMath::kInt8);

  ForEachTarget([&] {
    // The past in one call, the batch in another, as a session does.
    TestCache cache(c.type, c.page_tokens, kv_dim, total, c.head_dim);
    KvAppend(cache.view, 0, k.data(), v.data(), c.n_past, pool);
    KvAppend(cache.view, c.n_past, k.data() + c.n_past * kv_dim, v.data() + c.n_past * kv_dim, c.n,
             pool);
    ASSERT_EQ(cache.storage, expected_cache.storage);
    std::vector<float> out(q.size(), NAN);
    Attention(q.data(), c.n, c.n_past, cache.view, c.n_heads, c.n_kv_heads, c.head_dim, out.data(),
              pool, math);
    // Outputs are convex combinations of V values in [-1, 1]; scores and
    // exponentials carry f32 rounding of order 1e-6 relative. In bf16 the
    // reference rounds q, K and V as the kernel does (q8: the query, in the
    // basis the rows are stored in); the kernel's rounding of each softmax
    // weight (relative 2^-8 at most) moves an output by at most 2^-8 max|v|
    // more. A weight scales a whole row, so that holds for rotated q8 rows
    // too: H maps the weighted stored rows back to the decoded V rows.
    // In int8 the reference quantizes the query as the kernel does; the
    // kernel's softmax weights are within 1e-4 relative (Exp2Coarse) and,
    // on AVX3_DL, rounded to int16 steps of each block's largest, which
    // moves an output by at most 64 / 65534 max|v| (ops.h). A rotated
    // query (H q) is computed differently by each, and a code whose
    // argument lies within that rounding of a half step may differ by one:
    // a score by at most scale_q |k_c| <= (2 / 127) 2, an output by less
    // than 1/256 here.
    const AttentionMath used = AttentionMathFor(cache.view, c.head_dim, math);
    const std::vector<float>& want = used == AttentionMath::kBf16   ? expected_bf16
                                     : used == AttentionMath::kInt8 ? expected_int8
                                                                    : expected;
    const bool loose =
        used == AttentionMath::kBf16 || (used == AttentionMath::kInt8 && KvRotated(cache.view));
    const float weights = used == AttentionMath::kInt8 ? 2e-4f + 64.0f / 65534 : 0.0f;
    const float tolerance = (loose ? 2e-5f + 1.0f / 256 : 2e-5f) + weights;
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], tolerance) << i;
  });
}

TEST(AttentionTest, MatchesReference) {
  std::mt19937 rng(31);
  const Case cases[] = {
      {KvType::kF32, 16, 0, 1, 4, 4, 64},
      {KvType::kF16, 16, 0, 1, 4, 4, 64},
      {KvType::kF32, 7, 5, 3, 4, 2, 8},
      {KvType::kF16, 7, 40, 9, 4, 2, 20},
      {KvType::kF16, 16, 100, 1, 14, 2, 64},
      {KvType::kF32, 16, 130, 2, 14, 2, 64},
      {KvType::kF16, 32, 0, 70, 7, 1, 32},
      {KvType::kF32, 5, 13, 4, 7, 1, 17},
      {KvType::kQ8, 16, 0, 1, 4, 4, 64},
      {KvType::kQ8, 7, 40, 9, 4, 2, 20},
      {KvType::kQ8, 16, 100, 1, 14, 2, 64},
      {KvType::kQ8, 5, 13, 4, 7, 1, 17},
      {KvType::kQ8, 32, 0, 70, 7, 1, 32},
      // Rotated heads shorter than, as long as, and twice a Hadamard vector.
      {KvType::kQ8, 8, 5, 3, 4, 2, 4},
      {KvType::kQ8, 8, 9, 2, 4, 1, 8},
      {KvType::kQ8, 8, 9, 2, 2, 1, 16},
      // q8 K quads: blocks that start mid-page (slot 64 of 80), with a
      // narrower last quad (18 channels) and whole quads (the int8 products
      // where the target has them), and a head of one quad.
      {KvType::kQ8, 80, 100, 3, 4, 2, 18},
      {KvType::kQ8, 80, 150, 2, 14, 2, 48},
      {KvType::kQ8, 16, 40, 2, 4, 2, 4},
      // Not rotated, whole 64-channel runs (AVX3_DL's int16 weight pairs).
      {KvType::kQ8, 32, 90, 3, 4, 2, 192},
      // Several 64-position blocks and 16-token tasks with a long past.
      {KvType::kF16, 64, 150, 40, 14, 2, 64},
      {KvType::kF32, 16, 70, 33, 8, 2, 128},
      // Scores that climb 38 per 64-position block, 180 over the cache (the
      // max moves every block), and 5.1 per block (it moves only once it
      // lags by the slack).
      {KvType::kF32, 64, 300, 3, 4, 2, 16, 0.15f},
      {KvType::kF16, 64, 300, 3, 4, 2, 16, 0.02f},
      {KvType::kF32, 16, 200, 1, 14, 2, 64, 0.01f},
      // A prompt whose scores climb 8 per position: each row's last score
      // vector holds later positions up to 120 above its own (causally
      // masked: they must not raise its max, or its weights underflow).
      {KvType::kF16, 64, 0, 40, 4, 2, 64, 1.0f},
      // bf16 pages (pairs of K channels, pairs of V positions) read in
      // place: caches that end mid-pair (101, 17 and 303 positions),
      // pages of 16 to 64 tokens, an even head that is not a multiple of 16
      // (18: widened for the f32 products), and climbing scores.
      {KvType::kBf16, 16, 0, 1, 4, 4, 64},
      {KvType::kBf16, 16, 100, 1, 14, 2, 64},
      {KvType::kBf16, 32, 4, 70, 7, 1, 32},
      {KvType::kBf16, 16, 13, 4, 7, 1, 18},
      {KvType::kBf16, 64, 150, 40, 14, 2, 64},
      {KvType::kBf16, 48, 300, 3, 4, 2, 16, 0.02f},
      {KvType::kBf16, 64, 0, 40, 4, 2, 64, 1.0f},
      // Heads of 3 and 4 tiles' channels (AMX-BF16 takes heads of 32 to
      // 128 channels, and 16 rows at a time: 18 rows per token here).
      {KvType::kBf16, 32, 45, 20, 18, 2, 96},
      {KvType::kBf16, 64, 70, 33, 8, 2, 128},
  };
  for (const Case& c : cases) CheckAttention(c, nullptr, rng);
  for (const Case& c : cases) CheckAttention(c, nullptr, rng, AttentionMath::kBf16);
}

TEST(AttentionTest, ThreadedMatchesReference) {
  std::mt19937 rng(32);
  for (size_t threads : {1, 2, 3, 4}) {
    ThreadPool pool(ThreadPoolOptions{threads, false});
    CheckAttention({KvType::kF16, 16, 37, 5, 14, 2, 64}, &pool, rng);
    CheckAttention({KvType::kF32, 8, 3, 1, 4, 4, 16}, &pool, rng);
    CheckAttention({KvType::kQ8, 16, 37, 5, 14, 2, 64}, &pool, rng);
    CheckAttention({KvType::kF16, 64, 90, 50, 14, 2, 64}, &pool, rng);
    // Decoding with fewer kv heads than threads: each head's positions are
    // split into segments whose partial softmax states are merged.
    CheckAttention({KvType::kF16, 64, 700, 1, 14, 2, 64}, &pool, rng);
    CheckAttention({KvType::kF32, 16, 1000, 3, 8, 1, 32}, &pool, rng);
    CheckAttention({KvType::kF16, 48, 520, 2, 4, 2, 20}, &pool, rng);
    CheckAttention({KvType::kF32, 64, 600, 1, 14, 2, 16, 0.02f}, &pool, rng);
    CheckAttention({KvType::kF16, 64, 90, 50, 14, 2, 64}, &pool, rng, AttentionMath::kBf16);
    CheckAttention({KvType::kF16, 64, 700, 1, 14, 2, 64}, &pool, rng, AttentionMath::kBf16);
    CheckAttention({KvType::kF32, 16, 1000, 3, 8, 1, 32}, &pool, rng, AttentionMath::kBf16);
    CheckAttention({KvType::kQ8, 16, 37, 5, 14, 2, 64}, &pool, rng, AttentionMath::kBf16);
    // A long q8 decode in segments (head 48: not rotated, so the codes
    // stored match the reference's exactly at any length).
    CheckAttention({KvType::kQ8, 64, 701, 1, 14, 2, 48}, &pool, rng, AttentionMath::kInt8);
    CheckAttention({KvType::kBf16, 16, 37, 5, 14, 2, 64}, &pool, rng);
    CheckAttention({KvType::kBf16, 64, 701, 1, 14, 2, 64}, &pool, rng);
    CheckAttention({KvType::kBf16, 64, 701, 1, 14, 2, 64}, &pool, rng, AttentionMath::kBf16);
    CheckAttention({KvType::kBf16, 64, 90, 51, 14, 2, 64}, &pool, rng, AttentionMath::kBf16);
  }
}

TEST(AttentionTest, Q8CachesGetInt8ProductsWhereTheTargetHasAnInt8Dot) {
  // Every target but SCALAR and EMU128 has an int8 dot product
  // (kernels/cpu/int8_dot-inl.h); AttentionMathFor must not quietly fall
  // back to f32 products there, which the reference tests could not tell.
  ForEachTarget([] {
    const std::string target = KernelTargetName();
    const bool int8_dot = target != "SCALAR" && target != "EMU128";
    KvView q8;
    q8.type = KvType::kQ8;
    q8.page_tokens = 64;
    const AttentionMath fast = int8_dot ? AttentionMath::kInt8 : AttentionMath::kF32;
    EXPECT_EQ(AttentionMathFor(q8, 64, AttentionMath::kBf16), fast);
    EXPECT_EQ(AttentionMathFor(q8, 20, AttentionMath::kInt8), fast);
    EXPECT_EQ(AttentionMathFor(q8, 64, AttentionMath::kF32), AttentionMath::kF32);
    // Blocks of whole vectors of positions need pages of a multiple of 16
    // tokens; quads need a head_dim that is a multiple of 4.
    EXPECT_EQ(AttentionMathFor(q8, 18, AttentionMath::kBf16), AttentionMath::kF32);
    q8.page_tokens = 40;
    EXPECT_EQ(AttentionMathFor(q8, 64, AttentionMath::kBf16), AttentionMath::kF32);
    // Other caches never get int8 products.
    KvView f16;
    f16.type = KvType::kF16;
    f16.page_tokens = 64;
    const AttentionMath other =
        AttentionBf16Available() ? AttentionMath::kBf16 : AttentionMath::kF32;
    EXPECT_EQ(AttentionMathFor(f16, 64, AttentionMath::kInt8), other);
  });
}

TEST(AttentionTest, OtherCachesGetBf16ProductsWhereTheTargetAndTheCpuHaveThem) {
  // attention_bf16-inl.h builds them for AVX3_DL (GCC or Clang), and on Arm
  // attention_bf16_arm.cc does (POCKET_ARM_BF16_KERNELS, which CMake passes
  // here too), for every Arm target but the emulated ones. The reference
  // tests pass with f32 products too, so a detection that quietly fell back
  // to them would go unseen. Where it is unknown whether the CPU has bf16
  // dot products, only the targets that do not build them are checked.
  const std::optional<bool> cpu = testing::CpuHasFeature("avx512_bf16", "POCKET_TEST_CPU_HAS_BF16");
  ForEachTarget([&] {
    const std::string target = KernelTargetName();
#if HWY_ARCH_X86 && (HWY_COMPILER_GCC_ACTUAL || HWY_COMPILER_CLANG)
    const bool built = target == "AVX3_DL";
#elif HWY_ARCH_ARM_A64 && (POCKET_ARM_BF16_KERNELS || defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC))
    const bool built = target == "NEON" || target == "NEON_DOTPROD" || target == "SVE" ||
                       target == "SVE2" || target == "SVE_256" || target == "SVE2_128";
#else
    const bool built = false;
#endif
    const bool known = cpu.has_value() || !built;
    const AttentionMath fast = built && cpu == true ? AttentionMath::kBf16 : AttentionMath::kF32;
    for (const KvType type : {KvType::kBf16, KvType::kF16, KvType::kF32}) {
      SCOPED_TRACE(TypeName(type));
      KvView view;
      view.type = type;
      view.page_tokens = 64;
      if (known) EXPECT_EQ(AttentionMathFor(view, 64, AttentionMath::kBf16), fast);
      EXPECT_EQ(AttentionMathFor(view, 64, AttentionMath::kF32), AttentionMath::kF32);
      // Whole vectors of channels: head_dim a multiple of 16.
      EXPECT_EQ(AttentionMathFor(view, 24, AttentionMath::kBf16), AttentionMath::kF32);
    }
  });
}

TEST(AttentionTest, Bf16CachesTakeTheMatrixUnitWhereTheCpuMultipliesBf16OnIt) {
  // x86's AMX-BF16 (kernel_target_test.cc checks its detection): bf16
  // products over a bf16 cache, heads of 32 to 128 channels in 32s. The
  // reference tests pass either way, so a condition that quietly sent
  // attention back to vdpbf16ps would go unseen.
  ForEachTarget([&] {
    const bool unit = MatrixExtensionMultipliesBf16() && AttentionBf16Available();
    KvView bf16;
    bf16.type = KvType::kBf16;
    bf16.page_tokens = 64;
    for (const size_t head : {32, 64, 96, 128}) {
      EXPECT_EQ(AttentionByMatrixExtension(bf16, head, AttentionMath::kBf16), unit) << head;
    }
    EXPECT_FALSE(AttentionByMatrixExtension(bf16, 48, AttentionMath::kBf16));
    EXPECT_FALSE(AttentionByMatrixExtension(bf16, 160, AttentionMath::kBf16));
    EXPECT_FALSE(AttentionByMatrixExtension(bf16, 64, AttentionMath::kF32));
    KvView f16 = bf16;
    f16.type = KvType::kF16;
    EXPECT_FALSE(AttentionByMatrixExtension(f16, 64, AttentionMath::kBf16));
  });
}

TEST(AttentionTest, MatrixUnitMatchesTheBf16KernelClosely) {
  // Where AMX-BF16 takes a bf16 cache, its outputs against vdpbf16ps's from
  // the same cache, over rows of 500 to 1064 positions, where the reference
  // tests' tolerance (1/256, for the weights' rounding) would not see one
  // position's share of an output go missing. Both round q, K, V and the
  // weights alike; only a score's last bits differ (the order of its sums),
  // and where that moves a weight across a bf16 rounding boundary the
  // output moves by 2^-8 of that weight's share. Small queries keep every
  // weight within about twice 1/len, so that stays under 2e-5 here, while a
  // position's share is about 1/len of |v| (1e-3).
  // Skipped only where the CPU has no AMX-BF16 (or the build no AMX):
  // MatrixExtensionMultipliesBf16WhereTheCpuHasAmxBf16 holds the detection
  // to /proc/cpuinfo, so a CPU that has it runs this.
  if (!MatrixExtensionMultipliesBf16()) GTEST_SKIP() << "no AMX-BF16 here";
  std::mt19937 rng(35);
  struct Long {
    size_t page_tokens, n_past, n, threads;
  };
  for (const Long& c :
       {Long{64, 700, 1, 1}, Long{64, 701, 1, 3}, Long{48, 500, 37, 2}, Long{64, 1000, 64, 1}}) {
    SCOPED_TRACE(::testing::Message()
                 << "n_past=" << c.n_past << " n=" << c.n << " threads=" << c.threads);
    const size_t heads = 14, kv_heads = 2, head_dim = 64, kv_dim = kv_heads * head_dim;
    const size_t total = c.n_past + c.n;
    const std::vector<float> k = RandomFloats(total * kv_dim, rng, -2.0f, 2.0f);
    const std::vector<float> v = RandomFloats(total * kv_dim, rng);
    const std::vector<float> q = RandomFloats(c.n * heads * head_dim, rng, -0.25f, 0.25f);
    TestCache cache(KvType::kBf16, c.page_tokens, kv_dim, total, head_dim);
    KvAppend(cache.view, 0, k.data(), v.data(), total);
    ThreadPool pool(ThreadPoolOptions{c.threads, false});
    std::vector<float> tiles(q.size()), dots(q.size());
    Attention(q.data(), c.n, c.n_past, cache.view, heads, kv_heads, head_dim, tiles.data(), &pool,
              AttentionMath::kBf16);
    AllowMatrixExtension(false);
    Attention(q.data(), c.n, c.n_past, cache.view, heads, kv_heads, head_dim, dots.data(), &pool,
              AttentionMath::kBf16);
    AllowMatrixExtension(true);
    for (size_t i = 0; i < q.size(); ++i) ASSERT_NEAR(tiles[i], dots[i], 1e-4f) << i;
  }
}

TEST(AttentionTest, SinglePositionReturnsItsValue) {
  // With one cached position the softmax weight is exactly 1.
  TestCache cache(KvType::kF32, 4, 8, 1, 8);
  std::mt19937 rng(33);
  const std::vector<float> k = RandomFloats(8, rng), v = RandomFloats(8, rng);
  const std::vector<float> q = RandomFloats(8, rng);
  KvAppend(cache.view, 0, k.data(), v.data(), 1);
  std::vector<float> out(8);
  Attention(q.data(), 1, 0, cache.view, 1, 1, 8, out.data(), nullptr);
  for (size_t j = 0; j < 8; ++j) EXPECT_FLOAT_EQ(out[j], v[j]);
}

TEST(AttentionTest, Q8RowsDecodeWithinHalfAStep) {
  // Independent of the reference. A head_dim that is not a power of two is
  // stored as is: every value within half a step (max|x| / 127 of its head).
  // A power of two is stored in an orthonormal basis y = H x, so the error
  // vector has the norm of one within half a y step per element, and
  // max|y| <= |x|: |error| <= sqrt(head_dim) / 2 * |x| / 127. A head of
  // zeros stays exactly zero either way.
  for (size_t head_dim : {24, 32}) {
    SCOPED_TRACE(head_dim);
    const size_t heads = 3, stride = heads * head_dim, tokens = 20;
    TestCache cache(KvType::kQ8, 8, stride, tokens, head_dim);
    EXPECT_EQ(KvRotated(cache.view), head_dim == 32);
    std::mt19937 rng(34);
    std::vector<float> k = RandomFloats(tokens * stride, rng, -3.0f, 3.0f);
    const std::vector<float> v = RandomFloats(tokens * stride, rng, -0.01f, 0.01f);
    k[3] = 40.0f;  // an outlier channel
    std::fill(k.begin() + stride, k.begin() + stride + head_dim, 0.0f);
    KvAppend(cache.view, 0, k.data(), v.data(), tokens);
    std::vector<float> row(stride);
    // f16 scales carry a relative error of 2^-11 (128 steps: 2^-4 step).
    const float slack = 1.0f + 1.0f / 16;
    for (size_t t = 0; t < tokens; ++t) {
      for (const auto& [pages, src] :
           {std::make_pair(cache.view.k_pages, static_cast<const std::vector<float>*>(&k)),
            std::make_pair(cache.view.v_pages, &v)}) {
        KvRowToF32(cache.view, pages, t, row.data());
        for (size_t h = 0; h < heads; ++h) {
          const float* x = src->data() + t * stride + h * head_dim;
          const float* got = row.data() + h * head_dim;
          float amax = 0.0f, norm2 = 0.0f, err2 = 0.0f;
          for (size_t j = 0; j < head_dim; ++j) {
            amax = std::max(amax, std::fabs(x[j]));
            norm2 += x[j] * x[j];
          }
          for (size_t j = 0; j < head_dim; ++j) {
            err2 += (got[j] - x[j]) * (got[j] - x[j]);
            if (head_dim != 32) {
              ASSERT_NEAR(got[j], x[j], amax / 127.0f / 2 * slack) << t << " " << h << " " << j;
            }
          }
          if (head_dim == 32) {
            ASSERT_LE(std::sqrt(err2),
                      std::sqrt(float(head_dim)) / 2 * std::sqrt(norm2) / 127.0f * slack + 1e-6f)
                << t << " " << h;
          }
          if (norm2 == 0.0f) {
            for (size_t j = 0; j < head_dim; ++j) ASSERT_EQ(got[j], 0.0f);
          }
        }
      }
    }
  }
}

// Rows of 71 values (vector conversions and their scalar tails) with
// specials[] at every fifth value, stored by KvAppend on every target into
// pages of page_tokens: the cache bytes must equal the reference's. Returns
// the K rows (V is them reversed).
constexpr size_t kRowOf71 = 71;
std::vector<float> StoresRowsAsTheReference(KvType type, const float* specials, size_t n_specials,
                                            size_t tokens, size_t page_tokens, uint32_t seed) {
  constexpr size_t kRow = kRowOf71;
  std::mt19937 rng(seed);
  std::vector<float> k = RandomFloats(tokens * kRow, rng, -3.0f, 3.0f);
  for (size_t i = 0; i < tokens * kRow; i += 5) k[i] = specials[i / 5 % n_specials];
  const std::vector<float> v(k.rbegin(), k.rend());
  TestCache expected(type, page_tokens, kRow, tokens, kRow);
  reference::KvAppend(expected.view, 0, k.data(), v.data(), tokens);
  ForEachTarget([&] {
    TestCache cache(type, page_tokens, kRow, tokens, kRow);
    KvAppend(cache.view, 0, k.data(), v.data(), tokens);
    EXPECT_EQ(cache.storage, expected.storage);
  });
  return k;
}

TEST(AttentionTest, F16RowsRoundToNearestEvenOnEveryTarget) {
  // Halfway cases, the largest half and the first value past it, subnormal
  // halves and the tie below the smallest one, signed zeros and infinities,
  // stored through the vector conversion and its scalar tail alike (71
  // values per row). Expected: the reference's F32ToF16 (fp16_test.cc).
  const float specials[] = {1.0f + 0x1p-11f,
                            1.0f + 0x3p-11f,
                            -1.0f - 0x1p-11f,
                            65504.0f,
                            65519.0f,
                            65520.0f,
                            -70000.0f,
                            0x1p-24f,
                            0x1p-25f,
                            0x3p-25f,
                            0x1.8p-20f,
                            -0x1p-16f,
                            0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY};
  StoresRowsAsTheReference(KvType::kF16, specials, std::size(specials), 2, 4, 34);
}

TEST(AttentionTest, Bf16RowsRoundToNearestEvenOnEveryTarget) {
  // Ties that round down and up, the largest bf16 and the first value that
  // rounds past it to infinity, f32 subnormals, signed zeros, infinities and
  // a NaN, through the vector rounding and its scalar tail (71 values per
  // row: an odd last K channel with no partner, and 3 slots per page: an odd
  // last V slot). Expected: the reference's F32ToBF16 (fp16_test.cc).
  const float specials[] = {1.0f + 0x1p-8f,
                            1.0f + 0x3p-8f,
                            -1.0f - 0x1p-8f,
                            0x1.FEp127f,
                            0x1.FFp127f,
                            0x1.FF7FFEp127f,
                            0x1p-140f,
                            0x1.01p-133f,
                            0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY,
                            NAN};
  const std::vector<float> k =
      StoresRowsAsTheReference(KvType::kBf16, specials, std::size(specials), 3, 3, 37);
  ForEachTarget([&] {
    TestCache cache(KvType::kBf16, 3, kRowOf71, 3, kRowOf71);
    KvAppend(cache.view, 0, k.data(), k.data(), 3);
    // Read back in element order, each value is its bf16 rounding.
    constexpr size_t kRow = kRowOf71;
    std::vector<float> row(kRow);
    for (size_t t = 0; t < 3; ++t) {
      KvRowToF32(cache.view, cache.view.k_pages, t, row.data());
      for (size_t i = 0; i < kRow; ++i) {
        const float want = BF16ToF32(F32ToBF16(k[t * kRow + i]));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(row[i])) << t << " " << i;
        } else {
          EXPECT_EQ(row[i], want) << t << " " << i;
        }
      }
    }
  });
}

TEST(AttentionTest, RowBytesRoundTrip) {
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8, KvType::kBf16}) {
    SCOPED_TRACE(TypeName(type));
    TestCache a(type, 4, 16, 9, 8), b(type, 4, 16, 9, 8);
    std::mt19937 rng(35);
    const std::vector<float> k = RandomFloats(9 * 16, rng), v = RandomFloats(9 * 16, rng);
    KvAppend(a.view, 0, k.data(), v.data(), 9);
    std::vector<uint8_t> bytes(KvRowBytes(type, 16, 8));
    EXPECT_EQ(bytes.size(), type == KvType::kF32 ? 64u : type == KvType::kQ8 ? 20u : 32u);
    for (size_t t = 0; t < 9; ++t) {
      KvReadRow(a.view, a.view.k_pages, t, bytes.data());
      KvWriteRow(b.view, b.view.k_pages, t, bytes.data());
      KvReadRow(a.view, a.view.v_pages, t, bytes.data());
      KvWriteRow(b.view, b.view.v_pages, t, bytes.data());
    }
    EXPECT_EQ(a.storage, b.storage);
  }
}

// A hint only: asking for the lines of every reserved position, written or
// not, at page ends and with odd widths, changes no byte of the cache.
TEST(AttentionTest, PrefetchAppendChangesNothing) {
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8, KvType::kBf16}) {
    SCOPED_TRACE(TypeName(type));
    TestCache cache(type, 16, 24, 40, 8);
    std::mt19937 rng(36);
    const std::vector<float> k = RandomFloats(21 * 24, rng), v = RandomFloats(21 * 24, rng);
    KvAppend(cache.view, 0, k.data(), v.data(), 21);
    const std::vector<std::vector<uint8_t>> before = cache.storage;
    for (size_t t = 0; t < 48; ++t) KvPrefetchAppend(cache.view, t);
    EXPECT_EQ(cache.storage, before);
  }
}

TEST(AttentionTest, ShiftMatchesReference) {
  std::mt19937 rng(36);
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8, KvType::kBf16}) {
    for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved}) {
      SCOPED_TRACE(TypeName(type));
      const size_t head_dim = 16, stride = 2 * head_dim, total = 50, dst = 4, src = 21;
      const KvRope rope{head_dim, 10000.0f, style};
      const std::vector<float> k = RandomFloats(total * stride, rng, -2.0f, 2.0f);
      const std::vector<float> v = RandomFloats(total * stride, rng);
      TestCache expected(type, 8, stride, total, head_dim);
      reference::KvAppend(expected.view, 0, k.data(), v.data(), total);
      reference::KvShift(expected.view, dst, src, total - src, rope);
      ForEachTarget([&] {
        TestCache cache(type, 8, stride, total, head_dim);
        KvAppend(cache.view, 0, k.data(), v.data(), total);
        KvShift(cache.view, dst, src, total - src, rope);
        std::vector<float> got(stride), want(stride);
        for (size_t t = 0; t < dst + total - src; ++t) {
          for (void* const* pages : {cache.view.k_pages, cache.view.v_pages}) {
            const bool is_k = pages == cache.view.k_pages;
            KvRowToF32(cache.view, pages, t, got.data());
            KvRowToF32(expected.view, is_k ? expected.view.k_pages : expected.view.v_pages, t,
                       want.data());
            // Kernel and reference rotate in f32 with different rounding; a
            // q8 code may then round the other way (one step, <= 2/127), a
            // bf16 value by one unit (2^-7 relative, |k| < 2.9).
            const float tol = type == KvType::kQ8     ? 2.0f * 2.9f / 127.0f
                              : type == KvType::kBf16 ? 2.9f / 128.0f
                                                      : 4e-3f;
            for (size_t i = 0; i < stride; ++i) {
              ASSERT_NEAR(got[i], want[i], tol) << "t=" << t << " i=" << i << " K=" << is_k;
            }
          }
        }
      });
    }
  }
}

TEST(AttentionTest, ShiftedRowsEqualRowsWrittenAtTheirNewPositions) {
  // Independent of the reference: rotating stored rows from position p to
  // p - d equals rotating the raw rows to p - d directly (f32 cache).
  const size_t head_dim = 8, stride = 2 * head_dim, total = 30, dst = 3, src = 12;
  const KvRope rope{head_dim, 10000.0f, RopeStyle::kNeox};
  std::mt19937 rng(37);
  const std::vector<float> raw = RandomFloats(total * stride, rng);
  std::vector<float> at_old = raw, at_new = raw;
  std::vector<int32_t> old_pos(total), new_pos(total);
  for (size_t t = 0; t < total; ++t) {
    old_pos[t] = static_cast<int32_t>(t);
    new_pos[t] = static_cast<int32_t>(t < src ? t : t - (src - dst));
  }
  reference::Rope(at_old.data(), total, 2, head_dim, old_pos.data(), 10000.0f, RopeStyle::kNeox);
  reference::Rope(at_new.data(), total, 2, head_dim, new_pos.data(), 10000.0f, RopeStyle::kNeox);
  TestCache cache(KvType::kF32, 8, stride, total, head_dim);
  KvAppend(cache.view, 0, at_old.data(), raw.data(), total);
  KvShift(cache.view, dst, src, total - src, rope);
  std::vector<float> row(stride);
  for (size_t t = dst; t < dst + total - src; ++t) {
    KvRowToF32(cache.view, cache.view.k_pages, t, row.data());
    for (size_t i = 0; i < stride; ++i) {
      ASSERT_NEAR(row[i], at_new[(t + src - dst) * stride + i], 2e-5f) << t << " " << i;
    }
    KvRowToF32(cache.view, cache.view.v_pages, t, row.data());
    for (size_t i = 0; i < stride; ++i) ASSERT_EQ(row[i], raw[(t + src - dst) * stride + i]);
  }
}

}  // namespace
}  // namespace pocket::cpu
