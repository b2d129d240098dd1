// OpenCL kv_append and attention against the CPU scalar reference: decode
// and prefill, with and without earlier positions in the cache, GQA and
// plain multi-head, f16, f32 and q8 caches. The device cache (kv_cache.h) is
// grown across calls, as a session grows it.
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/opencl/kv_cache.h"
#include "backends/reference/ops.h"
#include "gpu/gpu_test_util.h"
#include "opencl/opencl_test_util.h"

namespace pocket::opencl {
namespace {

using gpu::testing::AttentionCase;
using gpu::testing::AttentionParam;
using gpu::testing::AttentionParamName;
using gpu::testing::ExpectClose;
using gpu::testing::ExpectStoredRows;
using gpu::testing::HostKv;
using testing::DownloadFloats;
using testing::RandomFloats;
using testing::TestContext;
using testing::UploadFloats;

class AttentionTest : public ::testing::TestWithParam<AttentionParam> {};

TEST_P(AttentionTest, MatchesReference) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  const AttentionCase c = std::get<0>(GetParam());
  const KvType type = std::get<1>(GetParam());
  std::mt19937 rng(static_cast<unsigned>(c.n_past * 131 + c.n * 7 + c.head_dim));
  const size_t row = c.n_kv_heads * c.head_dim;
  const size_t q_width = c.n_heads * c.head_dim;
  const size_t total = c.n_past + c.n;

  const std::vector<float> k = RandomFloats(total * row, rng);
  const std::vector<float> v = RandomFloats(total * row, rng);
  const std::vector<float> q = RandomFloats(c.n * q_width, rng);

  HostKv host(type, row, c.head_dim, total);
  reference::KvAppend(host.view(), 0, k.data(), v.data(), c.n_past);
  reference::KvAppend(host.view(), c.n_past, k.data() + c.n_past * row, v.data() + c.n_past * row,
                      c.n);
  std::vector<float> want(c.n * q_width);
  reference::Attention(q.data(), c.n, c.n_past, host.view(), c.n_heads, c.n_kv_heads, c.head_dim,
                       want.data());

  // Grow in small steps so the appends cross at least one reallocation.
  DeviceKvCache cache(ctx, {0, row}, {0, c.head_dim}, type, /*grow_tokens=*/8,
                      /*max_tokens=*/size_t{1} << 18);
  const Buffer k_buf = UploadFloats(ctx, k);
  const Buffer v_buf = UploadFloats(ctx, v);
  const Buffer q_buf = UploadFloats(ctx, q);
  const Buffer out_buf = UploadFloats(ctx, std::vector<float>(c.n * q_width));
  if (c.n_past > 0) {
    ASSERT_TRUE(cache.Reserve(c.n_past).ok());
    const Status s = KvAppend(ctx, cache.View(1), 0, Span{&k_buf, 0}, Span{&v_buf, 0}, c.n_past);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_TRUE(cache.Reserve(total).ok());
  Status s = KvAppend(ctx, cache.View(1), c.n_past, Span{&k_buf, c.n_past * row},
                      Span{&v_buf, c.n_past * row}, c.n);
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = Attention(ctx, Span{&q_buf, 0}, c.n, c.n_past, cache.View(1), c.n_heads, c.n_kv_heads,
                c.head_dim, Span{&out_buf, 0});
  ASSERT_TRUE(s.ok()) << s.ToString();
  // Scores, max and the weighted sum follow the reference's order per
  // thread; only the softmax denominator is summed in another order and exp
  // may differ by a few ulp, so outputs (weighted means of values in
  // [-1, 1]) agree to a few f32 eps. Rotated q8 rows (power-of-two
  // head_dim) are rotated by butterflies here and by a matrix product in the
  // reference: a value at a rounding boundary may take the neighbouring code,
  // one step of max|y| / 127 (< 1e-2), diluted by the softmax average.
  const bool rotated_q8 = type == KvType::kQ8 && (c.head_dim & (c.head_dim - 1)) == 0;
  ExpectClose(DownloadFloats(ctx, out_buf, 0, want.size()), want, rotated_q8 ? 2e-3f : 2e-6f,
              1e-5f);

  std::vector<uint8_t> k_bytes(cache.View(1).k->bytes()), v_bytes(cache.View(1).v->bytes());
  ASSERT_TRUE(ctx->Read(*cache.View(1).k, 0, k_bytes.data(), k_bytes.size()).ok());
  ASSERT_TRUE(ctx->Read(*cache.View(1).v, 0, v_bytes.data(), v_bytes.size()).ok());
  ExpectStoredRows(host.view(), cache.View(1), k_bytes.data(), v_bytes.data(), total, rotated_q8);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Combine(
        ::testing::Values(AttentionCase{8, 2, 16, 0, 1},   // first decode step, GQA 4:1
                          AttentionCase{8, 2, 16, 37, 1},  // decode after a prompt
                          AttentionCase{4, 4, 8, 0, 6},    // prefill, plain multi-head
                          AttentionCase{6, 2, 80, 70, 5},  // > work-group positions and dims
                          AttentionCase{14, 2, 64, 3, 9},  // MNN-Pocket-0.3B's head layout
                          // Scores beyond gpu/ops-inl.h's 16 MiB scratch bound:
                          // queries run in batches of 2 and 1.
                          AttentionCase{16, 1, 8, 131068, 3}),
        ::testing::Values(KvType::kF16, KvType::kF32, KvType::kQ8)),
    AttentionParamName);

TEST(AttentionErrors, RejectsPositionsBeyondTheCache) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  DeviceKvCache cache(ctx, {16}, {16}, KvType::kF16, 8, 64);
  ASSERT_TRUE(cache.Reserve(8).ok());
  const Buffer q_buf = UploadFloats(ctx, std::vector<float>(32));
  const Buffer out_buf = UploadFloats(ctx, std::vector<float>(32));
  const Status s =
      Attention(ctx, Span{&q_buf, 0}, 1, 8, cache.View(0), 2, 1, 16, Span{&out_buf, 0});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("reserve"), std::string::npos) << s.message();
  EXPECT_EQ(cache.Reserve(65).code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace pocket::opencl
