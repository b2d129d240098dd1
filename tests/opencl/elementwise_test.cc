// OpenCL rms_norm, head_rms_norm, rope, swiglu and add against the CPU
// scalar reference, for one token and several.
#include <random>
#include <string>
#include <vector>

#include "backends/reference/ops.h"
#include "opencl/opencl_test_util.h"

namespace pocket::opencl {
namespace {

using gpu::testing::ExpectClose;
using testing::DownloadFloats;
using testing::RandomFloats;
using testing::TestContext;
using testing::UploadFloats;

// Sums of squares are f32 in both, in a different order (tree vs. running
// sum): a relative error of a few eps in mean(x^2), halved by the sqrt.
constexpr float kNormRelTol = 1e-5f;

TEST(RmsNormTest, MatchesReference) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  std::mt19937 rng(1);
  // d = 200: not a multiple of the work-group, so threads stride unevenly.
  const size_t d = 200;
  const std::vector<float> w = RandomFloats(d, rng, 0.5f, 1.5f);
  const Buffer w_buf = UploadFloats(ctx, w);
  for (size_t n : {1, 5}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const std::vector<float> x = RandomFloats(n * d, rng, -3.0f, 3.0f);
    std::vector<float> want(n * d);
    reference::RmsNorm(x.data(), w.data(), n, d, 1e-6f, want.data());
    const Buffer x_buf = UploadFloats(ctx, x);
    const Buffer out_buf = UploadFloats(ctx, std::vector<float>(n * d));
    Status s = RmsNorm(ctx, Span{&x_buf, 0}, w_buf, n, d, 1e-6f, Span{&out_buf, 0});
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectClose(DownloadFloats(ctx, out_buf, 0, n * d), want, 1e-6f, kNormRelTol);
    // In place, as the executor runs it when out names the input.
    s = RmsNorm(ctx, Span{&x_buf, 0}, w_buf, n, d, 1e-6f, Span{&x_buf, 0});
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectClose(DownloadFloats(ctx, x_buf, 0, n * d), want, 1e-6f, kNormRelTol);
  }
}

TEST(HeadRmsNormTest, MatchesReference) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  std::mt19937 rng(2);
  const size_t n_heads = 6, head_dim = 64;
  const std::vector<float> w = RandomFloats(head_dim, rng, 0.5f, 1.5f);
  const Buffer w_buf = UploadFloats(ctx, w);
  for (size_t n : {1, 4}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    std::vector<float> want = RandomFloats(n * n_heads * head_dim, rng, -2.0f, 2.0f);
    const Buffer x_buf = UploadFloats(ctx, want);
    reference::HeadRmsNorm(want.data(), w.data(), n, n_heads, head_dim, 1e-6f);
    const Status s = HeadRmsNorm(ctx, Span{&x_buf, 0}, w_buf, n, n_heads, head_dim, 1e-6f);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectClose(DownloadFloats(ctx, x_buf, 0, want.size()), want, 1e-6f, kNormRelTol);
  }
}

class RopeTest : public ::testing::TestWithParam<RopeStyle> {};

TEST_P(RopeTest, MatchesReferenceExactly) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  std::mt19937 rng(3);
  const size_t n_heads = 3, head_dim = 16;
  for (size_t n : {1, 4}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    std::vector<int32_t> positions(n);
    for (size_t i = 0; i < n; ++i) positions[i] = static_cast<int32_t>(1000 + 7 * i);
    const size_t off = n_heads * head_dim;  // one row before the data
    std::vector<float> x = RandomFloats(off + n * n_heads * head_dim, rng);
    const Buffer x_buf = UploadFloats(ctx, x);
    reference::Rope(x.data() + off, n, n_heads, head_dim, positions.data(), 10000.0f, GetParam());
    const Status s =
        Rope(ctx, Span{&x_buf, off}, n, n_heads, head_dim, positions.data(), 10000.0f, GetParam());
    ASSERT_TRUE(s.ok()) << s.ToString();
    // Same angles (computed on the host with the CPU formula) and the same
    // two-rounding rotation (FP_CONTRACT OFF): bit-identical, at a large
    // position where any difference in the angle would show.
    ExpectClose(DownloadFloats(ctx, x_buf, 0, x.size()), x, 0.0f, 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Styles, RopeTest,
                         ::testing::Values(RopeStyle::kNeox, RopeStyle::kInterleaved),
                         [](const ::testing::TestParamInfo<RopeStyle>& info) {
                           return std::string(info.param == RopeStyle::kNeox ? "Neox"
                                                                             : "Interleaved");
                         });

TEST(SwigluAddTest, MatchReference) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  std::mt19937 rng(4);
  for (size_t count : {1, 70, 1000}) {
    SCOPED_TRACE("count=" + std::to_string(count));
    const std::vector<float> a = RandomFloats(count, rng, -6.0f, 6.0f);
    const std::vector<float> b = RandomFloats(count, rng, -2.0f, 2.0f);
    std::vector<float> want_swiglu(count), want_add(count);
    reference::Swiglu(a.data(), b.data(), count, want_swiglu.data());
    reference::Add(a.data(), b.data(), count, want_add.data());
    const Buffer a_buf = UploadFloats(ctx, a);
    const Buffer b_buf = UploadFloats(ctx, b);
    const Buffer out_buf = UploadFloats(ctx, std::vector<float>(count));
    Status s = Swiglu(ctx, Span{&a_buf, 0}, Span{&b_buf, 0}, count, Span{&out_buf, 0});
    ASSERT_TRUE(s.ok()) << s.ToString();
    // OpenCL's exp may be off by 3 ulp where libm's is within 1: a few eps.
    ExpectClose(DownloadFloats(ctx, out_buf, 0, count), want_swiglu, 1e-7f, 1e-6f);
    // In place over the first input.
    s = Add(ctx, Span{&a_buf, 0}, Span{&b_buf, 0}, count, Span{&a_buf, 0});
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectClose(DownloadFloats(ctx, a_buf, 0, count), want_add, 0.0f, 0.0f);  // one rounding
  }
}

}  // namespace
}  // namespace pocket::opencl
