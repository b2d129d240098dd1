// KvAppend and Attention against the scalar reference: f32 and f16 caches,
// several pages, n_past > 0, GQA ratios 1, 2 and 7, with and without threads.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/ops.h"
#include "backends/cpu/reference_ops.h"
#include "backends/cpu/thread_pool.h"
#include "ops_test_util.h"

namespace pocket::cpu {
namespace {

using testing::ForEachTarget;
using testing::RandomFloats;

// A paged cache with its own storage.
struct TestCache {
  TestCache(KvType type, size_t page_tokens, size_t row_stride, size_t capacity) {
    const size_t elem = type == KvType::kF32 ? 4 : 2;
    const size_t pages = (capacity + page_tokens - 1) / page_tokens;
    storage.assign(2 * pages, std::vector<uint8_t>(page_tokens * row_stride * elem, 0));
    for (size_t p = 0; p < pages; ++p) {
      k_pages.push_back(storage[p].data());
      v_pages.push_back(storage[pages + p].data());
    }
    view.type = type;
    view.k_pages = k_pages.data();
    view.v_pages = v_pages.data();
    view.page_tokens = page_tokens;
    view.row_stride = row_stride;
  }
  std::vector<std::vector<uint8_t>> storage;
  std::vector<void*> k_pages, v_pages;
  KvView view;
};

struct Case {
  KvType type;
  size_t page_tokens, n_past, n, n_heads, n_kv_heads, head_dim;
};

void CheckAttention(const Case& c, ThreadPool* pool, std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message()
               << "kv=" << (c.type == KvType::kF32 ? "f32" : "f16") << " page=" << c.page_tokens
               << " n_past=" << c.n_past << " n=" << c.n << " heads=" << c.n_heads << "/"
               << c.n_kv_heads << " hd=" << c.head_dim
               << " threads=" << (pool ? pool->NumThreads() : 0));
  const size_t kv_dim = c.n_kv_heads * c.head_dim;
  const size_t total = c.n_past + c.n;
  const std::vector<float> k = RandomFloats(total * kv_dim, rng, -2.0f, 2.0f);
  const std::vector<float> v = RandomFloats(total * kv_dim, rng);
  const std::vector<float> q = RandomFloats(c.n * c.n_heads * c.head_dim, rng, -2.0f, 2.0f);

  TestCache expected_cache(c.type, c.page_tokens, kv_dim, total);
  reference::KvAppend(expected_cache.view, 0, k.data(), v.data(), total);
  std::vector<float> expected(q.size());
  reference::Attention(q.data(), c.n, c.n_past, expected_cache.view, c.n_heads, c.n_kv_heads,
                       c.head_dim, expected.data());

  ForEachTarget([&] {
    // The past in one call, the batch in another, as a session does.
    TestCache cache(c.type, c.page_tokens, kv_dim, total);
    KvAppend(cache.view, 0, k.data(), v.data(), c.n_past);
    KvAppend(cache.view, c.n_past, k.data() + c.n_past * kv_dim, v.data() + c.n_past * kv_dim, c.n);
    ASSERT_EQ(cache.storage, expected_cache.storage);
    std::vector<float> out(q.size(), NAN);
    Attention(q.data(), c.n, c.n_past, cache.view, c.n_heads, c.n_kv_heads, c.head_dim, out.data(),
              pool);
    // Outputs are convex combinations of V values in [-1, 1]; scores and
    // exponentials carry f32 rounding of order 1e-6 relative.
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], 2e-5f) << i;
  });
}

TEST(AttentionTest, MatchesReference) {
  std::mt19937 rng(31);
  const Case cases[] = {
      {KvType::kF32, 16, 0, 1, 4, 4, 64},    {KvType::kF16, 16, 0, 1, 4, 4, 64},
      {KvType::kF32, 7, 5, 3, 4, 2, 8},      {KvType::kF16, 7, 40, 9, 4, 2, 20},
      {KvType::kF16, 16, 100, 1, 14, 2, 64}, {KvType::kF32, 16, 130, 2, 14, 2, 64},
      {KvType::kF16, 32, 0, 70, 7, 1, 32},   {KvType::kF32, 5, 13, 4, 7, 1, 17},
  };
  for (const Case& c : cases) CheckAttention(c, nullptr, rng);
}

TEST(AttentionTest, ThreadedMatchesReference) {
  std::mt19937 rng(32);
  for (size_t threads : {1, 2, 3, 4}) {
    ThreadPool pool(ThreadPoolOptions{threads, false});
    CheckAttention({KvType::kF16, 16, 37, 5, 14, 2, 64}, &pool, rng);
    CheckAttention({KvType::kF32, 8, 3, 1, 4, 4, 16}, &pool, rng);
  }
}

TEST(AttentionTest, SinglePositionReturnsItsValue) {
  // With one cached position the softmax weight is exactly 1.
  TestCache cache(KvType::kF32, 4, 8, 1);
  std::mt19937 rng(33);
  const std::vector<float> k = RandomFloats(8, rng), v = RandomFloats(8, rng);
  const std::vector<float> q = RandomFloats(8, rng);
  KvAppend(cache.view, 0, k.data(), v.data(), 1);
  std::vector<float> out(8);
  Attention(q.data(), 1, 0, cache.view, 1, 1, 8, out.data(), nullptr);
  for (size_t j = 0; j < 8; ++j) EXPECT_FLOAT_EQ(out[j], v[j]);
}

}  // namespace
}  // namespace pocket::cpu
