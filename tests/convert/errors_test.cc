// Conversion errors: each names what is wrong and where.
#include <string>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "convert/converter.h"
#include "convert/safetensors.h"

namespace pocket {
namespace {

using testing_util::DataPath;
using testing_util::MakeTempDir;
using testing_util::ReadFile;
using testing_util::WriteFile;

// A copy of the stories260K HF folder whose files the test may then edit.
std::string CopyHfFolder() {
  const std::string dir = MakeTempDir("hfcopy");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors",
                        "tokenizer.model", "tokenizer_config.json"}) {
    WriteFile(dir + "/" + f, ReadFile(DataPath(std::string("stories260K-hf/") + f)));
  }
  return dir;
}

// Sets `key` of the copied folder's `file` (config.json by default) to the
// JSON text `value`.
void SetKey(const std::string& dir, const std::string& key, const std::string& value,
            const std::string& file = "config.json") {
  nlohmann::json cfg = nlohmann::json::parse(ReadFile(dir + "/" + file), nullptr, false);
  ASSERT_TRUE(cfg.is_object());
  cfg[key] = nlohmann::json::parse(value, nullptr, false);
  ASSERT_FALSE(cfg[key].is_discarded()) << value;
  WriteFile(dir + "/" + file, cfg.dump());
}

Status Convert(const std::string& src, const std::string& tokenizer = "") {
  const std::string out = MakeTempDir("out") + "/x.pocket";
  ConvertOptions options;
  options.tokenizer_path = tokenizer;
  options.quant = *ParseQuantOptions("f32", "", 0);
  auto stats = ConvertModel(src, out, options);
  if (!stats.ok()) {
    EXPECT_FALSE(testing_util::IsRegularFileForTest(out)) << "a failed conversion left " << out;
  }
  return stats.status();
}

void ExpectErrorMentions(const Status& s, const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.ok());
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
  }
}

TEST(ConvertErrors, MissingConfigJson) {
  const std::string dir = CopyHfFolder();
  ASSERT_EQ(std::remove((dir + "/config.json").c_str()), 0);
  const Status s = Convert(dir);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  ExpectErrorMentions(s, {"config.json", dir});
}

TEST(ConvertErrors, UnsupportedArchitectureListsTheSupportedOnes) {
  const std::string dir = CopyHfFolder();
  std::string cfg = ReadFile(dir + "/config.json");
  cfg.replace(cfg.find("LlamaForCausalLM"), 16, "GPT2LMHeadModel");
  WriteFile(dir + "/config.json", cfg);
  const Status s = Convert(dir);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  ExpectErrorMentions(
      s, {"GPT2LMHeadModel", "Qwen3ForCausalLM", "Qwen2ForCausalLM", "LlamaForCausalLM"});
}

TEST(ConvertErrors, RopeScalingIsUnsupported) {
  const std::string dir = CopyHfFolder();
  std::string cfg = ReadFile(dir + "/config.json");
  cfg.replace(cfg.find("\"rope_scaling\": null"), 20,
              "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}");
  WriteFile(dir + "/config.json", cfg);
  const Status s = Convert(dir);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  ExpectErrorMentions(s, {"rope_scaling"});
}

TEST(ConvertErrors, TruncatedSafetensorsNamesFileAndTensor) {
  const std::string dir = CopyHfFolder();
  const std::string st = ReadFile(dir + "/model.safetensors");
  WriteFile(dir + "/model.safetensors", st.substr(0, st.size() - 100));
  const Status s = Convert(dir);
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  ExpectErrorMentions(s, {"model.safetensors", "truncated", "tensor '"});
}

TEST(ConvertErrors, SafetensorsHeaderLongerThanTheFile) {
  const std::string dir = MakeTempDir("st");
  std::string bytes(16, '\0');
  bytes[0] = 100;  // header length 100 in a 16-byte file
  WriteFile(dir + "/a.safetensors", bytes);
  auto f = SafetensorsFile::Open(dir + "/a.safetensors");
  ASSERT_FALSE(f.ok());
  ExpectErrorMentions(f.status(), {"a.safetensors", "header length 100"});
}

TEST(ConvertErrors, SafetensorsOffsetsMustMatchTheShape) {
  const std::string dir = MakeTempDir("st");
  const std::string header = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  WriteFile(dir + "/b.safetensors", bytes + header + std::string(24, '\0'));
  auto f = SafetensorsFile::Open(dir + "/b.safetensors");
  ASSERT_FALSE(f.ok());
  ExpectErrorMentions(f.status(), {"b.safetensors", "tensor 'w'", "24"});
}

TEST(ConvertErrors, UnexpectedTensorIsListed) {
  const std::string dir = MakeTempDir("st");
  std::string cfg = ReadFile(DataPath("stories260K-hf/config.json"));
  WriteFile(dir + "/config.json", cfg);
  WriteFile(dir + "/tokenizer.model", ReadFile(DataPath("stories260K-hf/tokenizer.model")));
  const std::string header =
      R"({"model.layers.0.mlp.experts.weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  WriteFile(dir + "/model.safetensors", bytes + header + std::string(4, '\0'));
  const Status s = Convert(dir);
  ExpectErrorMentions(s, {"model.layers.0.mlp.experts.weight"});
}

TEST(ConvertErrors, MissingTensorIsListed) {
  const std::string dir = MakeTempDir("st");
  WriteFile(dir + "/config.json", ReadFile(DataPath("stories260K-hf/config.json")));
  WriteFile(dir + "/tokenizer.model", ReadFile(DataPath("stories260K-hf/tokenizer.model")));
  // One tensor of each of the config's 5 layers; the rest is missing.
  std::string header = "{";
  for (int l = 0; l < 5; ++l) {
    header += (l ? ", " : "") + std::string("\"model.layers.") + std::to_string(l) +
              ".input_layernorm.weight\": {\"dtype\": \"F32\", \"shape\": [64], "
              "\"data_offsets\": [" +
              std::to_string(256 * l) + ", " + std::to_string(256 * (l + 1)) + "]}";
  }
  header += "}";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size() & 0xff);
  bytes[1] = static_cast<char>(header.size() >> 8);
  WriteFile(dir + "/model.safetensors", bytes + header + std::string(5 * 256, '\0'));
  const Status s = Convert(dir);
  ExpectErrorMentions(s, {"missing", "token_embd.weight", "blk.4.ffn_down.weight"});
}

// Sizes read from config.json are checked against the checkpoint before
// anything is sized from them (a list of a billion layers' tensors).
TEST(ConvertErrors, NumHiddenLayersBeyondTheCheckpoint) {
  const std::string dir = CopyHfFolder();
  SetKey(dir, "num_hidden_layers", "1000000000");
  const Status s = Convert(dir);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectErrorMentions(s, {"config.json: num_hidden_layers = 1000000000 but the checkpoint holds "
                          "tensors of 5 layers"});
}

TEST(ConvertErrors, NumHiddenLayersBeyondTheLayersPresent) {
  // A tensor of layer 999999 does not back a million layers.
  const std::string dir = MakeTempDir("st");
  WriteFile(dir + "/config.json", ReadFile(DataPath("stories260K-hf/config.json")));
  WriteFile(dir + "/tokenizer.model", ReadFile(DataPath("stories260K-hf/tokenizer.model")));
  SetKey(dir, "num_hidden_layers", "1000000");
  const std::string header =
      R"({"model.layers.999999.input_layernorm.weight": {"dtype": "F32", "shape": [64], "data_offsets": [0, 256]}})";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  WriteFile(dir + "/model.safetensors", bytes + header + std::string(256, '\0'));
  const Status s = Convert(dir);
  ExpectErrorMentions(s, {"num_hidden_layers = 1000000 but the checkpoint holds tensors of 1 "
                          "layers"});
}

TEST(ConvertErrors, WriterRefusesALayerCountTheTensorsLack) {
  SourceModel model;
  ModelConfig& c = model.config;
  c.architecture = "llama";
  c.n_layers = 1000000000;
  c.hidden = c.n_heads = c.n_kv_heads = c.ffn = c.vocab = c.context = 2;
  c.head_dim = 2;
  c.tied_embeddings = true;
  model.tensors.push_back({"blk.0.attn_norm.weight", {2}, nullptr});
  const std::string out = MakeTempDir("out") + "/x.pocket";
  auto stats = WritePocketModel(model, *ParseQuantOptions("f32", "", 0), out, nullptr);
  ASSERT_FALSE(stats.ok());
  ExpectErrorMentions(stats.status(),
                      {"the config has n_layers = 1000000000 but the tensors hold 1 layers"});
}

// Every config.json value that changes what the model computes and that
// Pocket does not implement is refused by name.
TEST(ConvertErrors, UnimplementedConfigValuesAreRefusedByName) {
  const struct {
    const char* key;
    const char* value;
  } cases[] = {
      {"hidden_act", R"("gelu")"},
      {"hidden_act", R"("gelu_pytorch_tanh")"},
      {"rope_scaling", R"({"rope_type": "llama3", "factor": 8.0})"},
      {"rope_scaling", R"({"type": "linear", "factor": 2.0})"},
      {"partial_rotary_factor", "0.5"},
      {"attention_bias", "true"},
      {"mlp_bias", "true"},
      {"layer_types", R"(["full_attention", "sliding_attention"])"},
      {"quantization_config", R"({"quant_method": "gptq", "bits": 4})"},
  };
  for (const auto& c : cases) {
    const std::string dir = CopyHfFolder();
    SetKey(dir, c.key, c.value);
    const Status s = Convert(dir);
    EXPECT_EQ(s.code(), StatusCode::kUnsupported) << c.key << " " << c.value;
    ExpectErrorMentions(s, {std::string("config.json: '") + c.key + "' = ", "is not supported"});
  }
}

TEST(ConvertErrors, SlidingWindowIsRefusedWhereALayerWouldSlide) {
  const std::string dir = CopyHfFolder();
  SetKey(dir, "use_sliding_window", "true");
  SetKey(dir, "sliding_window", "64");
  SetKey(dir, "max_window_layers", "2");
  const Status s = Convert(dir);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  ExpectErrorMentions(s, {"'use_sliding_window' = true is not supported"});
  // With every layer below max_window_layers nothing slides.
  SetKey(dir, "max_window_layers", "5");
  EXPECT_TRUE(Convert(dir).ok());
}

TEST(ConvertErrors, ImplementedValuesStillConvert) {
  const std::string dir = CopyHfFolder();
  SetKey(dir, "hidden_act", R"("swish")");
  SetKey(dir, "rope_scaling", R"({"rope_type": "default"})");
  SetKey(dir, "layer_types", R"(["full_attention"])");
  const Status s = Convert(dir);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(ConvertErrors, UntiedConfigWithoutLmHead) {
  const std::string dir = CopyHfFolder();
  SetKey(dir, "tie_word_embeddings", "false");
  const Status s = Convert(dir);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectErrorMentions(s, {"\"tie_word_embeddings\": false", "no lm_head.weight"});
}

TEST(ConvertErrors, BadGenerationConfigNamesTheFileAndKey) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"temperature", "-1"}, {"top_p", "2"}, {"top_k", "-1"}}) {
    const std::string dir = CopyHfFolder();
    SetKey(dir, key, value, "generation_config.json");
    const Status s = Convert(dir);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << key;
    ExpectErrorMentions(s, {"generation_config.json: '" + key + "' = " + value});
  }
}

TEST(ConvertErrors, TokenIdsBeyond32Bits) {
  const std::string dir = CopyHfFolder();
  SetKey(dir, "eos_token_id", "[2, 4294967298]");
  const Status s = Convert(dir);
  ExpectErrorMentions(s, {"config.json: 'eos_token_id' holds 4294967298, not a token id"});
}

TEST(ConvertErrors, OverlappingSafetensorsTensors) {
  const std::string dir = MakeTempDir("st");
  const std::string header = R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                             R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  WriteFile(dir + "/c.safetensors", bytes + header + std::string(16, '\0'));
  auto f = SafetensorsFile::Open(dir + "/c.safetensors");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kCorruptFile);
  ExpectErrorMentions(f.status(), {"c.safetensors",
                                   "tensors 'a' (data_offsets [0, 16]) and 'b' "
                                   "(data_offsets [8, 16]) overlap"});
}

TEST(ConvertErrors, Llama2cFileOfTheWrongSize) {
  const std::string dir = MakeTempDir("l2c");
  const std::string bin = ReadFile(DataPath("stories260K/stories260K.bin"));
  WriteFile(dir + "/short.bin", bin.substr(0, bin.size() - 4));
  const Status s = Convert(dir + "/short.bin", DataPath("stories260K/tok512.model"));
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  ExpectErrorMentions(s, {"1056536", "1056540"});
}

TEST(ConvertErrors, Llama2cNeedsATokenizer) {
  const Status s = Convert(DataPath("stories260K/stories260K.bin"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ExpectErrorMentions(s, {"tokenizer_path"});
}

TEST(ConvertErrors, MissingSource) {
  const Status s = Convert("/nonexistent/model");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  ExpectErrorMentions(s, {"/nonexistent/model"});
}

}  // namespace
}  // namespace pocket
