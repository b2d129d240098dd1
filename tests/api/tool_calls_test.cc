// Tool calling through the C API (pocket_sampling's tools, pocket_generation's
// tool calls), the C++ wrapper and `pocket chat --tools`, on a tiny
// synthetic Qwen3: with tool_choice required every reply that ends holds
// calls naming a tool with arguments its schema accepts; NULL and invalid
// arguments are POCKET_INVALID_ARGUMENT; a caller of API version 8 (no such
// fields) chats as before; the CLI prints each call on a line of its own.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pocket/pocket.h"
#include "pocket/pocket.hpp"
#include "testing/run_cli.h"

namespace {

using pocket::testing::RunCli;

const char kWeather[] =
    R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "days"], "additionalProperties": false})";

const pocket_tool kTools[] = {{"get_weather", "Weather forecast.", kWeather},
                              {"now", nullptr, nullptr}};

// The arguments of a call to one of kTools, checked by hand.
void ExpectValidCall(const std::string& name, const std::string& arguments) {
  const nlohmann::json v = nlohmann::json::parse(arguments, nullptr, false);
  ASSERT_TRUE(v.is_object()) << arguments;
  if (name == "now") return;  // any object
  ASSERT_EQ(name, "get_weather");
  EXPECT_EQ(v.size(), 2u) << arguments;
  EXPECT_TRUE(v["city"].is_string()) << arguments;
  EXPECT_TRUE(v["days"].is_number_integer() && v["days"] >= 1 && v["days"] <= 7) << arguments;
}

class ToolCalls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::string(POCKET_BINARY_DIR) + "/tool_calls_test_" + std::to_string(getpid());
    const auto out = RunCli("synth --preset tiny-qwen3 --quant f32 -o '" + dir_ + ".pocket'");
    ASSERT_EQ(out.exit_code, 0) << out.out;
  }
  static void TearDownTestSuite() {
    for (const char* suffix : {".pocket", ".json"}) std::remove((dir_ + suffix).c_str());
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

  pocket_status Chat(const pocket_sampling& sampling, pocket_generation* result,
                     const char* role = "user", const char* content = "Weather in Oslo?") {
    const pocket_message message = {role, content};
    return pocket_chat(session_, &message, 1, 0, &sampling, nullptr, nullptr, result);
  }

  static std::string dir_;
  pocket_model* model_ = nullptr;
  pocket_session* session_ = nullptr;
};

std::string ToolCalls::dir_;

TEST_F(ToolCalls, RequiredCallsValidate) {
  int calls = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    pocket_sampling sampling;
    pocket_sampling_init(&sampling);
    sampling.temperature = 1.0f;
    sampling.seed = seed;
    sampling.max_new_tokens = 150;
    sampling.tools = kTools;
    sampling.n_tools = 2;
    sampling.tool_choice = POCKET_TOOL_CHOICE_REQUIRED;
    pocket_generation result;
    pocket_generation_init(&result);
    ASSERT_EQ(Chat(sampling, &result), POCKET_OK) << pocket_last_error();
    if (result.stop_reason == POCKET_STOP_EOS) ASSERT_GT(result.n_tool_calls, 0u);
    for (size_t i = 0; i < result.n_tool_calls; ++i) {
      ExpectValidCall(result.tool_calls[i].name, result.tool_calls[i].arguments);
      ++calls;
    }
    // The tool's result goes back as a tool message; a reply without tools
    // reports no calls.
    sampling.tools = nullptr;
    sampling.n_tools = 0;
    sampling.max_new_tokens = 4;
    ASSERT_EQ(Chat(sampling, &result, "tool", "{\"temp\": 3}"), POCKET_OK) << pocket_last_error();
    EXPECT_EQ(result.n_tool_calls, 0u);
    EXPECT_EQ(result.tool_calls, nullptr);
    ASSERT_EQ(pocket_session_reset(session_), POCKET_OK);
  }
  EXPECT_GT(calls, 0);
}

TEST_F(ToolCalls, InvalidArguments) {
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  pocket_generation result;
  pocket_generation_init(&result);
  sampling.tools = nullptr;
  sampling.n_tools = 2;
  EXPECT_EQ(Chat(sampling, &result), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("tools is NULL"), std::string::npos);
  sampling.tools = kTools;
  sampling.n_tools = 0;
  EXPECT_EQ(Chat(sampling, &result), POCKET_INVALID_ARGUMENT);
  sampling.n_tools = 2;
  sampling.tool_choice = 7;
  EXPECT_EQ(Chat(sampling, &result), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("tool_choice 7"), std::string::npos);
  sampling.tool_choice = POCKET_TOOL_CHOICE_AUTO;
  const pocket_tool unnamed[] = {{nullptr, "x", nullptr}};
  sampling.tools = unnamed;
  sampling.n_tools = 1;
  EXPECT_EQ(Chat(sampling, &result), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("tool 0 has a NULL name"), std::string::npos);
  const pocket_tool bad[] = {{"get weather", nullptr, nullptr}};
  sampling.tools = bad;
  EXPECT_EQ(Chat(sampling, &result), POCKET_INVALID_ARGUMENT);
  const pocket_tool bad_schema[] = {{"f", nullptr, "{\"type\": \"object\", \"if\": {}}"}};
  sampling.tools = bad_schema;
  EXPECT_EQ(Chat(sampling, &result), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("tool 'f': json schema: unsupported keyword"),
            std::string::npos)
      << pocket_last_error();
  sampling.tools = kTools;
  sampling.n_tools = 2;
  sampling.json_schema = "{}";
  EXPECT_EQ(Chat(sampling, &result), POCKET_INVALID_ARGUMENT);
  sampling.json_schema = nullptr;
  EXPECT_EQ(pocket_generate(session_, "Hi", &sampling, nullptr, nullptr, &result),
            POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("tools are for chat"), std::string::npos);
  EXPECT_EQ(pocket_chat(nullptr, nullptr, 0, 0, &sampling, nullptr, nullptr, &result),
            POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(result.n_tool_calls, 0u);
  EXPECT_EQ(pocket_session_position(session_), 0);  // nothing ran
}

// A caller built against API version 8: its pocket_sampling ends before
// tools, its pocket_generation before tool_calls (nothing is written there).
TEST_F(ToolCalls, VersionEightCallersChatAsBefore) {
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  sampling.max_new_tokens = 6;
  sampling.ignore_eos = 1;
  sampling.tools = reinterpret_cast<const pocket_tool*>(&sampling);  // not read
  sampling.n_tools = 3;
  sampling.struct_size = offsetof(pocket_sampling, tools);
  struct {
    pocket_generation g;
    char canary[sizeof(pocket_generation)];
  } result;
  pocket_generation_init(&result.g);
  result.g.struct_size = offsetof(pocket_generation, tool_calls);
  std::memset(reinterpret_cast<char*>(&result.g) + result.g.struct_size, 0x5A,
              sizeof(pocket_generation) - result.g.struct_size);
  ASSERT_EQ(Chat(sampling, &result.g), POCKET_OK) << pocket_last_error();
  EXPECT_EQ(result.g.n_generated, 6);
  const unsigned char* tail =
      reinterpret_cast<const unsigned char*>(&result.g) + result.g.struct_size;
  for (size_t i = 0; i < sizeof(pocket_generation) - result.g.struct_size; ++i) {
    ASSERT_EQ(tail[i], 0x5A) << i;
  }
}

TEST_F(ToolCalls, CppWrapper) {
  pocket::Model model;
  ASSERT_TRUE(pocket::Model::Load(dir_ + ".pocket", {}, &model).ok());
  pocket::Session session;
  ASSERT_TRUE(model.NewSession({}, &session).ok());
  pocket::Sampling sampling;
  sampling.temperature = 1.0f;
  sampling.seed = 2;
  sampling.max_new_tokens = 150;
  sampling.tool_list = {{"get_weather", "Weather forecast.", kWeather}, {"now", "", ""}};
  sampling.tool_choice = POCKET_TOOL_CHOICE_REQUIRED;
  pocket::Generation result;
  const pocket::Status s = session.Chat({{"user", "Weather?"}}, false, sampling, nullptr, &result);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(result.calls.size(), result.n_tool_calls);
  for (const pocket::ToolCall& call : result.calls) ExpectValidCall(call.name, call.arguments);
  if (result.stop_reason == POCKET_STOP_EOS) EXPECT_FALSE(result.calls.empty()) << result.text;
}

TEST_F(ToolCalls, Cli) {
  std::ofstream(dir_ + ".json") << R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Weather forecast.", "parameters": )"
                                << kWeather << "}}]";
  const std::string chat = "chat -m '" + dir_ + ".pocket' --no-think --temp 1 -n 100 --tools '" +
                           dir_ + ".json' --tool-required";
  int calls = 0;
  for (const char* seed : {"1", "2", "3"}) {
    const auto out = RunCli(chat + " --seed " + seed, "Weather?\n");
    ASSERT_EQ(out.exit_code, 0) << out.out;
    for (size_t at = out.out.find("\ntool call: "); at != std::string::npos;
         at = out.out.find("\ntool call: ", at + 1)) {
      const size_t name = at + 12, space = out.out.find(' ', name);
      const size_t end = out.out.find('\n', space);
      ExpectValidCall(out.out.substr(name, space - name),
                      out.out.substr(space + 1, end - space - 1));
      ++calls;
    }
  }
  EXPECT_GT(calls, 0);
  std::ofstream(dir_ + ".json") << R"([{"name": "a b"}])";
  const auto out = RunCli(chat, "", true);
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.out.find("error: --tools: tool 0: the name 'a b'"), std::string::npos) << out.out;
}

}  // namespace
