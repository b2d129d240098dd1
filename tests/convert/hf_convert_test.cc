// Converting the stories260K Hugging Face export: exact f32 values, every
// quantized group within its bound, and the config derived from the folder.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "convert/converter.h"
#include "convert/hf_import.h"
#include "format/model_config.h"
#include "util/json_util.h"

namespace pocket {
namespace {

using testing_util::DataPath;
using testing_util::MakeTempDir;
using testing_util::ParseF32Safetensors;
using testing_util::ReadTensor;

constexpr int kLayers = 5;

// HF name for each .pocket name of the stories260K export.
std::map<std::string, std::string> ExpectedNames() {
  std::map<std::string, std::string> m = {{"token_embd.weight", "model.embed_tokens.weight"},
                                          {"output_norm.weight", "model.norm.weight"}};
  const std::pair<const char*, const char*> layer[] = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"}};
  for (int l = 0; l < kLayers; ++l) {
    for (const auto& [p, h] : layer) {
      m["blk." + std::to_string(l) + "." + p] = "model.layers." + std::to_string(l) + "." + h;
    }
  }
  return m;
}

struct Converted {
  std::string path;
  ConvertStats stats;
};

Converted Convert(const std::string& quant, const std::string& embed, int group) {
  Converted c;
  c.path = MakeTempDir("hf") + "/model.pocket";
  ConvertOptions options;
  auto q = ParseQuantOptions(quant, embed, group);
  EXPECT_TRUE(q.ok()) << q.status().ToString();
  options.quant = *q;
  size_t calls = 0;
  options.progress = [&calls](size_t i, size_t total, const std::string& name) {
    EXPECT_EQ(i, calls++);
    EXPECT_EQ(total, 47u);
    EXPECT_FALSE(name.empty());
  };
  auto stats = ConvertModel(DataPath("stories260K-hf"), c.path, options);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (stats.ok()) c.stats = *stats;
  EXPECT_EQ(calls, 47u);
  return c;
}

TEST(HfConvert, F32TensorsEqualTheSourceExactly) {
  const Converted c = Convert("f32", "", 0);
  auto file = PocketFile::Open(c.path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const auto source = ParseF32Safetensors(DataPath("stories260K-hf/model.safetensors"));
  const auto names = ExpectedNames();
  ASSERT_EQ((*file)->tensors().size(), names.size());
  EXPECT_EQ(c.stats.tensors, names.size());
  uint64_t params = 0;
  for (const auto& [name, hf] : names) {
    const TensorInfo* t = (*file)->FindTensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dtype, DType::kF32) << name;
    const auto& src = source.at(hf);
    EXPECT_EQ(t->shape, src.shape) << name;
    ASSERT_EQ(t->nbytes, src.values.size() * 4) << name;
    EXPECT_EQ(std::memcmp((*file)->TensorData(*t), src.values.data(), t->nbytes), 0) << name;
    params += src.values.size();
  }
  EXPECT_EQ(c.stats.parameters, params);
  EXPECT_EQ(c.stats.file_bytes, (*file)->size());
  EXPECT_EQ((*file)->FindTensor("output.weight"), nullptr);  // tied: stored once
}

TEST(HfConvert, ConfigComesFromTheFolder) {
  const Converted c = Convert("f32", "", 0);
  auto file = PocketFile::Open(c.path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto config = ParseModelConfig(std::string((*file)->config_json()));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->architecture, "llama");
  EXPECT_EQ(config->n_layers, 5);
  EXPECT_EQ(config->hidden, 64);
  EXPECT_EQ(config->n_heads, 8);
  EXPECT_EQ(config->n_kv_heads, 4);
  EXPECT_EQ(config->head_dim, 8);
  EXPECT_EQ(config->ffn, 172);
  EXPECT_EQ(config->vocab, 512);
  EXPECT_EQ(config->context, 512);
  EXPECT_EQ(config->rope_style, RopeStyle::kNeox);
  EXPECT_EQ(config->rope_theta, 10000.0);
  EXPECT_EQ(config->rms_eps, 1e-5);
  EXPECT_TRUE(config->tied_embeddings);
  EXPECT_FALSE(config->qk_norm);
  EXPECT_FALSE(config->qkv_bias);
  EXPECT_EQ(config->bos_id, 1);
  EXPECT_EQ(config->eos_id, 2);
  EXPECT_TRUE(config->add_bos);
  EXPECT_EQ(config->stop_token_ids, std::vector<int32_t>({2}));
  EXPECT_EQ(config->chat_template_kind, "none");
  EXPECT_EQ(config->license, "unknown");
  EXPECT_EQ(config->quant_summary, "f32, embeddings f32, norms f32");
  auto prov = ParseJson(config->provenance_json, "provenance");
  ASSERT_TRUE(prov.ok());
  EXPECT_EQ((*prov)["converter"], "pocket 0.1.0");
  EXPECT_EQ((*prov)["source"], DataPath("stories260K-hf"));
  bool found = false;
  for (const Json& f : (*prov)["files"]) {
    if (f["name"] == "model.safetensors") {
      found = true;
      EXPECT_EQ(f["bytes"], 1044992);
      // tests/data/SHA256SUMS
      EXPECT_EQ(f["sha256"], "c549afd8464a1250200b5338d39d23d0bf096c7f6578944268d40512c133daa6");
    }
  }
  EXPECT_TRUE(found) << config->provenance_json;
  // The graph is the Llama one: no head norms, tied output.
  auto graph = ParseJson(std::string((*file)->graph_json()), "graph");
  ASSERT_TRUE(graph.ok());
  EXPECT_EQ((*graph)["nodes"][3]["in"][1], "token_embd.weight");
}

// Every group of every quantized tensor is within QuantizationBound.
void ExpectWithinBounds(const std::string& quant, const std::string& embed, int group,
                        DType want_matrix, DType want_embed) {
  const Converted c = Convert(quant, embed, group);
  auto file = PocketFile::Open(c.path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const auto source = ParseF32Safetensors(DataPath("stories260K-hf/model.safetensors"));
  for (const auto& [name, hf] : ExpectedNames()) {
    const TensorInfo* t = (*file)->FindTensor(name);
    ASSERT_NE(t, nullptr);
    const std::vector<float>& src = source.at(hf).values;
    const std::vector<float> got = ReadTensor(**file, name);
    ASSERT_EQ(got.size(), src.size());
    const bool is_norm = t->shape.size() == 1;
    const bool fallback = !is_norm && name.find("ffn_down") != std::string::npos;
    DType want = is_norm ? DType::kF32 : name == "token_embd.weight" ? want_embed : want_matrix;
    if (fallback && IsQuantized(want)) want = DType::kF16;  // 172 columns
    EXPECT_EQ(t->dtype, want) << name;
    const uint32_t g = t->group ? t->group : static_cast<uint32_t>(t->cols());
    for (uint64_t i = 0; i < src.size(); i += g) {
      const float bound = QuantizationBound(t->dtype, &src[i], g);
      for (uint32_t j = 0; j < g; ++j) {
        ASSERT_LE(std::fabs(got[i + j] - src[i + j]), bound) << name << " element " << i + j;
      }
    }
  }
  if (IsQuantized(want_matrix)) {
    EXPECT_EQ(c.stats.fallbacks.size(), 5u);  // ffn_down of each layer
  }
}

TEST(HfConvert, F16WithinBound) { ExpectWithinBounds("f16", "", 0, DType::kF16, DType::kF16); }
TEST(HfConvert, Q8WithinBound) { ExpectWithinBounds("q8", "", 0, DType::kQ8, DType::kQ8); }
TEST(HfConvert, Q4G32WithinBound) { ExpectWithinBounds("q4", "", 32, DType::kQ4, DType::kQ4); }
TEST(HfConvert, Q4G64WithQ8Embeddings) {
  ExpectWithinBounds("q4", "q8", 64, DType::kQ4, DType::kQ8);
}

TEST(HfConvert, DefaultIsQ4Group64) {
  auto q = ParseQuantOptions("", "", 0);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->weights, DType::kQ4);
  EXPECT_EQ(q->embeddings, DType::kQ4);
  EXPECT_EQ(q->group, 64u);
  EXPECT_EQ(QuantSummary(*q), "q4 g64, embeddings q4 g64, norms f32");
  EXPECT_FALSE(ParseQuantOptions("q3", "", 0).ok());
  EXPECT_FALSE(ParseQuantOptions("q4", "", 48).ok());
  EXPECT_FALSE(ParseQuantOptions("q4", "int8", 0).ok());
}

TEST(HfTensorNames, MapToGgufNames) {
  EXPECT_EQ(MapHfTensorName("model.layers.12.self_attn.q_norm.weight"),
            "blk.12.attn_q_norm.weight");
  EXPECT_EQ(MapHfTensorName("model.layers.3.self_attn.v_proj.bias"), "blk.3.attn_v.bias");
  EXPECT_EQ(MapHfTensorName("lm_head.weight"), "output.weight");
  EXPECT_EQ(MapHfTensorName("model.layers.3.mlp.experts.0.weight"), "");
  EXPECT_EQ(MapHfTensorName("model.layers.x.input_layernorm.weight"), "");
  EXPECT_EQ(MapHfTensorName("model.layers.03.input_layernorm.weight"), "");
}

}  // namespace
}  // namespace pocket
