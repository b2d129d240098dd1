// The config section's JSON and the decoder graph built from a config.
#include "format/model_config.h"

#include <string>

#include <gtest/gtest.h>

#include "util/json_util.h"

namespace pocket {
namespace {

// The published MNN-Pocket-0.3B shape (DESIGN.md).
ModelConfig Pocket03b() {
  ModelConfig c;
  c.architecture = "qwen3";
  c.n_layers = 28;
  c.hidden = 896;
  c.n_heads = 14;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.ffn = 2560;
  c.vocab = 65536;
  c.context = 40960;
  c.rope_theta = 1e6;
  c.rope_style = RopeStyle::kNeox;
  c.rms_eps = 1e-6;
  c.tied_embeddings = true;
  c.qk_norm = true;
  return c;
}

ModelConfig FullyPopulated() {
  ModelConfig c = Pocket03b();
  c.bos_id = 11;
  c.eos_id = 12;
  c.add_bos = true;
  c.stop_token_ids = {12, 13};
  c.generation = {0.25f, 7, 0.5f, 0.125f, 1.1f, 99};
  c.chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}\n\"quoted\"";
  c.chat_template_kind = "qwen3";
  c.quant_summary = "q4 g64, embeddings q8 g32, norms f32";
  c.provenance_json = R"({"converter":"pocket 0.1.0","files":[],"source":"x"})";
  c.license = "Apache-2.0";
  return c;
}

void ExpectEqual(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.ffn, b.ffn);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.context, b.context);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rope_style, b.rope_style);
  EXPECT_EQ(a.rms_eps, b.rms_eps);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.bos_id, b.bos_id);
  EXPECT_EQ(a.eos_id, b.eos_id);
  EXPECT_EQ(a.add_bos, b.add_bos);
  EXPECT_EQ(a.stop_token_ids, b.stop_token_ids);
  EXPECT_EQ(a.generation.temperature, b.generation.temperature);
  EXPECT_EQ(a.generation.top_k, b.generation.top_k);
  EXPECT_EQ(a.generation.top_p, b.generation.top_p);
  EXPECT_EQ(a.generation.min_p, b.generation.min_p);
  EXPECT_EQ(a.generation.repeat_penalty, b.generation.repeat_penalty);
  EXPECT_EQ(a.generation.max_new_tokens, b.generation.max_new_tokens);
  EXPECT_EQ(a.chat_template, b.chat_template);
  EXPECT_EQ(a.chat_template_kind, b.chat_template_kind);
  EXPECT_EQ(a.quant_summary, b.quant_summary);
  EXPECT_EQ(a.provenance_json, b.provenance_json);
  EXPECT_EQ(a.license, b.license);
}

TEST(ModelConfig, RoundTripsEveryField) {
  for (ModelConfig c : {Pocket03b(), FullyPopulated()}) {
    c.rope_style = RopeStyle::kInterleaved;
    auto parsed = ParseModelConfig(ModelConfigToJson(c));
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    ExpectEqual(*parsed, c);
  }
}

TEST(ModelConfig, JsonUsesTheFieldNames) {
  auto j = ParseJson(ModelConfigToJson(FullyPopulated()), "test");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["rope_style"], "neox");
  EXPECT_EQ((*j)["quant"], "q4 g64, embeddings q8 g32, norms f32");
  EXPECT_EQ((*j)["generation"]["top_k"], 7);
  EXPECT_EQ((*j)["provenance"]["source"], "x");
  EXPECT_EQ((*j)["n_kv_heads"], 2);
}

std::string WithoutKey(const char* key) {
  auto j = ParseJson(ModelConfigToJson(Pocket03b()), "test");
  j->erase(key);
  return DumpJson(*j);
}

std::string WithValue(const char* key, const Json& value) {
  auto j = ParseJson(ModelConfigToJson(Pocket03b()), "test");
  (*j)[key] = value;
  return DumpJson(*j);
}

TEST(ModelConfig, MissingRequiredKeysAreNamed) {
  for (const char* key : {"architecture", "n_layers", "hidden", "n_heads", "n_kv_heads", "head_dim",
                          "ffn", "vocab", "context", "rope_theta", "rope_style", "rms_eps",
                          "tied_embeddings", "qk_norm", "qkv_bias"}) {
    auto parsed = ParseModelConfig(WithoutKey(key));
    ASSERT_FALSE(parsed.ok()) << key;
    EXPECT_NE(parsed.status().message().find(key), std::string::npos)
        << key << ": " << parsed.status().message();
  }
}

TEST(ModelConfig, IllTypedKeysAreNamed) {
  const std::pair<const char*, Json> cases[] = {
      {"n_layers", "28"},     {"hidden", 896.5},        {"rope_theta", "big"},
      {"tied_embeddings", 1}, {"stop_token_ids", "1"},  {"chat_template", 3},
      {"provenance", "text"}, {"rope_style", "rotary"}, {"generation", 5},
      {"bos_id", true},
  };
  for (const auto& [key, value] : cases) {
    auto parsed = ParseModelConfig(WithValue(key, value));
    ASSERT_FALSE(parsed.ok()) << key;
    EXPECT_NE(parsed.status().message().find(key), std::string::npos)
        << key << ": " << parsed.status().message();
  }
  Json gen = {{"top_k", "forty"}};
  auto parsed = ParseModelConfig(WithValue("generation", gen));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("top_k"), std::string::npos);
}

TEST(ModelConfig, NotJsonIsAnError) {
  EXPECT_FALSE(ParseModelConfig("{\"architecture\": ").ok());
  EXPECT_FALSE(ParseModelConfig("[1, 2]").ok());
}

TEST(ModelConfig, ValidationNamesTheField) {
  ModelConfig c = Pocket03b();
  EXPECT_TRUE(ValidateModelConfig(c).ok());
  c.n_kv_heads = 3;
  Status s = ValidateModelConfig(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("n_kv_heads"), std::string::npos);
  c = Pocket03b();
  c.ffn = 0;
  s = ValidateModelConfig(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ffn"), std::string::npos);
  c = Pocket03b();
  c.architecture = "gpt2";
  EXPECT_FALSE(ValidateModelConfig(c).ok());
  c = Pocket03b();
  c.stop_token_ids = {65536};
  s = ValidateModelConfig(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stop_token_ids"), std::string::npos);
}

// docs/graph.md's Qwen3 example, verbatim.
constexpr char kPocket03bGraph[] = R"({"version": 1, "nodes": [
  {"op": "embed", "in": ["tokens", "token_embd.weight"], "out": "x"},
  {"repeat": 28, "var": "L", "nodes": [
    {"op": "rms_norm", "in": ["x", "blk.{L}.attn_norm.weight"], "out": "h", "eps": 1e-6},
    {"op": "linear", "in": ["h", "blk.{L}.attn_q.weight"], "out": "q"},
    {"op": "linear", "in": ["h", "blk.{L}.attn_k.weight"], "out": "k"},
    {"op": "linear", "in": ["h", "blk.{L}.attn_v.weight"], "out": "v"},
    {"op": "head_rms_norm", "in": ["q", "blk.{L}.attn_q_norm.weight"], "out": "q", "eps": 1e-6, "head_dim": 64},
    {"op": "head_rms_norm", "in": ["k", "blk.{L}.attn_k_norm.weight"], "out": "k", "eps": 1e-6, "head_dim": 64},
    {"op": "rope", "in": ["q"], "out": "q", "head_dim": 64, "theta": 1000000.0, "style": "neox"},
    {"op": "rope", "in": ["k"], "out": "k", "head_dim": 64, "theta": 1000000.0, "style": "neox"},
    {"op": "attention", "in": ["q", "k", "v"], "out": "a", "layer": "{L}", "n_heads": 14, "n_kv_heads": 2, "head_dim": 64},
    {"op": "linear", "in": ["a", "blk.{L}.attn_output.weight"], "out": "o"},
    {"op": "add", "in": ["x", "o"], "out": "x"},
    {"op": "rms_norm", "in": ["x", "blk.{L}.ffn_norm.weight"], "out": "h", "eps": 1e-6},
    {"op": "linear", "in": ["h", "blk.{L}.ffn_gate.weight"], "out": "g"},
    {"op": "linear", "in": ["h", "blk.{L}.ffn_up.weight"], "out": "u"},
    {"op": "swiglu", "in": ["g", "u"], "out": "g"},
    {"op": "linear", "in": ["g", "blk.{L}.ffn_down.weight"], "out": "d"},
    {"op": "add", "in": ["x", "d"], "out": "x"}
  ]},
  {"op": "rms_norm", "in": ["x", "output_norm.weight"], "out": "h", "eps": 1e-6},
  {"op": "linear", "in": ["h", "token_embd.weight"], "out": "logits"}
]})";

Json Graph(const ModelConfig& c) {
  auto text = BuildDecoderGraph(c);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  auto j = ParseJson(text.ok() ? *text : "null", "graph");
  return j.ok() ? *j : Json();
}

TEST(DecoderGraph, Pocket03bMatchesTheDocumentedGraph) {
  auto expected = ParseJson(kPocket03bGraph, "expected");
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(Graph(Pocket03b()), *expected) << Graph(Pocket03b()).dump(1);
}

TEST(DecoderGraph, Qwen2AddsBiasesAndDropsHeadNorm) {
  ModelConfig c = Pocket03b();
  c.architecture = "qwen2";
  c.qk_norm = false;
  c.qkv_bias = true;
  const Json g = Graph(c);
  const Json& layer = g["nodes"][1]["nodes"];
  ASSERT_EQ(layer.size(), 15u);  // 17 minus the two head_rms_norm nodes
  EXPECT_EQ(layer[1]["in"], Json({"h", "blk.{L}.attn_q.weight", "blk.{L}.attn_q.bias"}));
  EXPECT_EQ(layer[2]["in"], Json({"h", "blk.{L}.attn_k.weight", "blk.{L}.attn_k.bias"}));
  EXPECT_EQ(layer[3]["in"], Json({"h", "blk.{L}.attn_v.weight", "blk.{L}.attn_v.bias"}));
  EXPECT_EQ(layer[4]["op"], "rope");
  EXPECT_EQ(layer[7]["in"], Json({"a", "blk.{L}.attn_output.weight"}));
}

TEST(DecoderGraph, UntiedInterleavedLlama) {
  ModelConfig c = Pocket03b();
  c.architecture = "llama";
  c.qk_norm = false;
  c.tied_embeddings = false;
  c.rope_style = RopeStyle::kInterleaved;
  c.n_layers = 5;
  const Json g = Graph(c);
  EXPECT_EQ(g["nodes"][1]["repeat"], 5);
  EXPECT_EQ(g["nodes"][1]["nodes"][4]["style"], "interleaved");
  EXPECT_EQ(g["nodes"][3]["in"], Json({"h", "output.weight"}));
}

TEST(DecoderGraph, InvalidConfigIsAnError) {
  ModelConfig c = Pocket03b();
  c.n_heads = 0;
  EXPECT_FALSE(BuildDecoderGraph(c).ok());
}

}  // namespace
}  // namespace pocket
