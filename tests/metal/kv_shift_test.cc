// Metal kv_shift (the sliding window's move of cache rows), run through the
// shim against the scalar reference's KvShift on the same appended rows:
// f32, f16 and q8 caches, rope heads in the Hadamard basis (q8, head_dim 8)
// and not (head_dim 12, interleaved), K rows without rope, ranges that fit
// the gap and ranges that move in steps.
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/kv_pages.h"
#include "backends/reference/ops.h"
#include "gpu/gpu_test_util.h"
#include "metal/metal_test_util.h"

namespace pocket::metal {
namespace {

using gpu::testing::ExpectReencodedRowClose;
using testing::RandomFloats;
using testing::TestEncoder;

struct ShiftCase {
  size_t row, head_dim;
  KvRope rope;
  size_t dst, src, count;
};

using Param = std::tuple<ShiftCase, KvType>;

class MetalKvShiftTest : public ::testing::TestWithParam<Param> {};

TEST_P(MetalKvShiftTest, MatchesReference) {
  TestEncoder enc;
  const ShiftCase c = std::get<0>(GetParam());
  const KvType type = std::get<1>(GetParam());
  const size_t total = c.src + c.count;
  std::mt19937 rng(static_cast<unsigned>(c.src * 17 + c.row));
  const std::vector<float> k = RandomFloats(total * c.row, rng);
  const std::vector<float> v = RandomFloats(total * c.row, rng);

  // The reference's pages, one position each.
  const size_t row_bytes = KvRowBytes(type, c.row, c.head_dim);
  std::vector<std::vector<uint8_t>> storage(2 * total, std::vector<uint8_t>(row_bytes));
  std::vector<void*> k_pages, v_pages;
  for (size_t t = 0; t < total; ++t) {
    k_pages.push_back(storage[2 * t].data());
    v_pages.push_back(storage[2 * t + 1].data());
  }
  KvView host;
  host.type = type;
  host.k_pages = k_pages.data();
  host.v_pages = v_pages.data();
  host.page_tokens = 1;
  host.row_stride = c.row;
  host.head_dim = c.head_dim;
  reference::KvAppend(host, 0, k.data(), v.data(), total);
  reference::KvShift(host, c.dst, c.src, c.count, c.rope);

  DeviceKvView kv;
  kv.type = type;
  kv.row_stride = c.row;
  kv.head_dim = c.head_dim;
  kv.capacity = total;
  kv.k = enc.NewBuffer(KvBufferBytes(type, total, c.row, c.head_dim));
  kv.v = enc.NewBuffer(KvBufferBytes(type, total, c.row, c.head_dim));
  Status s = KvAppend(&enc, kv, 0, Span{enc.NewFloats(k), 0}, Span{enc.NewFloats(v), 0}, total);
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = KvShift(&enc, kv, c.dst, c.src, c.count, c.rope);
  ASSERT_TRUE(s.ok()) << s.ToString();

  const size_t values = type == KvType::kQ8 ? c.row : row_bytes;
  const size_t scales = row_bytes - values;
  const size_t scales_off = KvScalesOffset(type, kv.capacity, c.row);
  std::vector<uint8_t> want(row_bytes);
  for (size_t t = 0; t < c.dst + c.count; ++t) {
    for (bool keys : {true, false}) {
      const uint8_t* base = (keys ? kv.k : kv.v)->contents;
      std::vector<uint8_t> got(base + t * values, base + (t + 1) * values);
      got.insert(got.end(), base + scales_off + t * scales, base + scales_off + (t + 1) * scales);
      reference::KvReadRow(host, keys ? host.k_pages : host.v_pages, t, want.data());
      SCOPED_TRACE(::testing::Message() << (keys ? "K" : "V") << " row " << t);
      if (keys && t >= c.dst && c.rope.head_dim != 0) {
        ExpectReencodedRowClose(type, c.row, c.head_dim, got, want);
      } else {
        ASSERT_EQ(got, want);  // moved (or left) as stored
      }
    }
  }
}

std::string ShiftName(const ::testing::TestParamInfo<Param>& info) {
  const ShiftCase& c = std::get<0>(info.param);
  return "d" + std::to_string(c.head_dim) + "_rope" + std::to_string(c.rope.head_dim) + "_" +
         std::to_string(c.src) + "to" + std::to_string(c.dst) + "_n" + std::to_string(c.count) +
         "_" + KvTypeName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Windows, MetalKvShiftTest,
    ::testing::Combine(::testing::Values(
                           // Two heads of 8 (q8: Hadamard basis), neox; the rows fit the gap.
                           ShiftCase{16, 8, {8, 10000.0f, RopeStyle::kNeox}, 4, 24, 12},
                           // Three heads of 12 (q8 as stored), interleaved; moved in steps of 5.
                           ShiftCase{36, 12, {12, 500000.0f, RopeStyle::kInterleaved}, 3, 8, 12},
                           // K without rope: copied as stored.
                           ShiftCase{16, 8, {}, 0, 1, 9}),
                       ::testing::Values(KvType::kF32, KvType::kF16, KvType::kQ8)),
    ShiftName);

TEST(MetalKvShiftErrors, RefusesBadRanges) {
  TestEncoder enc;
  DeviceKvView kv;
  kv.type = KvType::kF16;
  kv.row_stride = 16;
  kv.head_dim = 8;
  kv.capacity = 16;
  kv.k = enc.NewBuffer(KvBufferBytes(kv.type, 16, 16, 8));
  kv.v = enc.NewBuffer(KvBufferBytes(kv.type, 16, 16, 8));
  const KvRope rope{8, 10000.0f, RopeStyle::kNeox};
  // Upwards, past the cache, a rope head that does not divide the row.
  EXPECT_EQ(KvShift(&enc, kv, 4, 2, 3, rope).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KvShift(&enc, kv, 2, 10, 8, rope).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KvShift(&enc, kv, 0, 2, 3, KvRope{6, 10000.0f, RopeStyle::kNeox}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(enc.dispatches(Pipeline::kKvShift), 0u);
}

}  // namespace
}  // namespace pocket::metal
