// OpenCL linear and embed against the CPU scalar reference, for every
// weight dtype and q4 group, decode (n = 1) and prefill (n > 1, including a
// partial block of LINEAR_TOKENS tokens).
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/opencl/weights.h"
#include "backends/reference/ops.h"
#include "gpu/gpu_test_util.h"
#include "opencl/opencl_test_util.h"

namespace pocket::opencl {
namespace {

using gpu::testing::CaseName;
using gpu::testing::ExpectClose;
using gpu::testing::WeightCase;
using testing::DownloadFloats;
using testing::RandomFloats;
using testing::RandomWeight;
using testing::TestContext;
using testing::UploadFloats;
using testing::UploadWeight;

class WeightTest : public ::testing::TestWithParam<WeightCase> {};

TEST_P(WeightTest, LinearMatchesReference) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  std::mt19937 rng(7);
  const size_t rows = 37, cols = 256;  // rows not a multiple of anything
  const auto w = RandomWeight(rows, cols, GetParam().dtype, GetParam().group, rng);
  Buffer w_buf;
  const DeviceWeight dw = UploadWeight(ctx, w, &w_buf);
  const std::vector<float> bias = RandomFloats(rows, rng);
  const Buffer bias_buf = UploadFloats(ctx, bias);

  for (size_t n : {1, 3, 9}) {
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE("n=" + std::to_string(n) + (with_bias ? " with bias" : ""));
      // Offsets of a few rows on both sides exercise Span offsets (the
      // executor runs the output head on the last row only).
      const size_t x_off = 2 * cols, out_off = 3 * rows;
      const std::vector<float> x = RandomFloats(x_off + n * cols, rng);
      std::vector<float> want(n * rows);
      reference::Linear(x.data() + x_off, n, w.view, with_bias ? bias.data() : nullptr,
                        want.data());

      const Buffer x_buf = UploadFloats(ctx, x);
      const Buffer out_buf = UploadFloats(ctx, std::vector<float>(out_off + n * rows, -7.0f));
      const Status s = Linear(ctx, Span{&x_buf, x_off}, n, dw, with_bias ? &bias_buf : nullptr,
                              Span{&out_buf, out_off});
      ASSERT_TRUE(s.ok()) << s.ToString();
      // The reference sums in double; the kernel sums 256 f32 products of
      // magnitude <= ~1 in strided partial sums plus a tree, so its rounding
      // error is a few eps times sum|x w| (~64): well under 1e-4, while a
      // wrong weight or layout is off by ~0.1.
      ExpectClose(DownloadFloats(ctx, out_buf, out_off, n * rows), want, 1e-4f, 1e-5f);
      // Rows before the offset are untouched.
      ExpectClose(DownloadFloats(ctx, out_buf, 0, out_off), std::vector<float>(out_off, -7.0f),
                  0.0f, 0.0f);
    }
  }
}

TEST_P(WeightTest, EmbedMatchesReference) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  std::mt19937 rng(11);
  const size_t vocab = 50, d = 128;
  const auto table = RandomWeight(vocab, d, GetParam().dtype, GetParam().group, rng);
  Buffer t_buf;
  const DeviceWeight dt = UploadWeight(ctx, table, &t_buf);
  for (size_t n : {1, 6}) {
    std::vector<int32_t> ids(n);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % vocab);
    ids.back() = vocab - 1;
    std::vector<float> want(n * d);
    reference::Embed(table.view, ids.data(), n, want.data());
    const size_t off = d;
    const Buffer out_buf = UploadFloats(ctx, std::vector<float>(off + n * d));
    const Status s = Embed(ctx, dt, ids.data(), n, Span{&out_buf, off});
    ASSERT_TRUE(s.ok()) << s.ToString();
    // Dequantization is the same float expression on both sides: exact.
    ExpectClose(DownloadFloats(ctx, out_buf, off, n * d), want, 0.0f, 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, WeightTest,
                         ::testing::Values(WeightCase{DType::kF32, 0}, WeightCase{DType::kF16, 0},
                                           WeightCase{DType::kBF16, 0},
                                           WeightCase{DType::kQ8, kQ8Group},
                                           WeightCase{DType::kQ4, 32}, WeightCase{DType::kQ4, 64},
                                           WeightCase{DType::kQ4, 128}),
                         CaseName);

// The OpenCL kernels read planar bytes: the WeightStore unpacks a rows16
// q4 or q8 weight (what the converter writes by default) on upload, so the
// device holds exactly the planar bytes, and Linear and Embed on it match
// the reference reading the rows16 bytes.
class Rows16UploadTest : public ::testing::TestWithParam<WeightCase> {};

TEST_P(Rows16UploadTest, WeightStoreUnpacksToPlanar) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  const size_t rows = 48, cols = 256;
  std::mt19937 rng(13);
  const std::vector<float> values = RandomFloats(rows * cols, rng);
  const auto planar =
      cpu::testing::EncodedWeight(values, rows, cols, GetParam().dtype, GetParam().group);
  const auto packed = cpu::testing::EncodedWeight(values, rows, cols, GetParam().dtype,
                                                  GetParam().group, TensorLayout::kRows16);
  ASSERT_NE(packed.bytes, planar.bytes);

  WeightStore store(ctx);
  auto dw = store.Upload(packed.view);
  ASSERT_TRUE(dw.ok()) << dw.status().ToString();
  EXPECT_EQ(store.bytes(), planar.bytes.size());
  std::vector<uint8_t> device(planar.bytes.size());
  ASSERT_TRUE(ctx->Read(*dw->buffer, 0, device.data(), device.size()).ok());
  EXPECT_EQ(device, planar.bytes);

  const size_t n = 3;
  const std::vector<float> x = RandomFloats(n * cols, rng);
  std::vector<float> want(n * rows);
  reference::Linear(x.data(), n, packed.view, nullptr, want.data());
  const Buffer x_buf = UploadFloats(ctx, x);
  const Buffer out_buf = UploadFloats(ctx, std::vector<float>(n * rows));
  const Status s = Linear(ctx, Span{&x_buf, 0}, n, *dw, nullptr, Span{&out_buf, 0});
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectClose(DownloadFloats(ctx, out_buf, 0, n * rows), want, 1e-4f, 1e-5f);

  const std::vector<int32_t> ids = {0, 17, 47};
  std::vector<float> want_rows(ids.size() * cols);
  reference::Embed(packed.view, ids.data(), ids.size(), want_rows.data());
  const Buffer rows_buf = UploadFloats(ctx, std::vector<float>(ids.size() * cols));
  ASSERT_TRUE(Embed(ctx, *dw, ids.data(), ids.size(), Span{&rows_buf, 0}).ok());
  ExpectClose(DownloadFloats(ctx, rows_buf, 0, ids.size() * cols), want_rows, 0.0f, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Rows16DTypes, Rows16UploadTest,
                         ::testing::Values(WeightCase{DType::kQ8, kQ8Group},
                                           WeightCase{DType::kQ4, 32}, WeightCase{DType::kQ4, 64},
                                           WeightCase{DType::kQ4, 128}),
                         CaseName);

TEST(LinearErrors, RejectsOutputBufferTooSmall) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  std::mt19937 rng(3);
  const auto w = RandomWeight(8, 32, DType::kF32, 0, rng);
  Buffer w_buf;
  const DeviceWeight dw = UploadWeight(ctx, w, &w_buf);
  const Buffer x_buf = UploadFloats(ctx, RandomFloats(2 * 32, rng));
  const Buffer out_buf = UploadFloats(ctx, std::vector<float>(8));  // room for one row of two
  const Status s = Linear(ctx, Span{&x_buf, 0}, 2, dw, nullptr, Span{&out_buf, 0});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("out needs 16 floats"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace pocket::opencl
