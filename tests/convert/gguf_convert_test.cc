// GGUF to .pocket: the config, tensors kept bit for bit in their types,
// Q4_1 pairs that become g64, requantized types with their errors, refused
// types and architectures, and both tokenizer kinds.
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "convert/converter.h"
#include "convert/gguf_import.h"
#include "convert/gguf_stories.h"
#include "convert/gguf_writer.h"
#include "format/model_config.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace pocket {
namespace {

using namespace testing_gguf;  // NOLINT
using testing_util::DataPath;
using testing_util::MakeTempDir;
using testing_util::ReadTensor;
using testing_util::WriteFile;

// Writes `gguf` to a temp file and converts it; the .pocket file's path.
StatusOr<std::string> Convert(const std::string& gguf, QuantOptions q,
                              ConvertStats* stats = nullptr) {
  const std::string dir = MakeTempDir("gguf");
  WriteFile(dir + "/model.gguf", gguf);
  ConvertOptions options;
  options.quant = q;
  auto s = ConvertModel(dir + "/model.gguf", dir + "/model.pocket", options);
  if (!s.ok()) return s.status();
  if (stats) *stats = *s;
  return dir + "/model.pocket";
}

QuantOptions KeepTypes() {
  QuantOptions q;
  q.keep_source_types = true;
  return q;
}

std::unique_ptr<PocketFile> Open(const std::string& path) {
  auto f = PocketFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(f).value() : nullptr;
}

// The GGUF's own values of every tensor (ggml's dequantization, written in
// the test writer), by .pocket name.
std::map<std::string, std::vector<float>> GgufValues(uint32_t matrix_type, StoriesArch arch) {
  std::map<std::string, std::vector<float>> out;
  const auto tensors =
      testing_util::ParseF32Safetensors(DataPath("stories260K-hf/model.safetensors"));
  for (const auto& [hf, t] : tensors) {
    std::vector<float> v = t.values;
    const std::string name = MapHfTensorName(hf);
    const uint64_t rows = t.shape.size() == 2 ? t.shape[0] : 1, cols = t.shape.back();
    const bool q = name.find("attn_q.weight") != std::string::npos;
    const bool k = name.find("attn_k.weight") != std::string::npos;
    if (arch == StoriesArch::kLlama && (q || k)) v = PermuteQk(v, rows, cols, q ? 8 : 4);
    const uint32_t type = t.shape.size() == 2 && cols % 32 == 0 ? matrix_type : kGgmlF32;
    if (type == kGgmlQ8_0 || type == kGgmlQ4_0 || type == kGgmlQ4_1) {
      v = Dequantize(type, Encode(type, v), v.size());
    } else if (type == kGgmlF16) {
      for (float& x : v) x = F16ToF32(F32ToF16(x));
    } else if (type == kGgmlBF16) {
      for (float& x : v) x = BF16ToF32(F32ToBF16(x));
    }
    out[name] = v;
  }
  return out;
}

// How many of `got` differ from `want` in their bits. ggml's Q4_0 value
// (q - 8)·d is -0 where q = 8 and d < 0; .pocket's q4 computes q·d + min,
// and x + (-x) is +0, so a zero's sign is the one difference allowed.
size_t BitDifferences(const std::vector<float>& got, const std::vector<float>& want) {
  size_t n = got.size() == want.size() ? 0 : std::max(got.size(), want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (std::memcmp(&got[i], &want[i], 4) != 0 && !(got[i] == 0.0f && want[i] == 0.0f)) ++n;
  }
  return n;
}

TEST(GgufConvert, LlamaConfigAndInterleavedRope) {
  ConvertStats stats;
  auto path = Convert(StoriesGguf(StoriesArch::kLlama), KeepTypes(), &stats);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto file = Open(*path);
  ASSERT_NE(file, nullptr);
  auto c = ParseModelConfig(std::string(file->config_json()));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, "llama");
  EXPECT_EQ(c->n_layers, 5);
  EXPECT_EQ(c->hidden, 64);
  EXPECT_EQ(c->ffn, 172);
  EXPECT_EQ(c->n_heads, 8);
  EXPECT_EQ(c->n_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->vocab, 512);
  EXPECT_EQ(c->context, 512);
  EXPECT_EQ(c->rope_style, RopeStyle::kInterleaved);
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-5);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_EQ(c->bos_id, 1);
  EXPECT_EQ(c->eos_id, 2);
  EXPECT_TRUE(c->add_bos);
  EXPECT_EQ(c->chat_template_kind, "none");
  EXPECT_EQ(stats.tensors, 47u);
  EXPECT_EQ(stats.conversions.at("F32 -> f32 (exact)"), 47u);
  EXPECT_TRUE(stats.requantized.empty());
  // The llama.cpp permutation undone by nothing: the rows stay interleaved,
  // which is llama2.c's order, so the tensors equal the llama2.c export's.
  ConvertOptions options;
  options.quant = *ParseQuantOptions("f32", "", 0);
  options.tokenizer_path = DataPath("stories260K/tok512.model");
  const std::string l2c = MakeTempDir("gguf") + "/l2c.pocket";
  ASSERT_TRUE(ConvertModel(DataPath("stories260K/stories260K.bin"), l2c, options).ok());
  auto reference = Open(l2c);
  ASSERT_NE(reference, nullptr);
  for (const TensorInfo& t : reference->tensors()) {
    EXPECT_EQ(ReadTensor(*file, t.name), ReadTensor(*reference, t.name)) << t.name;
  }
}

TEST(GgufConvert, Qwen2KeepsHalvesAndBiases) {
  auto path = Convert(StoriesGguf(StoriesArch::kQwen2), KeepTypes());
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto file = Open(*path);
  ASSERT_NE(file, nullptr);
  auto c = ParseModelConfig(std::string(file->config_json()));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->architecture, "qwen2");
  EXPECT_EQ(c->rope_style, RopeStyle::kNeox);
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_NE(file->FindTensor("blk.4.attn_v.bias"), nullptr);
}

struct TypeCase {
  uint32_t ggml;
  DType dtype;
  uint32_t group;
  const char* name;
};

class GgufLossless : public ::testing::TestWithParam<TypeCase> {};

// Every matrix's stored values equal ggml's dequantization of the GGUF's
// bytes bit for bit, in the rows16 layout and row-major.
TEST_P(GgufLossless, StoredValuesAreTheGgufValues) {
  const TypeCase tc = GetParam();
  const auto want = GgufValues(tc.ggml, StoriesArch::kLlama);
  for (TensorLayout layout : {TensorLayout::kRows16, TensorLayout::kRowMajor}) {
    QuantOptions q = KeepTypes();
    q.layout = layout;
    ConvertStats stats;
    auto path = Convert(StoriesGguf(StoriesArch::kLlama, tc.ggml), q, &stats);
    ASSERT_TRUE(path.ok()) << path.status().ToString();
    EXPECT_TRUE(stats.requantized.empty());
    auto file = Open(*path);
    ASSERT_NE(file, nullptr);
    const TensorInfo* attn_q = file->FindTensor("blk.0.attn_q.weight");
    ASSERT_NE(attn_q, nullptr);
    EXPECT_EQ(attn_q->dtype, tc.dtype);
    EXPECT_EQ(attn_q->group, tc.group);
    for (const auto& [name, values] : want) {
      EXPECT_EQ(BitDifferences(ReadTensor(*file, name), values), 0u) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GgufLossless,
                         ::testing::Values(TypeCase{kGgmlF32, DType::kF32, 0, "F32"},
                                           TypeCase{kGgmlF16, DType::kF16, 0, "F16"},
                                           TypeCase{kGgmlBF16, DType::kBF16, 0, "BF16"},
                                           TypeCase{kGgmlQ8_0, DType::kQ8, 32, "Q8_0"},
                                           TypeCase{kGgmlQ4_0, DType::kQ4, 32, "Q4_0"},
                                           TypeCase{kGgmlQ4_1, DType::kQ4, 32, "Q4_1"}),
                         [](const ::testing::TestParamInfo<TypeCase>& info) {
                           return std::string(info.param.name);
                         });

// A tiny qwen3 GGUF: 1 layer, hidden 256, 4/2 heads of 64, ffn 256, vocab
// of the 256 byte tokens, with its matrices written by `matrix`.
std::string TinyQwen3(
    const std::function<void(GgufWriter*, const std::string&, uint64_t, uint64_t)>& matrix) {
  GgufWriter w;
  w.Str("general.architecture", "qwen3");
  w.U32("qwen3.block_count", 1);
  w.U32("qwen3.context_length", 256);
  w.U32("qwen3.embedding_length", 256);
  w.U32("qwen3.feed_forward_length", 256);
  w.U32("qwen3.attention.head_count", 4);
  w.U32("qwen3.attention.head_count_kv", 2);
  w.U32("qwen3.attention.key_length", 64);
  w.F32("qwen3.rope.freq_base", 1e6f);
  w.F32("qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b)
    tokens.push_back(tok::ToByteLevel(std::string(1, static_cast<char>(b))));
  w.Str("tokenizer.ggml.model", "gpt2");
  w.Str("tokenizer.ggml.pre", "qwen2");
  w.StrArray("tokenizer.ggml.tokens", tokens);
  w.StrArray("tokenizer.ggml.merges", {});
  w.U32("tokenizer.ggml.eos_token_id", 0);
  matrix(&w, "token_embd.weight", 256, 256);
  const std::vector<float> ones(256, 1.0f);
  w.Tensor("output_norm.weight", {256}, kGgmlF32, F32Bytes(ones));
  w.Tensor("blk.0.attn_norm.weight", {256}, kGgmlF32, F32Bytes(ones));
  w.Tensor("blk.0.ffn_norm.weight", {256}, kGgmlF32, F32Bytes(ones));
  w.Tensor("blk.0.attn_q_norm.weight", {64}, kGgmlF32, F32Bytes(std::vector<float>(64, 1.0f)));
  w.Tensor("blk.0.attn_k_norm.weight", {64}, kGgmlF32, F32Bytes(std::vector<float>(64, 1.0f)));
  matrix(&w, "blk.0.attn_q.weight", 256, 256);
  matrix(&w, "blk.0.attn_k.weight", 128, 256);
  matrix(&w, "blk.0.attn_v.weight", 128, 256);
  matrix(&w, "blk.0.attn_output.weight", 256, 256);
  matrix(&w, "blk.0.ffn_gate.weight", 256, 256);
  matrix(&w, "blk.0.ffn_up.weight", 256, 256);
  matrix(&w, "blk.0.ffn_down.weight", 256, 256);
  return w.Finish();
}

uint64_t Seed(const std::string& name) { return std::hash<std::string>()(name); }

TEST(GgufConvert, Q4_1PairsSharingScaleAndMinBecomeG64) {
  std::map<std::string, std::vector<float>> want;
  const std::string g64 =
      TinyQwen3([&](GgufWriter* w, const std::string& name, uint64_t rows, uint64_t cols) {
        const auto v = RandomValues(rows * cols, Seed(name), 0.05f);
        const std::string bytes = QuantizeQ4_1(v, /*pair_groups=*/true);
        want[name] = Dequantize(kGgmlQ4_1, bytes, v.size());
        w->Tensor(name, {cols, rows}, kGgmlQ4_1, bytes);
      });
  const std::string g32 =
      TinyQwen3([&](GgufWriter* w, const std::string& name, uint64_t rows, uint64_t cols) {
        const auto v = RandomValues(rows * cols, Seed(name), 0.05f);
        w->Tensor(name, {cols, rows}, kGgmlQ4_1, QuantizeQ4_1(v));
      });
  ConvertStats stats64, stats32;
  auto p64 = Convert(g64, KeepTypes(), &stats64);
  auto p32 = Convert(g32, KeepTypes(), &stats32);
  ASSERT_TRUE(p64.ok()) << p64.status().ToString();
  ASSERT_TRUE(p32.ok()) << p32.status().ToString();
  EXPECT_EQ(stats64.conversions.at("Q4_1 -> q4 g64 (exact)"), 8u);
  EXPECT_EQ(stats32.conversions.at("Q4_1 -> q4 g32 (exact)"), 8u);
  EXPECT_LT(stats64.file_bytes, stats32.file_bytes);
  auto file = Open(*p64);
  ASSERT_NE(file, nullptr);
  for (const auto& [name, values] : want) {
    EXPECT_EQ(file->FindTensor(name)->group, 64u) << name;
    EXPECT_EQ(BitDifferences(ReadTensor(*file, name), values), 0u) << name;
  }
}

TEST(GgufConvert, RequestedTypeMatchingTheSourceIsKept) {
  const std::string gguf =
      TinyQwen3([](GgufWriter* w, const std::string& name, uint64_t rows, uint64_t cols) {
        w->Tensor(name, {cols, rows}, kGgmlQ4_0,
                  QuantizeQ4_0(RandomValues(rows * cols, Seed(name), 0.05f)));
      });
  ConvertStats stats;
  auto path = Convert(gguf, *ParseQuantOptions("q4", "", 32), &stats);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(stats.conversions.at("Q4_0 -> q4 g32 (exact)"), 8u);
  EXPECT_TRUE(stats.requantized.empty());
  // Asking for another type requantizes and reports the error.
  path = Convert(gguf, *ParseQuantOptions("q8", "", 0), &stats);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(stats.conversions.at("Q4_0 -> q8 g32 (requantized)"), 8u);
  ASSERT_EQ(stats.requantized.size(), 8u);
  for (const RequantizedTensor& r : stats.requantized) {
    EXPECT_EQ(r.from, "Q4_0");
    EXPECT_EQ(r.to, "q8 g32");
    EXPECT_GT(r.max_rel_error, 0.0);
    EXPECT_LT(r.max_rel_error, 1.0 / 127);
    EXPECT_GT(r.rms_rel_error, 0.0);
    EXPECT_LT(r.rms_rel_error, 1.0 / 127);
  }
  EXPECT_NE(FormatConvertSummary(stats, 0.0).find("blk.0.attn_q.weight: Q4_0 -> q8 g32, max error"),
            std::string::npos);
}

// Random K-quant and Q5 blocks with sane f16 scales at `scale_offsets`.
std::string RandomBlocks(uint64_t blocks, uint32_t block_bytes, std::vector<uint32_t> half_offsets,
                         uint64_t seed) {
  std::string s(blocks * block_bytes, '\0');
  uint64_t x = seed | 1;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 32);
  }
  for (uint64_t b = 0; b < blocks; ++b) {
    for (uint32_t off : half_offsets) {
      const uint16_t h = F32ToF16(0.001f * (1 + (b + off) % 7));
      std::memcpy(&s[b * block_bytes + off], &h, 2);
    }
  }
  return s;
}

struct RequantCase {
  uint32_t ggml;
  uint32_t block, bytes;
  std::vector<uint32_t> halves;
  const char* name;
};

class GgufRequantized : public ::testing::TestWithParam<RequantCase> {};

// Types .pocket has no dtype for become q8 by default, each tensor's error
// reported, and the stored values are within q8's bound of the GGUF's.
TEST_P(GgufRequantized, BecomeQ8WithTheirErrorReported) {
  const RequantCase rc = GetParam();
  const std::string gguf = TinyQwen3([&](GgufWriter* w, const std::string& name, uint64_t rows,
                                         uint64_t cols) {
    const uint32_t type = name == "token_embd.weight" ? kGgmlF32 : rc.ggml;
    if (type == kGgmlF32) {
      w->Tensor(name, {cols, rows}, type, F32Bytes(RandomValues(rows * cols, Seed(name), 0.05f)));
    } else {
      w->Tensor(name, {cols, rows}, type,
                RandomBlocks(rows * cols / rc.block, rc.bytes, rc.halves, Seed(name)));
    }
  });
  ConvertStats stats;
  auto path = Convert(gguf, KeepTypes(), &stats);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(stats.conversions.at(std::string(rc.name) + " -> q8 g32 (requantized)"), 7u);
  ASSERT_EQ(stats.requantized.size(), 7u);
  for (const RequantizedTensor& r : stats.requantized) {
    EXPECT_LE(r.max_rel_error, 0.5 / 127 + 1e-3) << r.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GgufRequantized,
                         ::testing::Values(RequantCase{kGgmlQ5_0, 32, 22, {0}, "Q5_0"},
                                           RequantCase{kGgmlQ5_1, 32, 24, {0, 2}, "Q5_1"},
                                           RequantCase{kGgmlQ4_K, 256, 144, {0, 2}, "Q4_K"},
                                           RequantCase{kGgmlQ5_K, 256, 176, {0, 2}, "Q5_K"},
                                           RequantCase{kGgmlQ6_K, 256, 210, {208}, "Q6_K"},
                                           RequantCase{kGgmlQ2_K, 256, 84, {80, 82}, "Q2_K"},
                                           RequantCase{kGgmlQ3_K, 256, 110, {108}, "Q3_K"}),
                         [](const ::testing::TestParamInfo<RequantCase>& info) {
                           return std::string(info.param.name);
                         });

// K-quant blocks whose scales make ggml's values easy to write down.
TEST(GgufDequantize, KQuantsFollowGgml) {
  GgufWriter w;
  // Q4_K: d = 1, dmin = 0.5, sub-block scales 1..8 and mins 0..7 packed in
  // 6 bits; code of weight i = i % 16.
  std::string q4k(144, '\0');
  const uint16_t one = F32ToF16(1.0f), half = F32ToF16(0.5f);
  std::memcpy(&q4k[0], &one, 2);
  std::memcpy(&q4k[2], &half, 2);
  uint8_t* sc = reinterpret_cast<uint8_t*>(&q4k[4]);
  for (int j = 0; j < 8; ++j) {
    const int s = j + 1, m = j;
    if (j < 4) {
      sc[j] = static_cast<uint8_t>(s);
      sc[j + 4] = static_cast<uint8_t>(m);
    } else {
      sc[j + 4] = static_cast<uint8_t>((s & 0xF) | ((m & 0xF) << 4));
      sc[j - 4] |= static_cast<uint8_t>((s >> 4) << 6);
      sc[j] |= static_cast<uint8_t>((m >> 4) << 6);
    }
  }
  for (int l = 0; l < 128; ++l) q4k[16 + l] = static_cast<char>((l % 16) | ((15 - l % 16) << 4));
  // Q6_K: d = 0.25, scales 1..16; 6-bit code of weight i = (i * 5) % 64.
  std::string q6k(210, '\0');
  uint8_t* ql = reinterpret_cast<uint8_t*>(&q6k[0]);
  uint8_t* qh = ql + 128;
  int8_t* s6 = reinterpret_cast<int8_t*>(ql + 192);
  for (int i = 0; i < 16; ++i) s6[i] = static_cast<int8_t>(i + 1);
  const uint16_t quarter = F32ToF16(0.25f);
  std::memcpy(&q6k[208], &quarter, 2);
  auto code6 = [](int i) { return (i * 5) % 64; };
  for (int n = 0; n < 2; ++n) {
    for (int l = 0; l < 32; ++l) {
      const int base = n * 128 + l;
      const int c1 = code6(base), c2 = code6(base + 32), c3 = code6(base + 64),
                c4 = code6(base + 96);
      ql[n * 64 + l] = static_cast<uint8_t>((c1 & 0xF) | ((c3 & 0xF) << 4));
      ql[n * 64 + l + 32] = static_cast<uint8_t>((c2 & 0xF) | ((c4 & 0xF) << 4));
      qh[n * 32 + l] =
          static_cast<uint8_t>((c1 >> 4) | ((c2 >> 4) << 2) | ((c3 >> 4) << 4) | ((c4 >> 4) << 6));
    }
  }
  w.Tensor("q4k", {256}, kGgmlQ4_K, q4k);
  w.Tensor("q6k", {256}, kGgmlQ6_K, q6k);
  const std::string bytes = w.Finish();
  auto file = GgufFile::FromMemory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto v4 = DequantizeGgufTensor(**file, *(*file)->FindTensor("q4k"));
  auto v6 = DequantizeGgufTensor(**file, *(*file)->FindTensor("q6k"));
  ASSERT_TRUE(v4.ok() && v6.ok());
  for (int i = 0; i < 256; ++i) {
    // Sub-block j = i / 32 (low nibbles for even j, high for odd).
    const int j = i / 32, l = i % 32, chunk = j / 2;
    const int code = j % 2 == 0 ? (chunk * 32 + l) % 16 : 15 - (chunk * 32 + l) % 16;
    EXPECT_EQ((*v4)[i], 1.0f * (j + 1) * code - 0.5f * j) << i;
    const int scale = i / 16 + 1;
    EXPECT_EQ((*v6)[i], 0.25f * scale * (code6(i) - 32)) << i;
  }
}

TEST(GgufConvert, RefusesTypesPocketDoesNotRead) {
  for (uint32_t type : {uint32_t{kGgmlQ8_K}, uint32_t{kGgmlIQ2_XXS}}) {
    const std::string gguf =
        TinyQwen3([&](GgufWriter* w, const std::string& name, uint64_t rows, uint64_t cols) {
          const uint32_t t = name == "blk.0.ffn_up.weight" ? type : kGgmlF32;
          const uint64_t block_bytes = t == kGgmlF32 ? 4 * 256 : type == kGgmlQ8_K ? 292 : 66;
          w->Tensor(name, {cols, rows}, t, std::string(rows * cols / 256 * block_bytes, '\0'));
        });
    auto s = Convert(gguf, KeepTypes());
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(s.status().message().find(type == kGgmlQ8_K ? "blk.0.ffn_up.weight (Q8_K)"
                                                          : "blk.0.ffn_up.weight (IQ2_XXS)"),
              std::string::npos)
        << s.status().ToString();
  }
}

TEST(GgufConvert, RefusesOtherArchitecturesByName) {
  GgufWriter w;
  w.Str("general.architecture", "gemma2");
  auto s = Convert(w.Finish(), KeepTypes());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("architecture 'gemma2' is not supported; supported: llama, "
                                      "qwen2, qwen3"),
            std::string::npos)
      << s.status().ToString();
}

}  // namespace
}  // namespace pocket
