// Metal rms_norm, head_rms_norm, rope, swiglu and add, run through the
// shim against the CPU scalar reference with the OpenCL op tests'
// tolerances, for one token and several.
#include <random>
#include <string>
#include <vector>

#include "backends/reference/ops.h"
#include "metal/metal_test_util.h"

namespace pocket::metal {
namespace {

using gpu::testing::ExpectClose;
using testing::RandomFloats;
using testing::TestEncoder;

// Sums of squares are f32 in both, in a different order (SIMD-group sums
// then a sum of those vs. a running sum): a relative error of a few eps in
// mean(x^2), halved by the sqrt.
constexpr float kNormRelTol = 1e-5f;

TEST(MetalRmsNormTest, MatchesReference) {
  TestEncoder enc;
  std::mt19937 rng(1);
  const size_t d = 200;  // not a multiple of the threadgroup
  const std::vector<float> w = RandomFloats(d, rng, 0.5f, 1.5f);
  const Buffer* w_buf = enc.NewFloats(w);
  for (size_t n : {1, 5}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const std::vector<float> x = RandomFloats(n * d, rng, -3.0f, 3.0f);
    std::vector<float> want(n * d);
    reference::RmsNorm(x.data(), w.data(), n, d, 1e-6f, want.data());
    const Buffer* x_buf = enc.NewFloats(x);
    const Buffer* out_buf = enc.NewFloats(std::vector<float>(d + n * d));
    Status s = RmsNorm(&enc, Span{x_buf, 0}, *w_buf, n, d, 1e-6f, Span{out_buf, d});
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectClose(TestEncoder::Floats(*out_buf, d, n * d), want, 1e-6f, kNormRelTol);
    // In place, as the executor runs it when out names the input.
    s = RmsNorm(&enc, Span{x_buf, 0}, *w_buf, n, d, 1e-6f, Span{x_buf, 0});
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectClose(TestEncoder::Floats(*x_buf, 0, n * d), want, 1e-6f, kNormRelTol);
  }
}

TEST(MetalHeadRmsNormTest, MatchesReference) {
  TestEncoder enc;
  std::mt19937 rng(2);
  const size_t n_heads = 6, head_dim = 64;
  const std::vector<float> w = RandomFloats(head_dim, rng, 0.5f, 1.5f);
  const Buffer* w_buf = enc.NewFloats(w);
  for (size_t n : {1, 4}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    std::vector<float> want = RandomFloats(n * n_heads * head_dim, rng, -2.0f, 2.0f);
    const Buffer* x_buf = enc.NewFloats(want);
    reference::HeadRmsNorm(want.data(), w.data(), n, n_heads, head_dim, 1e-6f);
    const Status s = HeadRmsNorm(&enc, Span{x_buf, 0}, *w_buf, n, n_heads, head_dim, 1e-6f);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectClose(TestEncoder::Floats(*x_buf, 0, want.size()), want, 1e-6f, kNormRelTol);
  }
}

class MetalRopeTest : public ::testing::TestWithParam<RopeStyle> {};

TEST_P(MetalRopeTest, MatchesReferenceExactly) {
  TestEncoder enc;
  std::mt19937 rng(3);
  const size_t n_heads = 3, head_dim = 16;
  for (size_t n : {1, 4}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    std::vector<int32_t> positions(n);
    for (size_t i = 0; i < n; ++i) positions[i] = static_cast<int32_t>(1000 + 7 * i);
    const size_t off = n_heads * head_dim;  // one row before the data
    std::vector<float> x = RandomFloats(off + n * n_heads * head_dim, rng);
    const Buffer* x_buf = enc.NewFloats(x);
    reference::Rope(x.data() + off, n, n_heads, head_dim, positions.data(), 10000.0f, GetParam());
    const Status s =
        Rope(&enc, Span{x_buf, off}, n, n_heads, head_dim, positions.data(), 10000.0f, GetParam());
    ASSERT_TRUE(s.ok()) << s.ToString();
    // The same angles (from the host, with the CPU's formula) and the same
    // two roundings per product: bit-identical.
    ExpectClose(TestEncoder::Floats(*x_buf, 0, x.size()), x, 0.0f, 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Styles, MetalRopeTest,
                         ::testing::Values(RopeStyle::kNeox, RopeStyle::kInterleaved),
                         [](const ::testing::TestParamInfo<RopeStyle>& info) {
                           return std::string(info.param == RopeStyle::kNeox ? "Neox"
                                                                             : "Interleaved");
                         });

TEST(MetalSwigluAddTest, MatchReference) {
  TestEncoder enc;
  std::mt19937 rng(4);
  for (size_t count : {1, 70, 1000}) {
    SCOPED_TRACE("count=" + std::to_string(count));
    const std::vector<float> a = RandomFloats(count, rng, -6.0f, 6.0f);
    const std::vector<float> b = RandomFloats(count, rng, -2.0f, 2.0f);
    std::vector<float> want_swiglu(count), want_add(count);
    reference::Swiglu(a.data(), b.data(), count, want_swiglu.data());
    reference::Add(a.data(), b.data(), count, want_add.data());
    // Inputs and output at different offsets, so a swapped offset shows.
    std::vector<float> a_padded(3, 0.0f), b_padded(5, 0.0f);
    a_padded.insert(a_padded.end(), a.begin(), a.end());
    b_padded.insert(b_padded.end(), b.begin(), b.end());
    const Buffer* a_buf = enc.NewFloats(a_padded);
    const Buffer* b_buf = enc.NewFloats(b_padded);
    const Buffer* out_buf = enc.NewFloats(std::vector<float>(7 + count));
    Status s = Swiglu(&enc, Span{a_buf, 3}, Span{b_buf, 5}, count, Span{out_buf, 7});
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectClose(TestEncoder::Floats(*out_buf, 7, count), want_swiglu, 1e-7f, 1e-6f);
    // In place over the first input.
    s = Add(&enc, Span{a_buf, 3}, Span{b_buf, 5}, count, Span{a_buf, 3});
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectClose(TestEncoder::Floats(*a_buf, 3, count), want_add, 0.0f, 0.0f);  // one rounding
  }
}

}  // namespace
}  // namespace pocket::metal
