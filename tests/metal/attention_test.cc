// Metal kv_append (f16, f32 and q8 caches) and attention, run through the
// shim against the CPU scalar reference with the OpenCL op tests'
// tolerances: decode and prefill, with and without earlier positions, GQA
// and plain multi-head; the cache bytes compared with the reference's rows.
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/reference/ops.h"
#include "gpu/gpu_test_util.h"
#include "metal/metal_test_util.h"

namespace pocket::metal {
namespace {

using gpu::testing::AttentionCase;
using gpu::testing::AttentionParam;
using gpu::testing::AttentionParamName;
using gpu::testing::ExpectClose;
using gpu::testing::ExpectStoredRows;
using gpu::testing::HostKv;
using testing::RandomFloats;
using testing::TestEncoder;

class MetalAttentionTest : public ::testing::TestWithParam<AttentionParam> {};

TEST_P(MetalAttentionTest, MatchesReference) {
  TestEncoder enc;
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

  // Room for a few positions more than used, so the q8 scales do not sit
  // right after the codes of the last row.
  DeviceKvView kv;
  kv.type = type;
  kv.row_stride = row;
  kv.head_dim = c.head_dim;
  kv.capacity = total + 3;
  const size_t bytes = KvBufferBytes(type, kv.capacity, row, c.head_dim);
  kv.k = enc.NewBuffer(bytes);
  kv.v = enc.NewBuffer(bytes);
  const Buffer* k_buf = enc.NewFloats(k);
  const Buffer* v_buf = enc.NewFloats(v);
  const Buffer* q_buf = enc.NewFloats(q);
  const Buffer* out_buf = enc.NewFloats(std::vector<float>(c.n * q_width));
  if (c.n_past > 0) {
    const Status s = KvAppend(&enc, kv, 0, Span{k_buf, 0}, Span{v_buf, 0}, c.n_past);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  Status s =
      KvAppend(&enc, kv, c.n_past, Span{k_buf, c.n_past * row}, Span{v_buf, c.n_past * row}, c.n);
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = Attention(&enc, Span{q_buf, 0}, c.n, c.n_past, kv, c.n_heads, c.n_kv_heads, c.head_dim,
                Span{out_buf, 0});
  ASSERT_TRUE(s.ok()) << s.ToString();
  // The OpenCL op tests' bounds: a few f32 eps (the softmax denominator is
  // summed in another order), and for rotated q8 rows (power-of-two
  // head_dim) one code step where the reference's matrix-product rotation
  // lands on the other side of a rounding boundary.
  const bool rotated_q8 = type == KvType::kQ8 && (c.head_dim & (c.head_dim - 1)) == 0;
  ExpectClose(TestEncoder::Floats(*out_buf, 0, want.size()), want, rotated_q8 ? 2e-3f : 2e-6f,
              1e-5f);

  ExpectStoredRows(host.view(), kv, kv.k->contents, kv.v->contents, total, rotated_q8);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MetalAttentionTest,
    ::testing::Combine(
        ::testing::Values(AttentionCase{8, 2, 16, 0, 1},   // first decode step, GQA 4:1
                          AttentionCase{8, 2, 16, 37, 1},  // decode after a prompt
                          AttentionCase{4, 4, 8, 0, 6},    // prefill, plain multi-head
                          AttentionCase{2, 1, 80, 70, 2},  // > threadgroup positions and dims
                          AttentionCase{4, 2, 64, 3, 3}),  // power-of-two heads (rotated q8)
        ::testing::Values(KvType::kF16, KvType::kF32, KvType::kQ8)),
    AttentionParamName);

TEST(MetalAttentionErrors, RejectsPositionsBeyondTheCache) {
  TestEncoder enc;
  DeviceKvView kv;
  kv.type = KvType::kF16;
  kv.row_stride = kv.head_dim = 16;
  kv.capacity = 8;
  kv.k = enc.NewBuffer(KvBufferBytes(kv.type, 8, 16, 16));
  kv.v = enc.NewBuffer(KvBufferBytes(kv.type, 8, 16, 16));
  const Buffer* q_buf = enc.NewFloats(std::vector<float>(32));
  const Buffer* out_buf = enc.NewFloats(std::vector<float>(32));
  const Status s = Attention(&enc, Span{q_buf, 0}, 1, 8, kv, 2, 1, 16, Span{out_buf, 0});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("reserve"), std::string::npos) << s.message();
  EXPECT_EQ(enc.dispatches(Pipeline::kAttention), 0u);
}

}  // namespace
}  // namespace pocket::metal
