// Synthetic models: determinism, preset shapes and the pocket-0.3b budget.
#include "convert/synth.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "format/model_config.h"

namespace pocket {
namespace {

using testing_util::DataPath;
using testing_util::MakeTempDir;
using testing_util::ReadFile;

std::string TokenizerFor(const std::string& preset) {
  return preset == "tiny-llama" ? DataPath("stories260K/tok512.model")
                                : DataPath("qwen3-tokenizer/tokenizer.json");
}

std::string Synthesize(const std::string& preset, uint64_t seed, const std::string& quant) {
  SynthOptions options{preset, seed, TokenizerFor(preset)};
  auto model = SynthesizeModel(options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return "";
  const std::string path = MakeTempDir("synth") + "/" + preset + ".pocket";
  auto stats = WritePocketModel(*model, *ParseQuantOptions(quant, "", 0), path, nullptr);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return ReadFile(path);
}

class SynthDeterminism : public ::testing::TestWithParam<const char*> {};

TEST_P(SynthDeterminism, SameSeedSameBytesOtherSeedOtherBytes) {
  const std::string a = Synthesize(GetParam(), 7, "q4");
  const std::string b = Synthesize(GetParam(), 7, "q4");
  const std::string c = Synthesize(GetParam(), 8, "q4");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "same seed gave different files";
  EXPECT_EQ(a.size(), c.size());
  EXPECT_FALSE(a == c) << "different seeds gave the same file";
  auto file = PocketFile::FromMemory(reinterpret_cast<const uint8_t*>(a.data()), a.size());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto config = ParseModelConfig(std::string((*file)->config_json()));
  ASSERT_TRUE(config.ok());
  auto preset = SynthPresetConfig(GetParam());
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(config->vocab, preset->vocab);
  EXPECT_EQ((*file)->tensors().size(), ExpectedTensors(*preset).size());
}

INSTANTIATE_TEST_SUITE_P(TinyPresets, SynthDeterminism,
                         ::testing::Values("tiny-qwen3", "tiny-llama"));

TEST(Synth, TinyQwen3HasTheQwen3Tokens) {
  SynthOptions options{"tiny-qwen3", 1, TokenizerFor("tiny-qwen3")};
  auto model = SynthesizeModel(options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = model->config;
  EXPECT_EQ(c.architecture, "qwen3");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.chat_template_kind, "qwen3");
  EXPECT_NE(c.chat_template.find("<|im_start|>"), std::string::npos);
  EXPECT_GE(c.eos_id, 0);
  EXPECT_LT(c.eos_id, 1024);
  EXPECT_FALSE(c.add_bos);
}

TEST(Synth, NormsAreNearOneAndWeightsNearZero) {
  SynthOptions options{"tiny-llama", 3, TokenizerFor("tiny-llama")};
  auto model = SynthesizeModel(options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  for (const SourceTensor& t : model->tensors) {
    auto v = t.load();
    ASSERT_TRUE(v.ok());
    double sum = 0, sq = 0;
    for (float x : *v) sum += x, sq += double(x) * x;
    const double mean = sum / v->size(), sd = std::sqrt(sq / v->size() - mean * mean);
    const bool norm = t.name.find("norm") != std::string::npos;
    EXPECT_NEAR(mean, norm ? 1.0 : 0.0, 0.01) << t.name;
    EXPECT_NEAR(sd, 0.02, 0.006) << t.name;
  }
}

TEST(Synth, ValueFormulaIsFixed) {
  // splitmix64 chain of (seed 0, stream 0, index 0), then four 16-bit
  // uniforms: recomputed here from the documented constants.
  auto mix = [](uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  const uint64_t r = mix(mix(0 ^ mix(0)) + 5);
  const int64_t s = (r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48);
  const double expected = (s + 2 - 131072) / 65536.0 * std::sqrt(3.0) * 0.02;
  EXPECT_NEAR(SynthValue(0, 0, 5, 0.02), expected, 1e-9);
}

TEST(Synth, Pocket03bShapeParametersAndSize) {
  auto c = SynthPresetConfig("pocket-0.3b");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->n_layers, 28);
  EXPECT_EQ(c->hidden, 896);
  EXPECT_EQ(c->n_heads, 14);
  EXPECT_EQ(c->n_kv_heads, 2);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->ffn, 2560);
  EXPECT_EQ(c->vocab, 65536);
  EXPECT_EQ(c->context, 40960);
  EXPECT_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->rms_eps, 1e-6);
  EXPECT_TRUE(c->tied_embeddings);
  // Per layer: q,o 896*896; k,v 128*896; gate,up,down 2560*896; norms
  // 2*896 + 2*64. Plus embeddings 65536*896 and the final norm.
  const uint64_t layer = 2 * 896 * 896 + 2 * 128 * 896 + 3 * 2560 * 896 + 2 * 896 + 2 * 64;
  const uint64_t params = 28 * layer + 65536ull * 896 + 896;
  EXPECT_EQ(ParameterCount(*c), params);
  EXPECT_EQ(params, 302830976u);  // ~303M
  // q4 g64: 4.5 bits per matrix weight; norms f32; each tensor 64-aligned.
  auto bytes = TensorDataBytes(*c, *ParseQuantOptions("q4", "", 64));
  ASSERT_TRUE(bytes.ok());
  const uint64_t matrix_weights = params - 28 * (2 * 896 + 2 * 64) - 896;
  const uint64_t norm_bytes = 4 * (28 * (2 * 896 + 2 * 64) + 896);
  EXPECT_GE(*bytes, matrix_weights * 9 / 16 + norm_bytes);
  EXPECT_LE(*bytes, matrix_weights * 9 / 16 + norm_bytes + 64 * 400);
  // Leaves room for the tokenizer and headers under the 173 MB target.
  EXPECT_LT(*bytes, 171'000'000u);
}

TEST(Synth, UnknownPresetListsThePresets) {
  auto c = SynthPresetConfig("gpt-5");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("pocket-0.3b"), std::string::npos);
  EXPECT_NE(c.status().message().find("tiny-llama"), std::string::npos);
}

}  // namespace
}  // namespace pocket

namespace pocket {
namespace {

// q4 and q8 matrices whose rows 16 divides are written rows16 by default
// and row-major on request, with the same dequantized values; everything
// else (norms, f16 fallbacks, and tiny-llama's 172-row ffn_gate/ffn_up)
// stays row-major.
struct LayoutCase {
  const char* preset;
  const char* quant;
};

class SynthLayout : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(SynthLayout, Rows16ByDefaultRowMajorOnRequest) {
  const LayoutCase& param = GetParam();
  DType want_dtype;
  ASSERT_TRUE(ParseDType(param.quant, &want_dtype));
  SynthOptions options{param.preset, 5, TokenizerFor(param.preset)};
  auto model = SynthesizeModel(options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  QuantOptions packed = *ParseQuantOptions(param.quant, "", 32);
  QuantOptions planar = packed;
  ASSERT_TRUE(ParseLayoutOption("row_major", &planar).ok());
  EXPECT_FALSE(ParseLayoutOption("rows8", &planar).ok());
  const std::string dir = MakeTempDir("synth_layout");
  ASSERT_TRUE(WritePocketModel(*model, packed, dir + "/packed.pocket", nullptr).ok());
  ASSERT_TRUE(WritePocketModel(*model, planar, dir + "/planar.pocket", nullptr).ok());
  const std::string a = ReadFile(dir + "/packed.pocket"), b = ReadFile(dir + "/planar.pocket");
  auto fa = PocketFile::FromMemory(reinterpret_cast<const uint8_t*>(a.data()), a.size());
  auto fb = PocketFile::FromMemory(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  ASSERT_TRUE(fa.ok() && fb.ok());
  EXPECT_EQ(a.size(), b.size());
  size_t rows16 = 0, quantized_row_major = 0;
  for (const TensorInfo& t : (*fa)->tensors()) {
    const TensorInfo* u = (*fb)->FindTensor(t.name);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->layout, TensorLayout::kRowMajor) << t.name;
    const bool expect_rows16 = t.dtype == want_dtype && t.rows() % 16 == 0;
    EXPECT_EQ(t.layout == TensorLayout::kRows16, expect_rows16) << t.name;
    rows16 += expect_rows16;
    quantized_row_major += t.dtype == want_dtype && !expect_rows16;
    std::vector<float> ra(t.cols()), rb(t.cols());
    for (uint64_t r = 0; r < t.rows(); r += 7) {
      DequantizeRow((*fa)->TensorData(t), t.dtype, t.layout, t.rows(), t.cols(), t.group, r,
                    ra.data());
      DequantizeRow((*fb)->TensorData(*u), u->dtype, u->layout, u->rows(), u->cols(), u->group, r,
                    rb.data());
      ASSERT_EQ(ra, rb) << t.name << " row " << r;
    }
  }
  EXPECT_GT(rows16, 0u);
  // tiny-llama's ffn is 172 wide: its gate and up matrices cannot be rows16.
  if (std::string(param.preset) == "tiny-llama") EXPECT_GT(quantized_row_major, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    QuantsAndPresets, SynthLayout,
    ::testing::Values(LayoutCase{"tiny-qwen3", "q4"}, LayoutCase{"tiny-qwen3", "q8"},
                      LayoutCase{"tiny-llama", "q4"}, LayoutCase{"tiny-llama", "q8"}),
    [](const ::testing::TestParamInfo<LayoutCase>& info) {
      std::string name = std::string(info.param.preset) + "_" + info.param.quant;
      for (char& c : name) c = c == '-' ? '_' : c;
      return name;
    });

// The storage the converter picks: rows16 for q4 and q8 matrices of whole
// 16-row blocks (leading dims count as rows) unless row_major is asked for.
TEST(ChooseStorage, Rows16ForQ4AndQ8WithRowsAMultipleOf16) {
  for (const char* quant : {"q4", "q8"}) {
    SCOPED_TRACE(quant);
    QuantOptions q = *ParseQuantOptions(quant, "", 0);
    const TensorStorage a = ChooseStorage("blk.0.attn_q.weight", {48, 64}, q);
    EXPECT_EQ(a.layout, TensorLayout::kRows16);
    EXPECT_EQ(DTypeName(a.dtype), std::string(quant));
    EXPECT_EQ(ChooseStorage("blk.0.attn_q.weight", {2, 8, 64}, q).layout, TensorLayout::kRows16);
    EXPECT_EQ(ChooseStorage("token_embd.weight", {512, 64}, q).layout, TensorLayout::kRows16);
    EXPECT_EQ(ChooseStorage("blk.0.ffn_up.weight", {172, 64}, q).layout, TensorLayout::kRowMajor);
    // f16 fallback (cols not a multiple of the group) and norms: row-major.
    const TensorStorage f = ChooseStorage("blk.0.ffn_down.weight", {64, 172}, q);
    EXPECT_EQ(f.dtype, DType::kF16);
    EXPECT_EQ(f.layout, TensorLayout::kRowMajor);
    EXPECT_EQ(ChooseStorage("blk.0.attn_norm.weight", {64}, q).layout, TensorLayout::kRowMajor);
    ASSERT_TRUE(ParseLayoutOption("row_major", &q).ok());
    EXPECT_EQ(ChooseStorage("blk.0.attn_q.weight", {48, 64}, q).layout, TensorLayout::kRowMajor);
  }
}

}  // namespace
}  // namespace pocket
