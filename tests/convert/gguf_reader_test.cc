// The GGUF reader: every metadata type, tensor infos, alignment, and the
// malformed files it must refuse with a message naming what is wrong.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "convert/gguf_reader.h"
#include "convert/gguf_writer.h"

namespace pocket {
namespace {

using namespace testing_gguf;  // NOLINT

StatusOr<std::unique_ptr<GgufFile>> Parse(const std::string& bytes) {
  return GgufFile::FromMemory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// Expects `bytes` to be refused with a message containing `text`.
void ExpectRefused(const std::string& bytes, const std::string& text) {
  auto f = Parse(bytes);
  ASSERT_FALSE(f.ok()) << "expected: " << text;
  EXPECT_NE(f.status().message().find(text), std::string::npos) << f.status().ToString();
}

GgufWriter TwoTensors() {
  GgufWriter w;
  w.Str("general.architecture", "llama");
  w.U32("llama.block_count", 2);
  w.Tensor("a", {32, 2}, kGgmlF32, std::string(256, '\1'));
  w.Tensor("b", {64}, kGgmlQ8_0, std::string(68, '\2'));
  return w;
}

TEST(GgufReader, ReadsEveryValueType) {
  GgufWriter w;
  w.Scalar<uint8_t>("u8", kU8, 200);
  w.Scalar<int8_t>("i8", kI8, -100);
  w.Scalar<uint16_t>("u16", kU16, 60000);
  w.Scalar<int16_t>("i16", kI16, -30000);
  w.U32("u32", 4000000000u);
  w.I32("i32", -2000000000);
  w.F32("f32", 0.5f);
  w.Bool("bool", true);
  w.Str("str", "hello");
  w.Scalar<uint64_t>("u64", kU64, 1ull << 40);
  w.Scalar<int64_t>("i64", kI64, -(1ll << 40));
  w.Scalar<double>("f64", kF64, 0.25);
  w.Array<int32_t>("ints", kI32, {1, -2, 3});
  w.Array<float>("floats", kF32, {1.5f, 2.5f});
  w.StrArray("strs", {"x", "", "yz"});
  w.alignment = 64;
  w.Tensor("t", {32, 3}, kGgmlF16, std::string(192, '\0'));
  w.Tensor("u", {64}, kGgmlQ4_1, std::string(40, '\0'));
  const std::string bytes = w.Finish();
  auto f = Parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.data_offset() % 64, 0u);
  EXPECT_EQ(g.keys().size(), 16u);
  EXPECT_EQ(g.Find("u8")->u, 200u);
  EXPECT_EQ(g.Find("i8")->i, -100);
  EXPECT_EQ(g.Find("u16")->u, 60000u);
  EXPECT_EQ(g.Find("i16")->i, -30000);
  EXPECT_EQ(g.Find("u32")->u, 4000000000u);
  EXPECT_EQ(g.Find("i32")->i, -2000000000);
  EXPECT_EQ(g.Find("f32")->f, 0.5);
  EXPECT_EQ(g.Find("bool")->u, 1u);
  EXPECT_EQ(g.Find("str")->str, "hello");
  EXPECT_EQ(g.Find("u64")->u, 1ull << 40);
  EXPECT_EQ(g.Find("i64")->i, -(1ll << 40));
  EXPECT_EQ(g.Find("f64")->f, 0.25);
  int64_t x = 0;
  EXPECT_TRUE(g.Find("u32")->AsInt(&x));
  EXPECT_EQ(x, 4000000000ll);
  const GgufValue* ints = g.Find("ints");
  ASSERT_EQ(ints->count, 3u);
  EXPECT_EQ(ints->ArrayNumber(1), -2.0);
  EXPECT_EQ(g.Find("floats")->ArrayNumber(1), 2.5);
  EXPECT_EQ(g.Find("strs")->strings, (std::vector<std::string_view>{"x", "", "yz"}));
  ASSERT_EQ(g.tensors().size(), 2u);
  const GgufTensor* t = g.FindTensor("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Shape(), (std::vector<uint64_t>{3, 32}));
  EXPECT_EQ(t->nbytes, 192u);
  EXPECT_EQ(t->offset, g.data_offset());
  EXPECT_EQ(g.FindTensor("u")->offset, g.data_offset() + 192);
  EXPECT_EQ(g.FindTensor("u")->nbytes, 40u);
  EXPECT_EQ(GgmlTypeName(12), "Q4_K");
  EXPECT_EQ(GgmlTypeName(99), "type 99");
}

TEST(GgufReader, EveryTruncationIsRefused) {
  const std::string bytes = TwoTensors().Finish();
  ASSERT_TRUE(Parse(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto f = Parse(bytes.substr(0, n));
    EXPECT_FALSE(f.ok()) << n;
    if (!f.ok()) EXPECT_EQ(f.status().code(), StatusCode::kCorruptFile) << n;
  }
}

TEST(GgufReader, RefusesLyingHeaders) {
  ExpectRefused("GGUX\3\0\0\0", "not a GGUF file");
  {
    GgufWriter w = TwoTensors();
    w.version = 1;
    auto f = Parse(w.Finish());
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(f.status().message().find("GGUF version 1"), std::string::npos);
  }
  {
    GgufWriter w = TwoTensors();
    w.version = 0x03000000;
    ExpectRefused(w.Finish(), "big-endian");
  }
  {
    GgufWriter w = TwoTensors();
    w.tensor_count_delta = 1ll << 40;
    ExpectRefused(w.Finish(), "claims 1099511627778 tensors");
  }
  {
    GgufWriter w = TwoTensors();
    w.kv_count_delta = 1;  // the first tensor info is read as a pair
    ExpectRefused(w.Finish(), "past the end of the file");
  }
  {
    GgufWriter w = TwoTensors();
    w.kv_count_delta = -1;  // the last pair is read as a tensor name
    EXPECT_FALSE(Parse(w.Finish()).ok());
  }
}

TEST(GgufReader, RefusesBadMetadata) {
  {
    GgufWriter w;
    w.raw_kv().Str("key");
    w.raw_kv().Put<uint32_t>(kString);
    w.raw_kv().Put<uint64_t>(1ull << 62);  // a huge string
    w.kv_count_delta = 1;
    ExpectRefused(w.Finish(), "metadata 'key' is 4611686018427387904 bytes long");
  }
  {
    GgufWriter w;
    w.raw_kv().Str("key");
    w.raw_kv().Put<uint32_t>(13);
    w.kv_count_delta = 1;
    ExpectRefused(w.Finish(), "metadata 'key' has value type 13");
  }
  {
    GgufWriter w;
    w.ArrayHeader("nested", kArray, 1);
    auto f = Parse(w.Finish());
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(f.status().message().find("array of arrays"), std::string::npos);
  }
  {
    GgufWriter w;
    w.ArrayHeader("tokens", kString, 1ull << 40);
    ExpectRefused(w.Finish(), "claims 1099511627776 elements of type string");
  }
  {
    GgufWriter w;
    w.ArrayHeader("big", kU64, 1ull << 61);  // count * 8 overflows
    ExpectRefused(w.Finish(), "claims 2305843009213693952 elements of type uint64");
  }
  {
    GgufWriter w;
    w.U32("k", 1);
    w.U32("k", 2);
    ExpectRefused(w.Finish(), "metadata key 'k' appears twice");
  }
  {
    GgufWriter w;
    w.Scalar<uint8_t>("b", kBool, 7);
    ExpectRefused(w.Finish(), "is a bool holding 7");
  }
  {
    GgufWriter w;
    w.Scalar<uint64_t>("general.alignment", kU64, 64);
    ExpectRefused(w.Finish(), "general.alignment must be a uint32 power of two");
  }
  {
    GgufWriter w;
    w.alignment = 48;
    ExpectRefused(w.Finish(), "general.alignment must be a uint32 power of two");
  }
  {
    GgufWriter w;
    w.raw_kv().Str(std::string(300, 'k'));
    w.raw_kv().Put<uint32_t>(kU8);
    w.raw_kv().Put<uint8_t>(0);
    w.kv_count_delta = 1;
    ExpectRefused(w.Finish(), "metadata key #0 is 300 bytes long");
  }
}

TEST(GgufReader, RefusesBadTensorInfos) {
  {
    GgufWriter w;
    w.Tensor("t", {32, 2}, 99, std::string(256, '\0'));
    ExpectRefused(w.Finish(), "tensor 't' has ggml type 99, which ggml does not define");
  }
  {
    GgufWriter w;
    w.Tensor("t", {48}, kGgmlQ8_0, std::string(68, '\0'));
    ExpectRefused(w.Finish(), "is Q8_0, whose blocks of 32 weights do not divide its 48 columns");
  }
  {
    GgufWriter w;
    w.Tensor("t", {32, 0}, kGgmlF32, "");
    ExpectRefused(w.Finish(), "tensor 't' has dimension 1 = 0");
  }
  {
    GgufWriter w;
    w.Tensor("t", {1, 1, 1, 1, 1}, kGgmlF32, std::string(4, '\0'));
    ExpectRefused(w.Finish(), "tensor 't' has 5 dimensions");
  }
  {
    GgufWriter w;
    w.Tensor("t", {1ull << 30, 1ull << 30}, kGgmlF32, "");
    ExpectRefused(w.Finish(), "multiply to at most 2^48");
  }
  {
    GgufWriter w;
    w.Tensor("t", {32}, kGgmlF32, std::string(128, '\0'), 16);
    ExpectRefused(w.Finish(), "tensor 't''s data offset 16 is not a multiple of the alignment 32");
  }
  {
    GgufWriter w;
    w.Tensor("t", {32}, kGgmlF32, std::string(128, '\0'));
    w.Tensor("u", {32}, kGgmlF32, std::string(128, '\0'));
    std::string bytes = w.Finish();
    // u's info: name (8 + 1 bytes), dim count, one dim, type, then offset.
    const size_t info = bytes.find(std::string("\1\0\0\0\0\0\0\0u", 9));
    ASSERT_NE(info, std::string::npos);
    const uint64_t lie = 1ull << 40;
    std::memcpy(&bytes[info + 9 + 4 + 8 + 4], &lie, 8);
    ExpectRefused(bytes, "tensor 'u' (F32, 128 bytes at data offset 1099511627776) ends past");
  }
  {
    GgufWriter w;
    w.Tensor("t", {64}, kGgmlF32, std::string(256, '\0'));
    w.Tensor("u", {32}, kGgmlF32, std::string(128, '\0'), 128);
    ExpectRefused(w.Finish(),
                  "tensors 't' (data offset 0, 256 bytes) and 'u' (data offset 128) overlap");
  }
  {
    GgufWriter w;
    w.Tensor("t", {32}, kGgmlF32, std::string(128, '\0'));
    w.Tensor("t", {32}, kGgmlF32, std::string(128, '\0'));
    ExpectRefused(w.Finish(), "tensor 't' appears twice");
  }
  {
    GgufWriter w;
    w.Tensor(std::string(100, 'n'), {32}, kGgmlF32, std::string(128, '\0'));
    ExpectRefused(w.Finish(), "the name of tensor #0 is 100 bytes long; at most 63");
  }
}

}  // namespace
}  // namespace pocket
