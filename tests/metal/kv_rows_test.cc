// A Metal KV cache's rows serialized for session states (kv_rows.h):
// after kv_append through the shim, the exported rows are the reference
// cache's rows byte for byte (KvReadRow, layer by layer, K then V); they
// import into a cache of another capacity and export again unchanged; and
// validation refuses a wrong size and non-finite values. Heads of 12 values
// keep q8 rows out of the Hadamard basis, so every type compares exactly.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/kv_pages.h"
#include "backends/metal/kv_rows.h"
#include "backends/reference/ops.h"
#include "metal/metal_test_util.h"
#include "util/fp16.h"

namespace pocket::metal {
namespace {

using testing::RandomFloats;
using testing::TestEncoder;

const std::vector<size_t> kRows = {24, 0, 36};  // a layer without KV between
constexpr size_t kHeadDim = 12;
constexpr size_t kTokens = 7;

std::vector<DeviceKvView> NewCache(TestEncoder* enc, KvType type, size_t capacity) {
  std::vector<DeviceKvView> layers(kRows.size());
  for (size_t l = 0; l < kRows.size(); ++l) {
    layers[l].type = type;
    layers[l].row_stride = kRows[l];
    layers[l].head_dim = kHeadDim;
    layers[l].capacity = capacity;
    if (kRows[l] == 0) continue;
    layers[l].k = enc->NewBuffer(KvBufferBytes(type, capacity, kRows[l], kHeadDim));
    layers[l].v = enc->NewBuffer(KvBufferBytes(type, capacity, kRows[l], kHeadDim));
  }
  return layers;
}

std::vector<uint8_t> Export(const std::vector<DeviceKvView>& layers, size_t n) {
  std::vector<uint8_t> bytes;
  const Status s = ExportKvRows(layers, n, [&](const uint8_t* data, size_t size) {
    bytes.insert(bytes.end(), data, data + size);
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return bytes;
}

class MetalKvRowsTest : public ::testing::TestWithParam<KvType> {};

TEST_P(MetalKvRowsTest, ExportImportValidate) {
  const KvType type = GetParam();
  TestEncoder enc;
  std::mt19937 rng(21);
  const std::vector<DeviceKvView> cache = NewCache(&enc, type, kTokens + 5);
  std::vector<uint8_t> want;
  for (size_t l = 0; l < kRows.size(); ++l) {
    if (kRows[l] == 0) continue;
    const std::vector<float> k = RandomFloats(kTokens * kRows[l], rng);
    const std::vector<float> v = RandomFloats(kTokens * kRows[l], rng);
    const Status s =
        KvAppend(&enc, cache[l], 0, Span{enc.NewFloats(k), 0}, Span{enc.NewFloats(v), 0}, kTokens);
    ASSERT_TRUE(s.ok()) << s.ToString();
    // The reference's rows of the same values, one page per position.
    const size_t row_bytes = KvRowBytes(type, kRows[l], kHeadDim);
    std::vector<std::vector<uint8_t>> pages(2 * kTokens, std::vector<uint8_t>(row_bytes));
    std::vector<void*> k_pages, v_pages;
    for (size_t t = 0; t < kTokens; ++t) {
      k_pages.push_back(pages[t].data());
      v_pages.push_back(pages[kTokens + t].data());
    }
    KvView host;
    host.type = type;
    host.k_pages = k_pages.data();
    host.v_pages = v_pages.data();
    host.page_tokens = 1;
    host.row_stride = kRows[l];
    host.head_dim = kHeadDim;
    reference::KvAppend(host, 0, k.data(), v.data(), kTokens);
    std::vector<uint8_t> row(row_bytes);
    for (void* const* side : {host.k_pages, host.v_pages}) {
      for (size_t t = 0; t < kTokens; ++t) {
        reference::KvReadRow(host, side, t, row.data());
        want.insert(want.end(), row.begin(), row.end());
      }
    }
  }
  ASSERT_EQ(KvRowsBytes(cache, kTokens), want.size());
  const std::vector<uint8_t> exported = Export(cache, kTokens);
  ASSERT_EQ(exported, want);

  Status s = ValidateKvRows(cache, kTokens, exported.data(), exported.size());
  EXPECT_TRUE(s.ok()) << s.ToString();
  const std::vector<DeviceKvView> other = NewCache(&enc, type, kTokens);
  s = ImportKvRows(other, kTokens, exported.data());
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Export(other, kTokens), exported);
  EXPECT_EQ(ImportKvRows(other, kTokens + 1, exported.data()).code(), StatusCode::kInvalidArgument);

  EXPECT_EQ(ValidateKvRows(cache, kTokens, exported.data(), exported.size() - 1).code(),
            StatusCode::kCorruptFile);
  // A non-finite value (f32, f16) or scale (q8) in layer 2's first V row.
  std::vector<uint8_t> bad = exported;
  const size_t layer2 = 2 * kTokens * KvRowBytes(type, kRows[0], kHeadDim);
  const size_t v_row = layer2 + kTokens * KvRowBytes(type, kRows[2], kHeadDim);
  const size_t at = v_row + (type == KvType::kQ8 ? kRows[2] : 0);
  if (type == KvType::kF32) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(bad.data() + at, &nan, 4);
  } else {
    const uint16_t inf = 0x7C00;
    std::memcpy(bad.data() + at, &inf, 2);
  }
  s = ValidateKvRows(cache, kTokens, bad.data(), bad.size());
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_NE(s.message().find("layer 2 V row of position 0"), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Types, MetalKvRowsTest,
                         ::testing::Values(KvType::kF32, KvType::kF16, KvType::kQ8),
                         [](const ::testing::TestParamInfo<KvType>& info) {
                           return std::string(KvTypeName(info.param));
                         });

}  // namespace
}  // namespace pocket::metal
