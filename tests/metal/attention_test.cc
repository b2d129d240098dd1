// Metal kv_append (f16, f32 and q8 caches) and attention, run through the
// shim against the CPU scalar reference with the OpenCL op tests'
// tolerances: decode and prefill, with and without earlier positions, GQA
// and plain multi-head; the cache bytes compared with the reference's rows.
#include <cstdlib>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/kv_pages.h"
#include "backends/reference/ops.h"
#include "metal/metal_test_util.h"

namespace pocket::metal {
namespace {

using testing::ExpectClose;
using testing::RandomFloats;
using testing::TestEncoder;

struct AttentionCase {
  size_t n_heads, n_kv_heads, head_dim;
  size_t n_past, n;
};

void PrintTo(const AttentionCase& c, std::ostream* os) {
  *os << c.n_heads << " heads, " << c.n_kv_heads << " kv heads of " << c.head_dim << ", n_past "
      << c.n_past << ", n " << c.n;
}

// The reference's cache: host pages of kPageTokens tokens.
class HostKv {
 public:
  static constexpr size_t kPageTokens = 16;
  HostKv(KvType type, size_t row, size_t head_dim, size_t tokens) {
    const size_t pages = (tokens + kPageTokens - 1) / kPageTokens;
    storage_.assign(2 * pages, std::vector<uint8_t>(kPageTokens * KvRowBytes(type, row, head_dim)));
    for (size_t p = 0; p < pages; ++p) {
      k_.push_back(storage_[2 * p].data());
      v_.push_back(storage_[2 * p + 1].data());
    }
    view_.type = type;
    view_.k_pages = k_.data();
    view_.v_pages = v_.data();
    view_.page_tokens = kPageTokens;
    view_.row_stride = row;
    view_.head_dim = head_dim;
  }
  const KvView& view() const { return view_; }

 private:
  std::vector<std::vector<uint8_t>> storage_;
  std::vector<void*> k_, v_;
  KvView view_;
};

// Row t of a device K or V buffer in KvReadRow's form: its stored values,
// then (q8) its scales.
std::vector<uint8_t> DeviceRow(const DeviceKvView& kv, const Buffer& buffer, size_t t) {
  const size_t row_bytes = KvRowBytes(kv.type, kv.row_stride, kv.head_dim);
  const size_t values = kv.type == KvType::kQ8 ? kv.row_stride : row_bytes;
  const size_t scales = row_bytes - values;
  const uint8_t* base = buffer.contents;
  std::vector<uint8_t> row(base + t * values, base + (t + 1) * values);
  const uint8_t* s = base + KvScalesOffset(kv.type, kv.capacity, kv.row_stride) + t * scales;
  row.insert(row.end(), s, s + scales);
  return row;
}

using Param = std::tuple<AttentionCase, KvType>;

class MetalAttentionTest : public ::testing::TestWithParam<Param> {};

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

  // The cache holds what the reference stored: the same bytes, but for
  // rotated q8 rows a code may be one step off and its scale one f16 ulp.
  const size_t row_bytes = KvRowBytes(type, row, c.head_dim);
  const size_t codes = type == KvType::kQ8 ? row : row_bytes;
  std::vector<uint8_t> host_row(row_bytes);
  for (size_t t = 0; t < total; ++t) {
    for (bool keys : {true, false}) {
      const std::vector<uint8_t> got = DeviceRow(kv, keys ? *kv.k : *kv.v, t);
      reference::KvReadRow(host.view(), keys ? host.view().k_pages : host.view().v_pages, t,
                           host_row.data());
      if (!rotated_q8) {
        ASSERT_EQ(got, host_row) << (keys ? "K" : "V") << " row " << t;
        continue;
      }
      for (size_t i = 0; i < codes; ++i) {
        ASSERT_LE(std::abs(static_cast<int8_t>(got[i]) - static_cast<int8_t>(host_row[i])), 1)
            << (keys ? "K" : "V") << " row " << t << " code " << i;
      }
      for (size_t i = codes; i < row_bytes; i += 2) {
        const int g = got[i] | got[i + 1] << 8, h = host_row[i] | host_row[i + 1] << 8;
        ASSERT_LE(std::abs(g - h), 1) << (keys ? "K" : "V") << " row " << t << " scale " << i;
      }
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  const AttentionCase& c = std::get<0>(info.param);
  return "h" + std::to_string(c.n_heads) + "kv" + std::to_string(c.n_kv_heads) + "d" +
         std::to_string(c.head_dim) + "_past" + std::to_string(c.n_past) + "_n" +
         std::to_string(c.n) + "_" + KvTypeName(std::get<1>(info.param));
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
    ParamName);

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
