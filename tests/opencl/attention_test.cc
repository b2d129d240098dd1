// OpenCL kv_append and attention against the CPU scalar reference: decode
// and prefill, with and without earlier positions in the cache, GQA and
// plain multi-head, f16, f32 and q8 caches. The device cache (kv_cache.h) is
// grown across calls, as a session grows it.
#include <cstdlib>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/opencl/kv_cache.h"
#include "backends/reference/ops.h"
#include "opencl/opencl_test_util.h"

namespace pocket::opencl {
namespace {

using testing::DownloadFloats;
using testing::ExpectClose;
using testing::RandomFloats;
using testing::TestContext;
using testing::UploadFloats;

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
  const cpu::KvView& view() const { return view_; }

 private:
  std::vector<std::vector<uint8_t>> storage_;
  std::vector<void*> k_, v_;
  cpu::KvView view_;
};

// A device K or V buffer's rows in cpu::KvReadRow's form: each row's
// stored values, then (q8) its scales.
std::vector<std::vector<uint8_t>> DeviceRows(Context* ctx, const DeviceKvView& kv,
                                             const Buffer& buffer, size_t tokens) {
  std::vector<uint8_t> all(buffer.bytes());
  EXPECT_TRUE(ctx->Read(buffer, 0, all.data(), all.size()).ok());
  const size_t row_bytes = KvRowBytes(kv.type, kv.row_stride, kv.head_dim);
  const size_t values = kv.type == KvType::kQ8 ? kv.row_stride : row_bytes;
  const size_t scales_off = KvScalesOffset(kv.type, kv.capacity, kv.row_stride);
  std::vector<std::vector<uint8_t>> rows(tokens);
  for (size_t t = 0; t < tokens; ++t) {
    rows[t].assign(all.begin() + t * values, all.begin() + (t + 1) * values);
    const size_t scales = row_bytes - values;
    rows[t].insert(rows[t].end(), all.begin() + scales_off + t * scales,
                   all.begin() + scales_off + (t + 1) * scales);
  }
  return rows;
}

using Param = std::tuple<AttentionCase, KvType>;

class AttentionTest : public ::testing::TestWithParam<Param> {};

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

  // The cache holds exactly what the reference stored (f16 and q8 scales:
  // the same round-to-nearest-even conversion; q8 codes: the same rounding),
  // but for rotated q8 rows a code may be one step off (see above) and its
  // scale, from max|y|, one f16 ulp.
  const size_t row_bytes = KvRowBytes(type, row, c.head_dim);
  const size_t codes = type == KvType::kQ8 ? row : row_bytes;
  std::vector<uint8_t> host_row(row_bytes);
  const auto device_k = DeviceRows(ctx, cache.View(1), *cache.View(1).k, total);
  const auto device_v = DeviceRows(ctx, cache.View(1), *cache.View(1).v, total);
  for (size_t t = 0; t < total; ++t) {
    for (bool keys : {true, false}) {
      const std::vector<uint8_t>& got = keys ? device_k[t] : device_v[t];
      cpu::KvReadRow(host.view(), keys ? host.view().k_pages : host.view().v_pages, t,
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

const char* KvName(KvType t) {
  return t == KvType::kF32 ? "f32" : t == KvType::kF16 ? "f16" : "q8";
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  const AttentionCase& c = std::get<0>(info.param);
  return "h" + std::to_string(c.n_heads) + "kv" + std::to_string(c.n_kv_heads) + "d" +
         std::to_string(c.head_dim) + "_past" + std::to_string(c.n_past) + "_n" +
         std::to_string(c.n) + "_" + KvName(std::get<1>(info.param));
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
    ParamName);

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
