// pocket_chat through the C++ wrapper's Session::Chat, on a tiny synthetic
// Qwen3 with the bundled Qwen3 tokenizer and chat template. The prompts are
// checked against the conversations Jinja2 rendered from the original
// template (tests/data/qwen3-tokenizer/chat-template-golden.jsonl): a chat
// turn must prefill exactly that text's tokens and then continue exactly as
// a plain session fed those tokens does.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pocket/pocket.hpp"
#include "testing/run_cli.h"

namespace {

using pocket::testing::RunCli;

struct GoldenChat {
  std::string name;
  std::vector<pocket::Message> messages;
  bool enable_thinking = true;
  std::string text;
};

GoldenChat ReadGolden(const std::string& name) {
  std::ifstream in(std::string(POCKET_TEST_DATA) + "/qwen3-tokenizer/chat-template-golden.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line);
    if (row["name"] != name) continue;
    GoldenChat chat{name, {}, row.value("enable_thinking", true), row["text"]};
    for (const auto& m : row["messages"]) chat.messages.push_back({m["role"], m["content"]});
    return chat;
  }
  ADD_FAILURE() << "no golden conversation " << name;
  return {};
}

class ChatApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ =
        std::string(POCKET_BINARY_DIR) + "/chat_api_test_" + std::to_string(getpid()) + ".pocket";
    const auto out = RunCli("synth --preset tiny-qwen3 --quant f32 -o '" + path_ + "'");
    ASSERT_EQ(out.exit_code, 0) << out.out;
  }
  static void TearDownTestSuite() { std::remove(path_.c_str()); }

  void SetUp() override {
    pocket::ModelOptions options;
    options.threads = 1;
    ASSERT_TRUE(pocket::Model::Load(path_, options, &model_).ok()) << pocket_last_error();
  }

  pocket::Session NewSession() {
    pocket::Session session;
    pocket::SessionOptions options;
    options.kv_type = 1;  // f32: the same numbers whichever way the tokens arrive
    EXPECT_TRUE(model_.NewSession(options, &session).ok()) << pocket_last_error();
    return session;
  }

  // The greedy continuation of `ids` in a fresh session, token by token
  // through Eval's logits (no chat, no sampler).
  std::vector<int32_t> GreedyAfter(std::vector<int32_t> ids, int n) {
    pocket::Session session = NewSession();
    std::vector<int32_t> out;
    std::vector<float> logits;
    for (int i = 0; i < n; ++i) {
      EXPECT_TRUE(session.Eval(ids, &logits).ok()) << pocket_last_error();
      const int32_t next =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      out.push_back(next);
      ids = {next};
    }
    return out;
  }

  std::vector<int32_t> Tokens(const std::string& text) {
    std::vector<int32_t> ids;
    EXPECT_TRUE(model_.Tokenize(text, &ids).ok()) << pocket_last_error();
    return ids;
  }

  static pocket::Sampling Greedy(int n) {
    pocket::Sampling sampling;
    sampling.max_new_tokens = n;
    sampling.ignore_eos = 1;
    return sampling;
  }

  // Runs one chat turn, collecting the generated ids.
  static pocket::Generation Turn(pocket::Session& session,
                                 const std::vector<pocket::Message>& messages, bool thinking, int n,
                                 std::vector<int32_t>* ids) {
    pocket::Generation result;
    const pocket::Status status = session.Chat(
        messages, thinking, Greedy(n),
        [&](std::string_view, int32_t id) {
          ids->push_back(id);
          return true;
        },
        &result);
    EXPECT_TRUE(status.ok()) << pocket_last_error();
    return result;
  }

  static std::string path_;
  pocket::Model model_;
};

std::string ChatApi::path_;

// With and without thinking, a first turn prefills the golden rendering's
// tokens, no more and no fewer, and generates what they lead to.
TEST_F(ChatApi, FirstTurnPrefillsTheGoldenRendering) {
  for (const char* name :
       {"single_user_genprompt", "single_user_genprompt_nothink", "system_user_genprompt"}) {
    SCOPED_TRACE(name);
    const GoldenChat golden = ReadGolden(name);
    const std::vector<int32_t> prompt = Tokens(golden.text);
    pocket::Session session = NewSession();
    std::vector<int32_t> generated;
    const pocket::Generation r =
        Turn(session, golden.messages, golden.enable_thinking, 4, &generated);
    EXPECT_EQ(r.n_prompt_tokens, static_cast<int32_t>(prompt.size()));
    EXPECT_EQ(r.n_generated, 4);
    EXPECT_EQ(r.stop_reason, POCKET_STOP_LENGTH);
    EXPECT_EQ(generated, GreedyAfter(prompt, 4));
  }
}

// The thinking switch changes the prompt exactly as the template does: off
// appends the empty think block.
TEST_F(ChatApi, ThinkingOffAddsTheEmptyThinkBlock) {
  const std::vector<pocket::Message> hi = {{"user", "hi"}};
  std::vector<int32_t> on_ids, off_ids;
  pocket::Session on = NewSession(), off = NewSession();
  const pocket::Generation r_on = Turn(on, hi, true, 1, &on_ids);
  const pocket::Generation r_off = Turn(off, hi, false, 1, &off_ids);
  EXPECT_EQ(r_off.n_prompt_tokens - r_on.n_prompt_tokens,
            static_cast<int32_t>(Tokens("<think>\n\n</think>\n\n").size()));
}

// A second turn passes only the new message: the first turn stays in the
// cache, only the text the template appends is prefilled, and the reply is
// the one a fresh session gives for the whole conversation's tokens.
TEST_F(ChatApi, SecondTurnReusesTheFirstAndPrefillsOnlyTheNewText) {
  pocket::Session session = NewSession();
  std::vector<int32_t> first, second;
  const pocket::Generation r1 =
      Turn(session, {{"system", "Be brief."}, {"user", "What is 2+2?"}}, true, 3, &first);
  ASSERT_EQ(r1.n_generated, 3);
  const pocket::Generation r2 = Turn(session, {{"user", "And 3+3?"}}, true, 3, &second);

  // What the cache must hold before the second reply: the first prompt, the
  // three sampled ids as sampled, then the template's text after the reply.
  std::vector<int32_t> all = Tokens(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
      "<|im_start|>assistant\n");
  EXPECT_EQ(r1.n_prompt_tokens, static_cast<int32_t>(all.size()));
  all.insert(all.end(), first.begin(), first.end());
  const std::vector<int32_t> appended =
      Tokens("<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n");
  all.insert(all.end(), appended.begin(), appended.end());
  // The prompt of turn two is the appended text alone (the last sampled id
  // of turn one, still pending, is computed with it but is no prompt token).
  EXPECT_EQ(r2.n_prompt_tokens, static_cast<int32_t>(appended.size()));
  EXPECT_EQ(second, GreedyAfter(all, 3));
  EXPECT_EQ(session.position(),
            static_cast<int32_t>(all.size()) + 2);  // the last sampled id is pending
}

}  // namespace
