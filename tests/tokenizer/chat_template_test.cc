// Chat templates: the Qwen3 goldens rendered by Hugging Face's Jinja (text
// and ids), hand-written expectations for every kind, template detection,
// and the custom template language with its errors.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace pocket {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kQwen3Dir = std::string(POCKET_TEST_DATA) + "/qwen3-tokenizer/";

struct GoldenRow {
  std::string name;
  std::vector<ChatMessage> messages;
  ChatOptions options;
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<GoldenRow> LoadGoldens() {
  std::vector<GoldenRow> rows;
  std::istringstream lines(ReadFile(kQwen3Dir + "chat-template-golden.jsonl"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    StatusOr<Json> j = ParseJson(line, "chat golden row");
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    if (!j.ok()) continue;
    GoldenRow row;
    EXPECT_TRUE(GetString(*j, "name", &row.name, "golden").ok());
    EXPECT_TRUE(GetString(*j, "text", &row.text, "golden").ok());
    std::vector<int64_t> ids;
    EXPECT_TRUE(GetIntArray(*j, "ids", &ids, "golden").ok());
    row.ids.assign(ids.begin(), ids.end());
    EXPECT_TRUE(
        GetOptBool(*j, "add_generation_prompt", &row.options.add_generation_prompt, "golden").ok());
    EXPECT_TRUE(GetOptBool(*j, "enable_thinking", &row.options.enable_thinking, "golden").ok());
    const Json* messages = FindMember(*j, "messages");
    EXPECT_TRUE(messages != nullptr && messages->is_array());
    if (messages == nullptr || !messages->is_array()) continue;
    for (const Json& m : *messages) {
      ChatMessage msg;
      EXPECT_TRUE(GetString(m, "role", &msg.role, "golden message").ok());
      EXPECT_TRUE(GetString(m, "content", &msg.content, "golden message").ok());
      row.messages.push_back(msg);
    }
    rows.push_back(row);
  }
  return rows;
}

std::string RenderOrDie(const std::string& kind, const std::vector<ChatMessage>& messages,
                        const ChatOptions& options = ChatOptions()) {
  StatusOr<std::string> r = RenderChat(kind, "", messages, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::string();
}

TEST(ChatTemplateTest, Qwen3GoldenTexts) {
  const std::vector<GoldenRow> rows = LoadGoldens();
  ASSERT_EQ(rows.size(), 6u);
  for (const GoldenRow& row : rows) {
    StatusOr<std::string> text = RenderChat("qwen3", "", row.messages, row.options);
    ASSERT_TRUE(text.ok()) << row.name << ": " << text.status().ToString();
    EXPECT_EQ(*text, row.text) << row.name;
  }
}

TEST(ChatTemplateTest, Qwen3GoldenIds) {
  StatusOr<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromHfJson(
      ReadFile(kQwen3Dir + "tokenizer.json"), ReadFile(kQwen3Dir + "tokenizer_config.json"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::vector<GoldenRow> rows = LoadGoldens();
  ASSERT_EQ(rows.size(), 6u);
  for (const GoldenRow& row : rows) {
    StatusOr<std::string> text = RenderChat("qwen3", "", row.messages, row.options);
    ASSERT_TRUE(text.ok()) << row.name << ": " << text.status().ToString();
    StatusOr<std::vector<int32_t>> ids = (*tok)->Encode(*text, /*parse_special=*/true);
    ASSERT_TRUE(ids.ok()) << row.name << ": " << ids.status().ToString();
    EXPECT_EQ(*ids, row.ids) << row.name;
  }
}

TEST(ChatTemplateTest, Qwen3ThinkingSwitch) {
  const std::vector<ChatMessage> msgs = {{"user", "hi"}};
  ChatOptions on;
  ChatOptions off;
  off.enable_thinking = false;
  EXPECT_EQ(RenderOrDie("qwen3", msgs, on),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(RenderOrDie("qwen3", msgs, off),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // Without a generation prompt the switch has nothing to attach to.
  off.add_generation_prompt = false;
  EXPECT_EQ(RenderOrDie("qwen3", msgs, off), "<|im_start|>user\nhi<|im_end|>\n");
}

// Turns after the last real user query (an agentic step answered by tool
// responses) keep their reasoning; the final assistant turn always gets a
// think block, empty when it has no reasoning.
TEST(ChatTemplateTest, Qwen3ReasoningAfterLastQueryIsKept) {
  const std::vector<ChatMessage> msgs = {
      {"user", "q"},
      {"assistant", "<think>\nr\n</think>\n\ncall"},
      {"user", "<tool_response>\nx\n</tool_response>"},
      {"assistant", "done"},
  };
  ChatOptions options;
  options.add_generation_prompt = false;
  EXPECT_EQ(RenderOrDie("qwen3", msgs, options),
            "<|im_start|>user\nq<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nr\n</think>\n\ncall<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nx\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\ndone<|im_end|>\n");
}

TEST(ChatTemplateTest, Qwen3ReasoningSplitStripsNewlines) {
  ChatOptions options;
  options.add_generation_prompt = false;
  // Surplus newlines around the reasoning and before the answer are
  // stripped; text before a missing "<think>" counts as reasoning.
  EXPECT_EQ(
      RenderOrDie("qwen3", {{"user", "u"}, {"assistant", "<think>\n\nr\n\n</think>\n\n\nans"}},
                  options),
      "<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</think>\n\nans"
      "<|im_end|>\n");
  EXPECT_EQ(RenderOrDie("qwen3", {{"user", "u"}, {"assistant", "abc</think>ans"}}, options),
            "<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n<think>\nabc\n</think>\n\nans"
            "<|im_end|>\n");
}

TEST(ChatTemplateTest, Qwen3HistoricalTurnsAndLateSystem) {
  const std::vector<ChatMessage> msgs = {
      {"user", "a"},
      {"assistant", "<think>old</think>b"},
      {"system", "late"},
      {"user", "c"},
  };
  EXPECT_EQ(RenderOrDie("qwen3", msgs),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n"
            "<|im_start|>system\nlate<|im_end|>\n<|im_start|>user\nc<|im_end|>\n"
            "<|im_start|>assistant\n");
}

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."},
    {"user", "Hi"},
    {"assistant", "Hello!"},
    {"user", "Bye"},
};

TEST(ChatTemplateTest, ChatMl) {
  EXPECT_EQ(RenderOrDie("chatml", kConversation),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
  // No default system prompt is injected, unlike Qwen2/Qwen2.5's templates.
  ChatOptions options;
  options.add_generation_prompt = false;
  EXPECT_EQ(RenderOrDie("chatml", {{"user", "x"}}, options), "<|im_start|>user\nx<|im_end|>\n");
}

TEST(ChatTemplateTest, Llama2) {
  EXPECT_EQ(
      RenderOrDie("llama2", kConversation),
      "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  // Contents are stripped of surrounding whitespace as the template's strip().
  EXPECT_EQ(RenderOrDie("llama2", {{"user", "  x \n"}, {"assistant", "\ty "}}),
            "<s>[INST] x [/INST] y </s>");
}

TEST(ChatTemplateTest, Llama2RoleOrderErrors) {
  StatusOr<std::string> r = RenderChat("llama2", "", {{"assistant", "x"}}, ChatOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("message 0 has role 'assistant'"), std::string::npos)
      << r.status().message();
  r = RenderChat("llama2", "", {{"user", "a"}, {"user", "b"}}, ChatOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("message 1 has role 'user'"), std::string::npos);
  r = RenderChat("llama2", "", {{"system", "s"}}, ChatOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("only a system message"), std::string::npos);
}

TEST(ChatTemplateTest, Llama3) {
  EXPECT_EQ(RenderOrDie("llama3", kConversation),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Jinja's trim removes Unicode whitespace too (U+3000 ideographic space).
  ChatOptions options;
  options.add_generation_prompt = false;
  EXPECT_EQ(RenderOrDie("llama3", {{"user", "\xE3\x80\x80 hi\n"}}, options),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>");
}

TEST(ChatTemplateTest, NoneConcatenates) {
  EXPECT_EQ(RenderOrDie("none", kConversation), "Be brief.HiHello!Bye");
}

TEST(ChatTemplateTest, Validation) {
  StatusOr<std::string> r = RenderChat("qwen3", "", {}, ChatOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("empty"), std::string::npos);

  r = RenderChat("chatml", "", {{"user", "a"}, {"function", "b"}}, ChatOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("message 1 has unknown role 'function'"), std::string::npos)
      << r.status().message();
  // Tool results: only Qwen3's template renders them.
  r = RenderChat("chatml", "", {{"user", "a"}, {"tool", "b"}}, ChatOptions());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);

  r = RenderChat("vicuna", "", {{"user", "a"}}, ChatOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown chat template kind 'vicuna'"), std::string::npos);
}

TEST(ChatTemplateTest, DetectKinds) {
  StatusOr<Json> config = ParseJson(ReadFile(kQwen3Dir + "tokenizer_config.json"), "config");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  std::string qwen3_template;
  ASSERT_TRUE(GetString(*config, "chat_template", &qwen3_template, "config").ok());
  EXPECT_EQ(DetectChatTemplateKind(qwen3_template), "qwen3");

  EXPECT_EQ(DetectChatTemplateKind(
                "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"),
            "chatml");
  EXPECT_EQ(DetectChatTemplateKind(
                "{% set content = '<|start_header_id|>' + message['role'] + "
                "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' %}"),
            "llama3");
  EXPECT_EQ(DetectChatTemplateKind("{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"),
            "llama2");
  EXPECT_EQ(DetectChatTemplateKind("{{ messages[0]['content'] }}"), "none");
  EXPECT_EQ(DetectChatTemplateKind(""), "none");
}

const char kCustomTemplate[] =
    "{% prefix %}<bos>{% end %}\n"
    "{% system %}[S]{{content}}\n{% end %}\n"
    "{% user %}[{{ role }}]{{content}}\n{% end %}\n"
    "{% assistant %}[A]{{content}}</s>\n{% end %}\n"
    "{% generation %}[A]{% end %}\n";

TEST(ChatTemplateTest, CustomRenders) {
  StatusOr<std::string> r = RenderChat("custom", kCustomTemplate, kConversation, ChatOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "<bos>[S]Be brief.\n[user]Hi\n[A]Hello!</s>\n[user]Bye\n[A]");
  ChatOptions options;
  options.add_generation_prompt = false;
  r = RenderChat("custom", kCustomTemplate, {{"user", "{{content}}"}}, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Message text is inserted verbatim, never re-parsed as template syntax.
  EXPECT_EQ(*r, "<bos>[user]{{content}}\n");
}

TEST(ChatTemplateTest, CustomMissingRoleSection) {
  StatusOr<std::string> r =
      RenderChat("custom", "{% user %}{{content}}{% end %}", kConversation, ChatOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("no '{% system %}' section, but message 0 has role "
                                      "'system'"),
            std::string::npos)
      << r.status().message();
}

void ExpectTemplateError(const std::string& text, const std::string& what,
                         const std::string& where) {
  StatusOr<std::string> r = RenderChat("custom", text, {{"user", "x"}}, ChatOptions());
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(where), std::string::npos) << r.status().message();
}

TEST(ChatTemplateTest, CustomTemplateErrors) {
  ExpectTemplateError("{% user %}{{content}}{% end %}\nhello", "text outside a section",
                      "at byte 31 (line 2, column 1)");
  ExpectTemplateError("{% bot %}x{% end %}", "unknown section 'bot'", "at byte 0 (line 1");
  ExpectTemplateError("\n  {% user %}x", "section 'user' has no '{% end %}'",
                      "at byte 3 (line 2, column 3)");
  ExpectTemplateError("{% user %}a{% system %}b{% end %}",
                      "section tag '{% system %}' inside section 'user'", "at byte 11");
  ExpectTemplateError("{% user %}{{ name }}{% end %}", "unknown variable '{{name}}'", "at byte 10");
  ExpectTemplateError("{% user %}{{content{% end %}", "'{{' is never closed by '}}'", "at byte 10");
  ExpectTemplateError("{% user", "'{%' is never closed by '%}'", "at byte 0");
  ExpectTemplateError("{% generation %}{{content}}{% end %}",
                      "only allowed in system, user and assistant sections", "at byte 16");
  ExpectTemplateError("{% user %}a{% end %}{% user %}b{% end %}", "section 'user' appears twice",
                      "at byte 20");
  ExpectTemplateError("{% end %}", "'{% end %}' without an open section", "at byte 0");
}

}  // namespace
}  // namespace pocket
