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
  const std::string header =
      R"({"model.norm.weight": {"dtype": "F32", "shape": [64], "data_offsets": [0, 256]}})";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  WriteFile(dir + "/model.safetensors", bytes + header + std::string(256, '\0'));
  const Status s = Convert(dir);
  ExpectErrorMentions(s, {"missing", "token_embd.weight", "blk.4.ffn_down.weight"});
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
  ExpectErrorMentions(s, {"--tokenizer"});
}

TEST(ConvertErrors, MissingSource) {
  const Status s = Convert("/nonexistent/model");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  ExpectErrorMentions(s, {"/nonexistent/model"});
}

}  // namespace
}  // namespace pocket
