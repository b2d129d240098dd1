// Constrained output through the C API (pocket_sampling's grammar,
// json_schema and regex) and the CLI (--grammar, --json-schema, --regex),
// on a tiny synthetic Qwen3: outputs parse, compile errors are
// POCKET_INVALID_ARGUMENT / exit 1 naming the problem, and a caller built
// against API version 7 (no such fields) still generates freely.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pocket/pocket.h"
#include "testing/run_cli.h"

namespace {

using pocket::testing::RunCli;

const char kSchema[] =
    R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
        "n": {"type": "integer", "minimum": 1, "maximum": 9}},
        "required": ["name", "n"], "additionalProperties": false})";

class StructuredOutput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::string(POCKET_BINARY_DIR) + "/structured_output_test_" + std::to_string(getpid());
    const auto out = RunCli("synth --preset tiny-qwen3 --quant f32 -o '" + dir_ + ".pocket'");
    ASSERT_EQ(out.exit_code, 0) << out.out;
  }
  static void TearDownTestSuite() {
    for (const char* suffix : {".pocket", ".json", ".gbnf"}) std::remove((dir_ + suffix).c_str());
  }

  void SetUp() override {
    ASSERT_EQ(pocket_model_load((dir_ + ".pocket").c_str(), nullptr, &model_), POCKET_OK)
        << pocket_last_error();
    ASSERT_EQ(pocket_session_new(model_, nullptr, &session_), POCKET_OK) << pocket_last_error();
  }
  void TearDown() override {
    pocket_session_free(session_);
    pocket_model_free(model_);
  }

  pocket_status Generate(const pocket_sampling& sampling, std::string* text) {
    text->clear();
    return pocket_generate(
        session_, "Data:", &sampling,
        [](const char* piece, size_t len, int32_t, void* user) {
          static_cast<std::string*>(user)->append(piece, len);
          return 0;
        },
        text, nullptr);
  }

  static std::string dir_;
  pocket_model* model_ = nullptr;
  pocket_session* session_ = nullptr;
};

std::string StructuredOutput::dir_;

TEST_F(StructuredOutput, JsonSchemaOutputsParse) {
  for (uint64_t seed = 0; seed < 5; ++seed) {
    pocket_sampling sampling;
    pocket_sampling_init(&sampling);
    sampling.temperature = 1.0f;
    sampling.seed = seed;
    sampling.max_new_tokens = 120;
    sampling.json_schema = kSchema;
    std::string text;
    ASSERT_EQ(Generate(sampling, &text), POCKET_OK) << pocket_last_error();
    const nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << text;
    EXPECT_TRUE(v["name"].is_string()) << text;
    EXPECT_TRUE(v["n"].is_number_integer() && v["n"] >= 1 && v["n"] <= 9) << text;
    EXPECT_EQ(v.size(), 2u) << text;
    ASSERT_EQ(pocket_session_reset(session_), POCKET_OK);
  }
}

TEST_F(StructuredOutput, GrammarAndRegex) {
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  sampling.grammar = R"g(root ::= "a" [0-9]{3})g";
  std::string text;
  ASSERT_EQ(Generate(sampling, &text), POCKET_OK) << pocket_last_error();
  ASSERT_EQ(text.size(), 4u) << text;
  EXPECT_EQ(text[0], 'a');
  sampling.grammar = nullptr;
  sampling.regex = "(yes|no)!";
  ASSERT_EQ(Generate(sampling, &text), POCKET_OK) << pocket_last_error();
  EXPECT_TRUE(text == "yes!" || text == "no!") << text;
}

TEST_F(StructuredOutput, CompileErrorsAreInvalidArgument) {
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  std::string text;
  sampling.json_schema = R"({"type": "string", "foo": 1})";
  EXPECT_EQ(Generate(sampling, &text), POCKET_INVALID_ARGUMENT);
  EXPECT_STREQ(pocket_last_error(), "json schema: unsupported keyword 'foo' (at #)");
  sampling.json_schema = nullptr;
  sampling.grammar = "root ::= (\"a\"";
  EXPECT_EQ(Generate(sampling, &text), POCKET_INVALID_ARGUMENT);
  EXPECT_STREQ(pocket_last_error(), "gbnf: line 1, column 14: expected ')'");
  sampling.regex = "a";
  EXPECT_EQ(Generate(sampling, &text), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("at most one"), std::string::npos);
}

TEST_F(StructuredOutput, VersionSevenCallersGenerateFreely) {
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  sampling.max_new_tokens = 8;
  sampling.ignore_eos = 1;
  sampling.grammar = "not read: the caller's struct ends before this field";
  sampling.struct_size = offsetof(pocket_sampling, grammar);
  std::string text;
  pocket_generation result;
  pocket_generation_init(&result);
  ASSERT_EQ(pocket_generate(session_, "Data:", &sampling, nullptr, nullptr, &result), POCKET_OK)
      << pocket_last_error();
  EXPECT_EQ(result.n_generated, 8);
}

TEST_F(StructuredOutput, Cli) {
  std::ofstream(dir_ + ".json") << kSchema;
  const std::string model = " -m '" + dir_ + ".pocket' -p Data: --temp 1 --seed 3 -n 120";
  auto out = RunCli("run" + model + " --json-schema '" + dir_ + ".json'");
  ASSERT_EQ(out.exit_code, 0) << out.out;
  ASSERT_EQ(out.out.rfind("Data:", 0), 0u) << out.out;  // the prompt is echoed
  const nlohmann::json v = nlohmann::json::parse(out.out.substr(5), nullptr, false);
  EXPECT_FALSE(v.is_discarded()) << out.out;
  out = RunCli("run" + model + " --regex 'x[0-9]'");
  ASSERT_EQ(out.exit_code, 0) << out.out;
  EXPECT_EQ(out.out.size(), 5u + 2u + 1u) << out.out;  // prompt, match, newline
  std::ofstream(dir_ + ".gbnf") << "root ::= \"a\"\nitem ::= [b-a]\n";
  out = RunCli("run" + model + " --grammar '" + dir_ + ".gbnf'", "", true);
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.out.find("gbnf: line 2, column 14: character range is backwards"),
            std::string::npos)
      << out.out;
  out = RunCli("run" + model + " --regex a --grammar x", "", true);
  EXPECT_EQ(out.exit_code, 2) << out.out;
}

}  // namespace
