// Metal linear (linear_rows for decode, linear_mma for prefill, linear
// where cols is not a multiple of 8) and embed, run
// through the shim against the CPU scalar reference, for every weight
// dtype and q4 group; weights sit at an offset inside a larger buffer, as
// they do in the mapped file the host wraps.
#include <random>
#include <string>
#include <vector>

#include "backends/reference/ops.h"
#include "gpu/gpu_test_util.h"
#include "metal/metal_test_util.h"

namespace pocket::metal {
namespace {

using gpu::testing::CaseName;
using gpu::testing::ExpectClose;
using gpu::testing::WeightCase;
using testing::PlaceWeight;
using testing::RandomFloats;
using testing::RandomWeight;
using testing::TestEncoder;

// Where the tests place weights: past the first 16 KiB page of a buffer.
constexpr size_t kWeightOffset = 16384;

class MetalWeightTest : public ::testing::TestWithParam<WeightCase> {};

TEST_P(MetalWeightTest, LinearMatchesReference) {
  TestEncoder enc;
  std::mt19937 rng(7);
  const size_t rows = 13, cols = 256;  // rows: not a multiple of anything
  const auto w = RandomWeight(rows, cols, GetParam().dtype, GetParam().group, rng);
  const DeviceWeight dw = PlaceWeight(&enc, w, kWeightOffset);
  const std::vector<float> bias = RandomFloats(rows, rng);
  const Buffer* bias_buf = enc.NewFloats(bias);

  // n = 1 is decode (linear_rows); 3 and 9 prefill (linear_mma), 9 with a
  // partial second tile of 8 tokens.
  for (size_t n : {1, 3, 9}) {
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE("n=" + std::to_string(n) + (with_bias ? " with bias" : ""));
      const size_t x_off = 2 * cols, out_off = 3 * rows;
      const std::vector<float> x = RandomFloats(x_off + n * cols, rng);
      std::vector<float> want(n * rows);
      reference::Linear(x.data() + x_off, n, w.view, with_bias ? bias.data() : nullptr,
                        want.data());
      const Buffer* x_buf = enc.NewFloats(x);
      const Buffer* out_buf = enc.NewFloats(std::vector<float>(out_off + n * rows, -7.0f));
      const Pipeline expected = n == 1 ? Pipeline::kLinearRows : Pipeline::kLinearMma;
      const size_t before = enc.dispatches(expected);
      const Status s = Linear(&enc, Span{x_buf, x_off}, n, dw, with_bias ? bias_buf : nullptr,
                              Span{out_buf, out_off});
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(enc.dispatches(expected), before + 1) << gpu::KernelName(expected);
      // The OpenCL op tests' bound: the reference sums in double, the
      // kernels 256 f32 products in another order (strided partial sums
      // and a SIMD-group sum, or 8-term matrix products), a few eps times
      // sum|x w| (~64); a wrong weight is off by ~0.1.
      ExpectClose(TestEncoder::Floats(*out_buf, out_off, n * rows), want, 1e-4f, 1e-5f);
      ExpectClose(TestEncoder::Floats(*out_buf, 0, out_off), std::vector<float>(out_off, -7.0f),
                  0.0f, 0.0f);
    }
  }
}

TEST_P(MetalWeightTest, EmbedMatchesReference) {
  TestEncoder enc;
  std::mt19937 rng(11);
  const size_t vocab = 50, d = 128;
  const auto table = RandomWeight(vocab, d, GetParam().dtype, GetParam().group, rng);
  const DeviceWeight dt = PlaceWeight(&enc, table, kWeightOffset);
  for (size_t n : {1, 6}) {
    std::vector<int32_t> ids(n);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % vocab);
    ids.back() = vocab - 1;
    std::vector<float> want(n * d);
    reference::Embed(table.view, ids.data(), n, want.data());
    const size_t off = d;
    const Buffer* out_buf = enc.NewFloats(std::vector<float>(off + n * d));
    const Status s = Embed(&enc, dt, ids.data(), n, Span{out_buf, off});
    ASSERT_TRUE(s.ok()) << s.ToString();
    // Dequantization is the same float expression on both sides: exact.
    ExpectClose(TestEncoder::Floats(*out_buf, off, n * d), want, 0.0f, 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, MetalWeightTest,
                         ::testing::Values(WeightCase{DType::kF32, 0}, WeightCase{DType::kF16, 0},
                                           WeightCase{DType::kBF16, 0},
                                           WeightCase{DType::kQ8, kQ8Group},
                                           WeightCase{DType::kQ4, 32}, WeightCase{DType::kQ4, 64},
                                           WeightCase{DType::kQ4, 128}),
                         CaseName);

// Rows of 36 values: prefill takes linear (four tokens per threadgroup,
// 6 tokens: a partial block) instead of linear_mma's 8-column blocks.
TEST(MetalLinearTest, ColsNotAMultipleOf8RunLinear) {
  TestEncoder enc;
  std::mt19937 rng(5);
  const size_t rows = 5, cols = 36, n = 6;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const auto w = RandomWeight(rows, cols, dtype, 0, rng);
    const DeviceWeight dw = PlaceWeight(&enc, w, kWeightOffset);
    const std::vector<float> bias = RandomFloats(rows, rng);
    const std::vector<float> x = RandomFloats(n * cols, rng);
    std::vector<float> want(n * rows);
    reference::Linear(x.data(), n, w.view, bias.data(), want.data());
    const Buffer* out_buf = enc.NewFloats(std::vector<float>(n * rows));
    const size_t before = enc.dispatches(Pipeline::kLinear);
    const Status s =
        Linear(&enc, Span{enc.NewFloats(x), 0}, n, dw, enc.NewFloats(bias), Span{out_buf, 0});
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(enc.dispatches(Pipeline::kLinear), before + 1);
    ExpectClose(TestEncoder::Floats(*out_buf, 0, n * rows), want, 1e-5f, 1e-5f);
  }
}

TEST(MetalLinearErrors, RejectsAWeightPastItsBuffer) {
  TestEncoder enc;
  std::mt19937 rng(3);
  const auto w = RandomWeight(8, 32, DType::kF32, 0, rng);
  DeviceWeight dw = PlaceWeight(&enc, w, 64);
  dw.offset = 68;  // the tensor's last float would lie past the buffer
  const Buffer* x_buf = enc.NewFloats(RandomFloats(32, rng));
  const Buffer* out_buf = enc.NewFloats(std::vector<float>(8));
  const Status s = Linear(&enc, Span{x_buf, 0}, 1, dw, nullptr, Span{out_buf, 0});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("does not fit its buffer"), std::string::npos) << s.message();
  EXPECT_EQ(enc.dispatches(Pipeline::kLinearRows), 0u);
}

}  // namespace
}  // namespace pocket::metal
