// Generation under a grammar on a random-weight Qwen3 (the tiny-qwen3
// preset with the real Qwen3 tokenizer) and on stories260K (SentencePiece
// with byte fallback), at temperature 1 over many seeds:
// every output that ends at end-of-sequence parses as JSON and passes the
// independent validator (tests/grammar/schema_validator.h), and every tool
// call of a chat with tools names a tool and has arguments its schema
// accepts; greedy decoding under a grammar that allows what the model would
// say anyway says it.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/converter.h"
#include "convert/synth.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/schema_validator.h"
#include "grammar/test_schemas.h"
#include "grammar/tool_calls.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "tokenizer/tokenizer.h"

namespace pocket {
namespace {

// The tiny-qwen3 preset's layers under the whole Qwen3 vocabulary (151,669
// tokens: the preset trims it to 1,024), so masks cover every merged token
// and UTF-8 piece a Qwen3 model can emit.
const Model* TinyQwen3() {
  static std::unique_ptr<Model> model = []() -> std::unique_ptr<Model> {
    const std::string dir = std::string(POCKET_TEST_DATA) + "/qwen3-tokenizer/";
    auto source = SynthesizeModel({"tiny-qwen3", 5, dir + "tokenizer.json"});
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    if (!source.ok()) return nullptr;
    std::ifstream json(dir + "tokenizer.json"), config(dir + "tokenizer_config.json");
    std::stringstream json_text, config_text;
    json_text << json.rdbuf();
    config_text << config.rdbuf();
    auto tok = Tokenizer::FromHfJson(json_text.str(), config_text.str());
    EXPECT_TRUE(tok.ok()) << tok.status().ToString();
    if (!tok.ok()) return nullptr;
    ModelConfig& c = source->config;
    c.vocab = (*tok)->vocab_size();
    c.bos_id = (*tok)->TokenId("<|endoftext|>");
    c.eos_id = (*tok)->TokenId("<|im_end|>");
    c.stop_token_ids = {c.eos_id, c.bos_id};
    source->tokenizer_blob = (*tok)->ToBlob();
    source->tensors.clear();
    const std::vector<TensorSpec> specs = ExpectedTensors(c);
    for (size_t index = 0; index < specs.size(); ++index) {
      uint64_t n = 1;
      for (uint64_t d : specs[index].shape) n *= d;
      const bool norm = specs[index].name.find("norm") != std::string::npos;
      source->tensors.push_back({specs[index].name, specs[index].shape,
                                 [index, n, norm]() -> StatusOr<std::vector<float>> {
                                   std::vector<float> v(n);
                                   for (uint64_t i = 0; i < n; ++i) {
                                     v[i] = SynthValue(5, index, i, 1.0) + (norm ? 1.0f : 0.0f);
                                   }
                                   return v;
                                 }});
    }
    QuantOptions q;
    q.weights = DType::kF32;
    q.embeddings = DType::kQ8;
    const std::string path = std::string(POCKET_BINARY_DIR) + "/grammar_generate_test_" +
                             std::to_string(getpid()) + ".pocket";
    auto stats = WritePocketModel(*source, q, path, nullptr);
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    auto m = Model::Load(path, ModelOptions());
    std::remove(path.c_str());
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }();
  return model.get();
}

TEST(GrammarGenerate, SchemaOutputsValidate) {
  const Model* model = TinyQwen3();
  ASSERT_NE(model, nullptr);
  for (const char* schema : testing::kTestSchemas) {
    auto g = grammar::CompileJsonSchema(schema);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    testing::SchemaValidator validator(nlohmann::json::parse(schema));
    int complete = 0;
    for (uint64_t seed = 0; seed < 10; ++seed) {
      auto session = Session::Create(model, SessionOptions());
      ASSERT_TRUE(session.ok()) << session.status().ToString();
      GenerateOptions options;
      options.sampling.temperature = 1.0f;
      options.sampling.seed = seed;
      options.max_new_tokens = 200;
      options.grammar = *g;
      GenerateResult result;
      Status s = Generate(session->get(), "Reply in JSON:", options, nullptr, &result);
      ASSERT_TRUE(s.ok()) << s.ToString();
      // Cut by the token limit: a prefix of a valid output, not checked.
      if (result.stop != "eos") continue;
      ++complete;
      nlohmann::json value = nlohmann::json::parse(result.text, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << schema << "\nseed " << seed << ": " << result.text;
      EXPECT_TRUE(validator.Valid(value)) << schema << "\nseed " << seed << ": " << result.text;
    }
    EXPECT_GT(complete, 0) << schema;
    std::printf("%d of 10 outputs complete for %.60s...\n", complete, schema);
  }
}

// stories260K: SentencePiece with byte fallback (512 pieces, `▁` for a
// space, <0xNN> byte tokens): the same check over its vocabulary.
TEST(GrammarGenerate, SchemaOutputsValidateOnSentencePiece) {
  auto m = Model::Load(std::string(POCKET_TEST_MODELS) + "/stories260K-f32.pocket", ModelOptions());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (const char* schema : testing::kTestSchemas) {
    auto g = grammar::CompileJsonSchema(schema);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    testing::SchemaValidator validator(nlohmann::json::parse(schema));
    int complete = 0;
    for (uint64_t seed = 0; seed < 6; ++seed) {
      auto session = Session::Create(m->get(), SessionOptions());
      ASSERT_TRUE(session.ok()) << session.status().ToString();
      GenerateOptions options;
      options.sampling.temperature = 1.0f;
      options.sampling.seed = seed;
      options.max_new_tokens = 300;
      options.grammar = *g;
      GenerateResult result;
      Status s = Generate(session->get(), "Once upon a time", options, nullptr, &result);
      ASSERT_TRUE(s.ok()) << s.ToString();
      if (result.stop != "eos") continue;
      ++complete;
      nlohmann::json value = nlohmann::json::parse(result.text, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << schema << "\nseed " << seed << ": " << result.text;
      EXPECT_TRUE(validator.Valid(value)) << schema << "\nseed " << seed << ": " << result.text;
    }
    EXPECT_GT(complete, 0) << schema;
    std::printf("%d of 6 outputs complete for %.60s...\n", complete, schema);
  }
}

TEST(GrammarGenerate, GreedyUnchangedWhereTheGrammarAllowsIt) {
  const Model* model = TinyQwen3();
  ASSERT_NE(model, nullptr);
  const Tokenizer& tok = model->tokenizer();
  GenerateOptions options;
  options.max_new_tokens = 24;
  options.ignore_eos = true;
  GenerateResult free_run;
  auto session = Session::Create(model, SessionOptions());
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE(Generate(session->get(), "Once upon a time", options, nullptr, &free_run).ok());
  // A grammar of exactly the bytes greedy decoding produced.
  std::string bytes;
  for (int32_t id : free_run.ids) bytes += tok.TokenBytes(id);
  grammar::GrammarBuilder b;
  const int32_t root = b.Rule("root");
  b.Define(root, b.Literal(bytes));
  auto g = b.Build(root);
  ASSERT_TRUE(g.ok());
  options.grammar = *g;
  options.max_new_tokens = 100;
  GenerateResult constrained;
  session = Session::Create(model, SessionOptions());
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE(Generate(session->get(), "Once upon a time", options, nullptr, &constrained).ok());
  EXPECT_EQ(constrained.ids, free_run.ids);
  EXPECT_EQ(constrained.stop, "eos");  // the grammar is complete: only the end remains
}

TEST(GrammarGenerate, GbnfConstrainsGreedyDecoding) {
  const Model* model = TinyQwen3();
  ASSERT_NE(model, nullptr);
  auto g = grammar::CompileGbnf(R"g(root ::= ("yes" | "no") ", " [0-9]{2} "!")g");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  GenerateOptions options;
  options.grammar = *g;
  options.max_new_tokens = 50;
  auto session = Session::Create(model, SessionOptions());
  ASSERT_TRUE(session.ok());
  GenerateResult result;
  ASSERT_TRUE(Generate(session->get(), "Answer:", options, nullptr, &result).ok());
  EXPECT_EQ(result.stop, "eos");
  ASSERT_EQ(result.text.size(), result.text[0] == 'y' ? 8u : 7u) << result.text;
  EXPECT_TRUE(result.text.rfind("yes, ", 0) == 0 || result.text.rfind("no, ", 0) == 0);
  EXPECT_EQ(result.text.back(), '!');
}

const std::vector<grammar::ToolDefinition>& TestTools() {
  static const std::vector<grammar::ToolDefinition> tools = {
      {"get_weather", "Current weather for a city.",
       R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
           "required": ["city"], "additionalProperties": false})"},
      {"book_table", "Books a table.",
       R"({"type": "object", "properties": {
           "guests": {"type": "integer", "minimum": 1, "maximum": 12},
           "time": {"type": "string", "format": "time"},
           "notes": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 2}},
           "required": ["guests", "time"], "additionalProperties": false})"}};
  return tools;
}

// Chat with tools and tool_choice required: every complete tool call of a
// reply names a tool, its arguments valid under that tool's schema (the
// independent validator); a tool result goes back as a tool message and the
// chat goes on.
TEST(GrammarGenerate, ToolCallsValidate) {
  const Model* model = TinyQwen3();
  ASSERT_NE(model, nullptr);
  ASSERT_EQ(model->config().chat_template_kind, "qwen3");
  int calls = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    auto session = Session::Create(model, SessionOptions());
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    GenerateOptions options;
    options.sampling.temperature = 1.0f;
    options.sampling.seed = seed;
    options.max_new_tokens = 120;
    options.tools = TestTools();
    options.tool_choice = grammar::ToolChoice::kRequired;
    ChatOptions chat;
    chat.enable_thinking = false;
    GenerateResult result;
    Status s = GenerateChat(session->get(), {{"user", "Weather in Oslo?"}}, chat, options, nullptr,
                            &result);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(result.tool_calls.size(), grammar::ParseToolCalls(result.text).size());
    // Every complete call counts: a random model rarely picks the end
    // token among the many that may start another call.
    if (result.stop == "eos") ASSERT_FALSE(result.tool_calls.empty()) << result.text;
    for (const grammar::ToolCall& call : result.tool_calls) {
      const auto& tools = TestTools();
      auto tool = std::find_if(tools.begin(), tools.end(), [&](const grammar::ToolDefinition& t) {
        return t.name == call.name;
      });
      ASSERT_NE(tool, tools.end()) << "seed " << seed << ": " << result.text;
      testing::SchemaValidator validator(nlohmann::json::parse(tool->parameters));
      nlohmann::json args = nlohmann::json::parse(call.arguments, nullptr, false);
      ASSERT_FALSE(args.is_discarded()) << call.arguments;
      EXPECT_TRUE(validator.Valid(args)) << "seed " << seed << ": " << result.text;
      ++calls;
    }
    // The tool's answer, then a free reply (kAuto).
    options.tool_choice = grammar::ToolChoice::kAuto;
    options.max_new_tokens = 8;
    GenerateResult next;
    s = GenerateChat(session->get(), {{"tool", "{\"temp\": 21}"}}, chat, options, nullptr, &next);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const std::string response = "<tool_response>";
    ASSERT_TRUE(std::find(next.prompt_ids.begin(), next.prompt_ids.end(),
                          model->tokenizer().TokenId(response)) != next.prompt_ids.end());
  }
  EXPECT_GT(calls, 0);
  std::printf("%d tool calls validated\n", calls);
}

// Checked before the template renders anything: any model will do.
TEST(GrammarGenerate, ToolsNeedAChatAndNoGrammar) {
  auto model =
      Model::Load(std::string(POCKET_TEST_MODELS) + "/stories260K-f32.pocket", ModelOptions());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto session = Session::Create(model->get(), SessionOptions());
  ASSERT_TRUE(session.ok());
  GenerateOptions options;
  options.tools = TestTools();
  GenerateResult result;
  EXPECT_EQ(Generate(session->get(), "Hi", options, nullptr, &result).code(),
            StatusCode::kInvalidArgument);
  options.grammar = grammar::JsonGrammar();
  EXPECT_EQ(GenerateChat(session->get(), {{"user", "Hi"}}, ChatOptions(), options, nullptr, &result)
                .code(),
            StatusCode::kInvalidArgument);
  options.grammar = nullptr;
  options.tools[0].parameters = R"({"type": "object", "minProperties": 1})";
  const Status s =
      GenerateChat(session->get(), {{"user", "Hi"}}, ChatOptions(), options, nullptr, &result);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'minProperties'"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace pocket
