// Tool calling: the Qwen3 template's tools section and tool results against
// goldens rendered by Hugging Face transformers (tools/
// make_tool_chat_goldens.py), the tool-call grammar on hand-written replies,
// the calls read back, and token masks with the tool grammar against brute
// force over the Qwen3 vocabulary.
#include "grammar/tool_calls.h"

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "grammar_testing.h"
#include "schema_validator.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_testing.h"

namespace pocket {
namespace {

using grammar::ToolCall;
using grammar::ToolChoice;
using grammar::ToolDefinition;
using testing::Matches;
using testing::MustCompile;
using OrderedJson = nlohmann::ordered_json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char kWeatherParams[] =
    R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
        "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city"],
        "additionalProperties": false})";
const char kFlightParams[] =
    R"({"type": "object", "properties": {"date": {"type": "string", "format": "date"},
        "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
        "route": {"$ref": "#/$defs/route"}}, "required": ["route", "passengers"],
        "additionalProperties": false,
        "$defs": {"route": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]{3}$"},
                            "minItems": 2, "maxItems": 2}}})";

std::vector<ToolDefinition> Tools() {
  return {{"get_weather", "Current weather.", kWeatherParams},
          {"search_flights", "Flights.", kFlightParams},
          {"now", "The time.", ""}};
}

TEST(ToolCalls, Qwen3TemplateMatchesTransformers) {
  std::istringstream lines(ReadFile(std::string(POCKET_TEST_DATA) +
                                    "/qwen3-tokenizer/chat-template-tools-golden.jsonl"));
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const OrderedJson row = OrderedJson::parse(line, nullptr, false);
    ASSERT_FALSE(row.is_discarded());
    const std::string name = row["name"];
    ChatOptions options;
    options.enable_thinking = row.value("enable_thinking", true);
    for (const OrderedJson& t : row["tools"]) {
      const OrderedJson& f = t["function"];
      ToolDefinition def{f["name"], f["description"], f["parameters"].dump()};
      StatusOr<std::string> text = grammar::ToolSignatureJson(def);
      ASSERT_TRUE(text.ok()) << text.status().ToString();
      options.tools.push_back(*text);
    }
    std::vector<ChatMessage> messages;
    for (const OrderedJson& m : row["messages"]) messages.push_back({m["role"], m["content"]});
    StatusOr<std::string> rendered = RenderChat("qwen3", "", messages, options);
    ASSERT_TRUE(rendered.ok()) << name << ": " << rendered.status().ToString();
    EXPECT_EQ(*rendered, row["text"].get<std::string>()) << name;
    ++rows;
  }
  EXPECT_EQ(rows, 6);
}

TEST(ToolCalls, OtherTemplatesRefuseTools) {
  ChatOptions options;
  options.tools = {"{}"};
  StatusOr<std::string> r = RenderChat("chatml", "", {{"user", "hi"}}, options);
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  r = RenderChat("llama3", "", {{"user", "hi"}, {"tool", "42"}}, ChatOptions());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  r = RenderChat("qwen3", "", {{"robot", "hi"}}, ChatOptions());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ToolCalls, SignatureOfAToolWithoutParameters) {
  StatusOr<std::string> s = grammar::ToolSignatureJson({"now", "Tab\there, \"quoted\", é", ""});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s,
            "{\"type\": \"function\", \"function\": {\"name\": \"now\", \"description\": "
            "\"Tab\\there, \\\"quoted\\\", é\", \"parameters\": {\"type\": \"object\", "
            "\"properties\": {}}}}");
}

TEST(ToolCalls, InvalidTools) {
  auto code = [](std::vector<ToolDefinition> tools) {
    return grammar::CompileToolCallGrammar(tools, ToolChoice::kAuto).status();
  };
  EXPECT_EQ(code({}).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(code({{"", "", ""}}).message().find("name"), std::string::npos);
  EXPECT_NE(code({{"has space", "", ""}}).message().find("'has space'"), std::string::npos);
  EXPECT_NE(code({{std::string(65, 'a'), "", ""}}).message().find("1 to 64"), std::string::npos);
  EXPECT_NE(code({{"a", "", ""}, {"a", "", ""}}).message().find("second tool named 'a'"),
            std::string::npos);
  EXPECT_NE(code({{"a", "\xff", ""}}).message().find("not UTF-8"), std::string::npos);
  EXPECT_NE(code({{"a", "", "{"}}).message().find("not valid JSON"), std::string::npos);
  const Status s = code({{"a", "", R"({"type": "array", "uniqueItems": true})"}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tool 'a': json schema: unsupported keyword 'uniqueItems'"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(grammar::ToolSignatureJson({"a b", "", ""}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ToolCalls, ParseDefinitions) {
  StatusOr<std::vector<ToolDefinition>> tools = grammar::ParseToolDefinitions(
      R"([{"type": "function", "function": {"name": "f", "description": "d",
            "parameters": {"type": "object", "properties": {"z": {}, "a": {}}}}},
          {"name": "g"}])");
  ASSERT_TRUE(tools.ok()) << tools.status().ToString();
  ASSERT_EQ(tools->size(), 2u);
  EXPECT_EQ((*tools)[0].name, "f");
  EXPECT_EQ((*tools)[0].description, "d");
  EXPECT_EQ((*tools)[0].parameters, R"({"type":"object","properties":{"z":{},"a":{}}})");
  EXPECT_EQ((*tools)[1].name, "g");
  EXPECT_EQ((*tools)[1].parameters, "");
  EXPECT_EQ(grammar::ParseToolDefinitions("{}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(grammar::ParseToolDefinitions("[1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(grammar::ParseToolDefinitions(R"([{"name": 1}])").status().message().find("tool 0"),
            std::string::npos);
  EXPECT_NE(
      grammar::ParseToolDefinitions(R"([{"description": "x"}])").status().message().find("tool 0"),
      std::string::npos);
  EXPECT_NE(grammar::ParseToolDefinitions(R"([{"name": "a"}, {"name": "a"}])")
                .status()
                .message()
                .find("second tool named 'a'"),
            std::string::npos);
}

TEST(ToolCalls, AutoGrammarLeavesTextFreeAndChecksCalls) {
  auto g = MustCompile(grammar::CompileToolCallGrammar(Tools(), ToolChoice::kAuto));
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>";
  EXPECT_TRUE(Matches(g, ""));
  EXPECT_TRUE(Matches(g, "Any text, </tool_call>, <tool_cal, <tool_callx> and 日本語."));
  EXPECT_TRUE(Matches(g, "<think>\nmaybe\n</think>\n\n" + call));
  EXPECT_TRUE(Matches(g, "Two: " + call + "\n" + call + " done"));
  EXPECT_TRUE(Matches(g, "<tool<tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call>"));
  EXPECT_TRUE(Matches(g,
                      "<tool_call>{\"name\": \"search_flights\", \"arguments\": {\"passengers\""
                      ": 2, \"route\": [\"OSL\", \"ROM\"]}}</tool_call>"));
  // Inside a call, the JSON follows the named tool's schema.
  EXPECT_FALSE(testing::IsPrefix(g, "<tool_call>{\"name\": \"get_time\""));
  EXPECT_FALSE(testing::IsPrefix(g, "<tool_call>{\"arguments\""));
  EXPECT_FALSE(Matches(g, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>"));
  EXPECT_FALSE(testing::IsPrefix(
      g, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"x\""));
  EXPECT_FALSE(Matches(g,
                       "<tool_call>{\"name\": \"search_flights\", \"arguments\": {"
                       "\"passengers\": 10, \"route\": [\"OSL\", \"ROM\"]}}</tool_call>"));
  EXPECT_FALSE(Matches(g, "<tool_call>{\"name\": \"now\", \"arguments\": {}}"));  // not closed
  EXPECT_FALSE(Matches(g, "text <tool_call>"));
}

TEST(ToolCalls, RequiredGrammarAllowsOnlyCalls) {
  auto g = MustCompile(grammar::CompileToolCallGrammar(Tools(), ToolChoice::kRequired));
  const std::string call = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  EXPECT_TRUE(Matches(g, call));
  EXPECT_TRUE(Matches(g, call + "\n" + call));
  EXPECT_TRUE(Matches(g, "<think>\nI need the time </tool_call>.\n</think>\n\n" + call));
  EXPECT_FALSE(Matches(g, ""));
  EXPECT_FALSE(testing::IsPrefix(g, "Sure"));
  EXPECT_FALSE(Matches(g, call + " thanks"));
  EXPECT_FALSE(Matches(g, "<think></think></think>" + call));
}

TEST(ToolCalls, ParseReadsCompleteCalls) {
  const std::vector<ToolCall> calls = grammar::ParseToolCalls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": "
      "\"celsius\", \"city\": \"Zürich\"}}\n</tool_call>\n<tool_call>{\"name\": \"now\", "
      "\"arguments\": {}}</tool_call><tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>"
      "<tool_call>not json</tool_call><tool_call>{\"name\": \"now\"}</tool_call>"
      "<tool_call>{\"name\": \"now\", \"arguments\": {}}");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, "{\"unit\":\"celsius\",\"city\":\"Zürich\"}");
  EXPECT_EQ(calls[1].name, "now");
  EXPECT_EQ(calls[1].arguments, "{}");
  EXPECT_TRUE(grammar::ParseToolCalls("no calls </tool_call>").empty());
}

// Random walks through the required grammar: every complete output holds
// calls whose names are tools and whose arguments pass the independent
// validator under that tool's schema.
TEST(ToolCalls, RandomWalksValidate) {
  const std::vector<ToolDefinition> tools = Tools();
  auto g = MustCompile(grammar::CompileToolCallGrammar(tools, ToolChoice::kRequired));
  std::mt19937_64 rng(11);
  int calls = 0;
  for (int walk = 0; walk < 200; ++walk) {
    grammar::Matcher m(g);
    std::string out;
    while (out.size() < 400) {
      if (m.IsComplete() && rng() % 2 == 0) break;
      std::vector<uint8_t> allowed;
      for (int b = 0; b < 256; ++b) {
        if (m.Step(m.state(), static_cast<uint8_t>(b)) != grammar::Matcher::kDead) {
          allowed.push_back(static_cast<uint8_t>(b));
        }
      }
      ASSERT_FALSE(allowed.empty()) << out;
      uint8_t b = allowed[rng() % allowed.size()];
      for (uint8_t c : allowed) {
        if ((c == '"' || c == '}' || c == ']' || c == '<' || c == '>') && rng() % 3 == 0) b = c;
      }
      ASSERT_TRUE(m.AcceptByte(b));
      out.push_back(static_cast<char>(b));
    }
    if (!m.IsComplete()) continue;
    const std::vector<ToolCall> parsed = grammar::ParseToolCalls(out);
    ASSERT_FALSE(parsed.empty()) << out;
    for (const ToolCall& call : parsed) {
      auto tool = std::find_if(tools.begin(), tools.end(),
                               [&](const ToolDefinition& t) { return t.name == call.name; });
      ASSERT_NE(tool, tools.end()) << out;
      const std::string schema =
          tool->parameters.empty() ? "{\"type\": \"object\"}" : tool->parameters;
      testing::SchemaValidator validator(nlohmann::json::parse(schema));
      EXPECT_TRUE(validator.Valid(nlohmann::json::parse(call.arguments))) << out;
      ++calls;
    }
  }
  EXPECT_GT(calls, 50);
}

bool Bit(const std::vector<uint64_t>& mask, int32_t id) { return (mask[id >> 6] >> (id & 63)) & 1; }

// Masks in free text (after each prefix of `<tool_call>`) and inside a call
// against brute force; `<tool_call>` is one added token in Qwen3's
// vocabulary and the same text in pieces.
TEST(ToolCalls, MasksMatchBruteForce) {
  const Tokenizer& tok = testing::Qwen3();
  std::vector<std::string> bytes;
  std::vector<bool> usable;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    bytes.push_back(tok.TokenBytes(id));
    usable.push_back(!tok.IsSpecial(id));
  }
  auto g = MustCompile(grammar::CompileToolCallGrammar(Tools(), ToolChoice::kAuto));
  auto trie = std::make_shared<grammar::TokenTrie>(bytes, usable);
  grammar::TokenMasker masker(g, trie, {tok.eos_id()});
  const std::string text =
      "Hi <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n"
      "</tool_call>";
  const int32_t call_token = 151657;
  ASSERT_EQ(bytes[call_token], "<tool_call>");
  for (size_t cut : {size_t{0}, size_t{3}, size_t{4}, size_t{8}, size_t{14}, size_t{16}, size_t{30},
                     size_t{62}, size_t{76}, text.size()}) {
    masker.matcher().Reset();
    ASSERT_TRUE(masker.matcher().AcceptBytes(text.substr(0, cut)));
    const std::vector<uint64_t> mask = masker.Mask();
    grammar::Matcher brute(g);
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      bool expect;
      if (id == tok.eos_id()) {
        expect = masker.matcher().IsComplete();
      } else {
        brute.Reset();
        expect = usable[id] && !bytes[id].empty() && brute.AcceptBytes(text.substr(0, cut)) &&
                 brute.AcceptBytes(bytes[id]);
      }
      ASSERT_EQ(Bit(mask, id), expect) << "token " << id << " after '" << text.substr(0, cut);
    }
    if (cut == 3) EXPECT_TRUE(Bit(mask, call_token));
  }
}

}  // namespace
}  // namespace pocket
