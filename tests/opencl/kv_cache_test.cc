// The device KV cache's sliding window, serialized rows and byte counts
// against the CPU backend's KvCache on the same rows: the CPU cache is
// filled by its own KvAppend, its serialized rows are read into the device
// cache, and both then drop the same positions and write their rows again.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/kv_cache.h"
#include "backends/cpu/ops.h"
#include "backends/opencl/kv_cache.h"
#include "gpu/gpu_test_util.h"
#include "opencl/opencl_test_util.h"
#include "util/fp16.h"

namespace pocket::opencl {
namespace {

using cpu::KvCache;
using gpu::testing::ExpectReencodedRowClose;
using testing::RandomFloats;
using testing::TestContext;

constexpr size_t kPageTokens = 16;
constexpr size_t kMaxTokens = 128;

// Layers of several shapes: head_dim 8 (q8 rows rotated into the Hadamard
// basis), a layer without KV, head_dim 12 with interleaved rope (q8 rows
// stored as they are), and a layer whose K carries no rope.
const std::vector<size_t> kRows = {16, 0, 36, 16};
const std::vector<size_t> kHeadDims = {8, 0, 12, 8};
const std::vector<KvRope> kRope = {
    {8, 10000.0f, RopeStyle::kNeox}, {}, {12, 500000.0f, RopeStyle::kInterleaved}, {}};

std::vector<uint8_t> Serialized(const KvCache& cache, size_t n) {
  std::vector<uint8_t> bytes;
  cache.Write(
      n, [&](const uint8_t* data, size_t size) { bytes.insert(bytes.end(), data, data + size); });
  return bytes;
}

std::vector<uint8_t> Serialized(const DeviceKvCache& cache, size_t n) {
  std::vector<uint8_t> bytes;
  const Status s = cache.Write(
      n, [&](const uint8_t* data, size_t size) { bytes.insert(bytes.end(), data, data + size); });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return bytes;
}

// A CPU cache holding n positions of random K and V rows in every layer.
void Fill(KvCache* cache, size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  ASSERT_TRUE(cache->Reserve(n).ok());
  for (size_t l = 0; l < kRows.size(); ++l) {
    if (kRows[l] == 0) continue;
    const std::vector<float> k = RandomFloats(n * kRows[l], rng, -2.0f, 2.0f);
    const std::vector<float> v = RandomFloats(n * kRows[l], rng, -2.0f, 2.0f);
    cpu::KvAppend(cache->View(static_cast<int>(l)), 0, k.data(), v.data(), n);
  }
}

// A device cache holding the rows the CPU cache serializes.
void CopyToDevice(const std::vector<uint8_t>& bytes, size_t n, DeviceKvCache* device) {
  Status s = device->Validate(n, bytes.data(), bytes.size());
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(device->Reserve(n).ok());
  s = device->Read(n, bytes.data());
  ASSERT_TRUE(s.ok()) << s.ToString();
}

struct DropCase {
  size_t begin, count, n;
};

using Param = std::tuple<DropCase, KvType>;

class DeviceKvDropTest : public ::testing::TestWithParam<Param> {};

TEST_P(DeviceKvDropTest, MatchesTheCpuCache) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  const DropCase c = std::get<0>(GetParam());
  const KvType type = std::get<1>(GetParam());
  KvCache cpu_cache(kRows, kHeadDims, type, kPageTokens, kMaxTokens);
  Fill(&cpu_cache, c.n, static_cast<unsigned>(c.begin * 31 + c.count));
  const std::vector<uint8_t> before = Serialized(cpu_cache, c.n);

  DeviceKvCache device(ctx, kRows, kHeadDims, type, kPageTokens, kMaxTokens);
  CopyToDevice(before, c.n, &device);
  // The device holds the CPU's bytes exactly, whatever its own layout.
  ASSERT_EQ(Serialized(device, c.n), before);

  cpu_cache.Drop(c.begin, c.count, c.n, kRope);
  const Status s = device.Drop(c.begin, c.count, c.n, kRope);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const size_t kept = c.n - c.count;
  const std::vector<uint8_t> want = Serialized(cpu_cache, kept);
  const std::vector<uint8_t> got = Serialized(device, kept);
  ASSERT_EQ(got.size(), want.size());

  // Rows before `begin`, V rows and K rows without rope move as stored:
  // their bytes are equal. Re-encoded K rows go through the same float
  // operations on both backends (the host computes the rotation's cos and
  // sin for the device with the CPU's formula), except that the compiler
  // may fuse the CPU's a*c - b*s into one rounding (tests/backends/
  // rope_test.cc) where the device, with FP_CONTRACT OFF, rounds twice.
  size_t offset = 0;
  for (size_t l = 0; l < kRows.size(); ++l) {
    if (kRows[l] == 0) continue;
    const size_t row = KvRowBytes(type, kRows[l], kHeadDims[l]);
    for (size_t i = 0; i < 2 * kept; ++i, offset += row) {
      const bool reencoded = i < kept && i >= c.begin && kRope[l].head_dim != 0;
      const std::vector<uint8_t> w(want.begin() + offset, want.begin() + offset + row);
      const std::vector<uint8_t> g(got.begin() + offset, got.begin() + offset + row);
      SCOPED_TRACE(::testing::Message()
                   << "layer " << l << (i < kept ? " K" : " V") << " row " << i % kept);
      if (!reencoded) {
        ASSERT_EQ(g, w);
      } else {
        ExpectReencodedRowClose(type, kRows[l], kHeadDims[l], g, w);
      }
    }
  }
}

std::string DropName(const ::testing::TestParamInfo<Param>& info) {
  const DropCase& c = std::get<0>(info.param);
  return "begin" + std::to_string(c.begin) + "_count" + std::to_string(c.count) + "_n" +
         std::to_string(c.n) + "_" + KvTypeName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Windows, DeviceKvDropTest,
    ::testing::Combine(::testing::Values(DropCase{4, 20, 40},   // the rows moved fit the gap
                                         DropCase{3, 5, 40},    // they do not: moved in steps
                                         DropCase{0, 1, 33},    // no sinks, a step of one
                                         DropCase{6, 10, 16}),  // nothing after the range
                       ::testing::Values(KvType::kF32, KvType::kF16, KvType::kQ8)),
    DropName);

class DeviceKvRowsTest : public ::testing::TestWithParam<KvType> {};

TEST_P(DeviceKvRowsTest, ValidateRefusesWhatTheCpuCacheRefuses) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  const KvType type = GetParam();
  constexpr size_t n = 9;
  KvCache cpu_cache(kRows, kHeadDims, type, kPageTokens, kMaxTokens);
  Fill(&cpu_cache, n, 7);
  const std::vector<uint8_t> good = Serialized(cpu_cache, n);
  DeviceKvCache device(ctx, kRows, kHeadDims, type, kPageTokens, kMaxTokens);
  ASSERT_EQ(device.SerializedBytes(n), good.size());
  EXPECT_TRUE(device.Validate(n, good.data(), good.size()).ok());

  // Too short, too long, a size for other positions.
  for (const size_t size : {good.size() - 1, good.size() + 1}) {
    std::vector<uint8_t> bytes(good);
    bytes.resize(size);
    const Status want = cpu_cache.Validate(n, bytes.data(), bytes.size());
    const Status got = device.Validate(n, bytes.data(), bytes.size());
    EXPECT_EQ(got.code(), StatusCode::kCorruptFile);
    EXPECT_EQ(got.ToString(), want.ToString());
  }

  // A value that is not finite in layer 2's V row of position 5: an f32
  // NaN, an f16 infinity, a q8 head scale that is NaN.
  const size_t row0 = KvRowBytes(type, kRows[0], kHeadDims[0]);
  const size_t row2 = KvRowBytes(type, kRows[2], kHeadDims[2]);
  const size_t at = 2 * n * row0 + (n + 5) * row2;
  std::vector<uint8_t> bad(good);
  if (type == KvType::kF32) {
    const float nan = std::nanf("");
    std::memcpy(bad.data() + at + 4 * 7, &nan, 4);
  } else if (type == KvType::kF16) {
    const uint16_t inf = 0x7c00;
    std::memcpy(bad.data() + at + 2 * 7, &inf, 2);
  } else {
    const uint16_t nan = 0x7e00;
    std::memcpy(bad.data() + at + kRows[2] + 2 * 1, &nan, 2);
  }
  const Status want = cpu_cache.Validate(n, bad.data(), bad.size());
  const Status got = device.Validate(n, bad.data(), bad.size());
  EXPECT_EQ(want.code(), StatusCode::kCorruptFile);
  EXPECT_EQ(got.ToString(), want.ToString());
}

TEST_P(DeviceKvRowsTest, ReadThenWriteGivesTheBytesBack) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  const KvType type = GetParam();
  constexpr size_t n = 37;
  KvCache cpu_cache(kRows, kHeadDims, type, kPageTokens, kMaxTokens);
  Fill(&cpu_cache, n, 11);
  const std::vector<uint8_t> bytes = Serialized(cpu_cache, n);
  // Grown across the read: the rows land past a growth step's copy.
  DeviceKvCache device(ctx, kRows, kHeadDims, type, /*grow_tokens=*/8, kMaxTokens);
  CopyToDevice(bytes, n, &device);
  ASSERT_TRUE(device.Reserve(n + 40).ok());
  EXPECT_EQ(Serialized(device, n), bytes);
  // Fewer positions: the first rows of each layer's K and V.
  KvCache shorter(kRows, kHeadDims, type, kPageTokens, kMaxTokens);
  ASSERT_TRUE(shorter.Reserve(5).ok());
  shorter.Read(5, Serialized(device, 5).data());
  EXPECT_EQ(Serialized(shorter, 5), Serialized(cpu_cache, 5));

  // Rows beyond what is reserved are refused, not read or written.
  DeviceKvCache empty(ctx, kRows, kHeadDims, type, kPageTokens, kMaxTokens);
  EXPECT_EQ(empty.Read(n, bytes.data()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.Write(n, [](const uint8_t*, size_t) {}).code(), StatusCode::kInvalidArgument);
}

TEST_P(DeviceKvRowsTest, ByteCountsMatchTheCpuPages) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  const KvType type = GetParam();
  const KvCache cpu_cache(kRows, kHeadDims, type, kPageTokens, kMaxTokens);
  DeviceKvCache device(ctx, kRows, kHeadDims, type, kPageTokens, kMaxTokens);
  // A growth step costs what a CPU page of as many positions costs: both
  // hold KvRowBytes per position, K and V, of every layer.
  EXPECT_EQ(device.step_tokens(), kPageTokens);
  EXPECT_EQ(device.step_bytes(), cpu_cache.page_bytes());
  for (size_t n : {1, 16, 17, 100}) EXPECT_EQ(device.BytesFor(n), cpu_cache.BytesFor(n)) << n;

  EXPECT_EQ(device.bytes(), 0u);
  ASSERT_TRUE(device.Reserve(20, 20).ok());
  EXPECT_EQ(device.capacity(), 32u);
  EXPECT_EQ(device.bytes(), device.BytesFor(20));
  // Doubling would take 64 positions; the limit holds it to 48.
  ASSERT_TRUE(device.Reserve(33, 48).ok());
  EXPECT_EQ(device.capacity(), 48u);
  EXPECT_EQ(device.bytes(), device.BytesFor(48));
  // Without a limit it doubles, up to the context.
  ASSERT_TRUE(device.Reserve(49).ok());
  EXPECT_EQ(device.capacity(), 96u);
  ASSERT_TRUE(device.Reserve(97).ok());
  EXPECT_EQ(device.capacity(), kMaxTokens);
  EXPECT_EQ(device.bytes(), device.BytesFor(kMaxTokens));
}

INSTANTIATE_TEST_SUITE_P(Types, DeviceKvRowsTest,
                         ::testing::Values(KvType::kF32, KvType::kF16, KvType::kQ8),
                         [](const ::testing::TestParamInfo<KvType>& info) {
                           return std::string(KvTypeName(info.param));
                         });

TEST(DeviceKvShift, RefusesBadRanges) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  DeviceKvCache device(ctx, {16}, {8}, KvType::kF16, kPageTokens, kMaxTokens);
  ASSERT_TRUE(device.Reserve(16).ok());
  const KvRope rope{8, 10000.0f, RopeStyle::kNeox};
  // Upwards, past the reserved positions, a rope head that does not divide
  // the row.
  EXPECT_EQ(KvShift(ctx, device.View(0), 4, 2, 3, rope).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KvShift(ctx, device.View(0), 2, 10, 8, rope).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(KvShift(ctx, device.View(0), 0, 2, 3, KvRope{6, 10000.0f, RopeStyle::kNeox}).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pocket::opencl
