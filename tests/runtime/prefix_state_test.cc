// Prefix reuse and saved state: a call computes only the tokens after the
// longest common prefix with the cache (a chat's second turn only its new
// tokens, a Qwen3 chat from the last assistant turn whose empty think block
// the template drops, a repeated system prompt not at all), with logits equal
// to a from-scratch run; Save/Load round-trips to identical logits and
// rejects another model's state, another KV type and damaged files.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/generate.h"
#include "tests/runtime/qwen3_fixture.h"
#include "tests/runtime/stories_fixture.h"
#include "util/crc32c.h"

namespace pocket {
namespace {

GenerateOptions Greedy(int max_new) {
  GenerateOptions o;
  o.max_new_tokens = max_new;
  o.ignore_eos = true;
  return o;
}

// Logits of `session`'s last token, recomputed over its whole cache from
// scratch, and by running that token again in the session.
void ExpectLogitsEqualFromScratch(Session* session) {
  SessionOptions options = session->options();
  Session fresh(&session->model(), options);
  std::vector<float> expected, got;
  ASSERT_TRUE(fresh.Eval(session->tokens(), LogitsMode::kLast, &expected).ok());
  size_t computed = 0;
  ASSERT_TRUE(
      session->EvalReusingPrefix(session->tokens(), LogitsMode::kLast, &got, &computed).ok());
  EXPECT_EQ(computed, 1u);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-4) << i;
}

size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

TEST(PrefixTest, EvalReusingPrefixComputesOnlyTheRest) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.kv_type = KvType::kF32;
  Session session(model, options);
  std::vector<float> logits;
  ASSERT_TRUE(session.Eval({1, 403, 407, 261, 300}, LogitsMode::kLast, &logits).ok());
  size_t computed = 0;
  ASSERT_TRUE(
      session.EvalReusingPrefix({1, 403, 407, 9, 10, 11}, LogitsMode::kLast, &logits, &computed)
          .ok());
  EXPECT_EQ(computed, 3u);
  EXPECT_EQ(session.tokens(), (std::vector<int32_t>{1, 403, 407, 9, 10, 11}));
  ExpectLogitsEqualFromScratch(&session);
  // An error leaves the cache as it was.
  EXPECT_FALSE(
      session.EvalReusingPrefix({1, 403, 9999}, LogitsMode::kLast, &logits, &computed).ok());
  EXPECT_EQ(session.position(), 6u);
}

TEST(PrefixTest, SecondChatTurnPrefillsOnlyItsNewTokens) {
  const Model* model = testing_qwen3::Qwen3Model();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.kv_type = KvType::kF32;
  Session session(model, options);
  ChatOptions chat;
  chat.enable_thinking = true;  // the generation prompt is kept as is
  GenerateResult r1, r2;
  ASSERT_TRUE(GenerateChat(&session, {{"system", "Be brief."}, {"user", "Hi there"}}, chat,
                           Greedy(6), nullptr, &r1)
                  .ok());
  ASSERT_EQ(r1.stop, "length");
  const size_t before = session.position();
  ASSERT_TRUE(GenerateChat(&session, {{"user", "And then?"}}, chat, Greedy(1), nullptr, &r2).ok());
  // The last sampled token of turn 1 and the new turn's tokens, nothing else.
  EXPECT_EQ(r2.prefill_tokens, static_cast<int>(r2.prompt_ids.size()) + 1);
  EXPECT_EQ(session.position(), before + 1 + r2.prompt_ids.size());
  ExpectLogitsEqualFromScratch(&session);
}

TEST(PrefixTest, Qwen3ChatRecomputesFromTheLastAssistantTurnOnly) {
  const Model* model = testing_qwen3::Qwen3Model();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.kv_type = KvType::kF32;
  Session session(model, options);
  ChatOptions chat;
  chat.enable_thinking = false;  // turn 1 is prompted with an empty think block
  GenerateResult r1, r2;
  ASSERT_TRUE(GenerateChat(&session, {{"system", "Be brief."}, {"user", "Hi there"}}, chat,
                           Greedy(5), nullptr, &r1)
                  .ok());
  std::vector<int32_t> before = session.tokens();
  before.insert(before.end(), session.continuation()->pending.begin(),
                session.continuation()->pending.end());
  ASSERT_TRUE(GenerateChat(&session, {{"user", "And then?"}}, chat, Greedy(1), nullptr, &r2).ok());
  // The history is rendered without turn 1's think block, so the cache is
  // reused up to the start of that assistant turn and recomputed from there.
  const size_t common = CommonPrefix(before, session.tokens());
  EXPECT_GT(common, 5u);
  EXPECT_LT(common, r1.prompt_ids.size());
  EXPECT_EQ(r2.prefill_tokens, static_cast<int>(session.position() - common));
  EXPECT_EQ(r2.prompt_ids.size(), session.position());  // the whole rendering
  ExpectLogitsEqualFromScratch(&session);
}

TEST(PrefixTest, NewConversationReusesTheSystemPrompt) {
  const Model* model = testing_qwen3::Qwen3Model();
  ASSERT_NE(model, nullptr);
  Session session(model, SessionOptions());
  GenerateResult r1, r2;
  const std::string system(200, 'x');
  ASSERT_TRUE(GenerateChat(&session, {{"system", system}, {"user", "One"}}, ChatOptions(),
                           Greedy(3), nullptr, &r1)
                  .ok());
  session.NewConversation();
  ASSERT_TRUE(GenerateChat(&session, {{"system", system}, {"user", "Two"}}, ChatOptions(),
                           Greedy(3), nullptr, &r2)
                  .ok());
  // The system turn (over 20 tokens) is not computed again.
  EXPECT_LT(r2.prefill_tokens, static_cast<int>(r2.prompt_ids.size()) - 20);
}

std::string TempPath(const std::string& name) {
  return std::string(POCKET_BINARY_DIR) + "/runtime_test_" + name + "_" + std::to_string(getpid());
}

TEST(StateTest, SaveLoadRoundTripsToIdenticalLogits) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  for (KvType type :
       {KvType::kF16, KvType::kQ8, KvType::kF32, KvType::kBf16}) {
    SessionOptions options;
    options.kv_type = type;
    Session a(model, options);
    GenerateResult r;
    ASSERT_TRUE(Generate(&a, "Once upon a time", Greedy(90), nullptr, &r).ok());
    const std::string path = TempPath("state");
    ASSERT_TRUE(a.Save(path).ok());
    Session b(model, options);
    ASSERT_TRUE(b.Eval({1, 2, 3}, LogitsMode::kLast, nullptr).ok());
    Status s = b.Load(path);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(b.tokens(), a.tokens());
    EXPECT_EQ(b.continuation()->pending, a.continuation()->pending);
    // Both continue identically.
    GenerateResult ra, rb;
    ASSERT_TRUE(Generate(&a, " The end", Greedy(20), nullptr, &ra).ok());
    ASSERT_TRUE(Generate(&b, " The end", Greedy(20), nullptr, &rb).ok());
    EXPECT_EQ(ra.ids, rb.ids);
    std::vector<float> la, lb;
    ASSERT_TRUE(a.Eval({400}, LogitsMode::kLast, &la).ok());
    ASSERT_TRUE(b.Eval({400}, LogitsMode::kLast, &lb).ok());
    EXPECT_EQ(la, lb);
    std::remove(path.c_str());
  }
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(StateTest, LoadRejectsOtherModelsTypesAndDamage) {
  const Model* stories = testing_stories::StoriesModel();
  const Model* qwen = testing_qwen3::Qwen3Model();
  ASSERT_NE(stories, nullptr);
  ASSERT_NE(qwen, nullptr);
  const std::string path = TempPath("state_bad");
  Session other(qwen, SessionOptions());
  ASSERT_TRUE(other.Eval({1, 2, 3}, LogitsMode::kLast, nullptr).ok());
  ASSERT_TRUE(other.Save(path).ok());

  Session session(stories, SessionOptions());
  ASSERT_TRUE(session.Eval({1, 403, 407}, LogitsMode::kLast, nullptr).ok());
  Status s = session.Load(path);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("saved with a different model file"), std::string::npos)
      << s.message();
  EXPECT_EQ(session.tokens(), (std::vector<int32_t>{1, 403, 407}));

  ASSERT_TRUE(session.Save(path).ok());
  SessionOptions q8;
  q8.kv_type = KvType::kQ8;
  Session q8_session(stories, q8);
  s = q8_session.Load(path);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("holds a f16 KV cache but this session uses q8"), std::string::npos)
      << s.message();

  const std::string good = ReadBytes(path);
  std::string bad = good;
  bad[bad.size() / 2] ^= 1;
  WriteBytes(path, bad);
  s = session.Load(path);
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_NE(s.message().find("CRC32C"), std::string::npos) << s.message();
  WriteBytes(path, good.substr(0, 20));
  EXPECT_EQ(session.Load(path).code(), StatusCode::kCorruptFile);
  EXPECT_EQ(session.Load(path + ".missing").code(), StatusCode::kNotFound);
  EXPECT_EQ(session.tokens(), (std::vector<int32_t>{1, 403, 407}));
  WriteBytes(path, good);
  EXPECT_TRUE(session.Load(path).ok());
  std::remove(path.c_str());
}

// A KV type code no version 1 state uses (the CRC32C recomputed, so the
// field itself is what the reader sees) is the file's fault, named as such,
// not a "--kv unknown" to give.
TEST(StateTest, UnknownKvTypeSaysWhatIsWrongWithTheFile) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const std::string path = TempPath("state_kv_type");
  Session session(model, SessionOptions());
  ASSERT_TRUE(session.Eval({1, 403, 407}, LogitsMode::kLast, nullptr).ok());
  ASSERT_TRUE(session.Save(path).ok());
  std::string bytes = ReadBytes(path);
  const uint32_t type = 9;
  std::memcpy(&bytes[12], &type, sizeof(type));  // after the magic and the version
  const uint32_t crc = Crc32c(0, bytes.data(), bytes.size() - sizeof(crc));
  std::memcpy(&bytes[bytes.size() - sizeof(crc)], &crc, sizeof(crc));
  WriteBytes(path, bytes);
  const Status s = session.Load(path);
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  for (const char* part : {"its KV type code is 9", "0 (f32), 1 (f16), 2 (q8) or 3 (bf16)",
                           "save the session again"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << part << " in: " << s.message();
  }
  EXPECT_EQ(s.message().find("unknown"), std::string::npos) << s.message();
  EXPECT_EQ(session.tokens(), (std::vector<int32_t>{1, 403, 407}));
  std::remove(path.c_str());
}

// A chat saved after its first turn and loaded into a new session (an app
// restarted) continues as the session that never stopped: the second turn
// prefills the same few new tokens and replies with the same ids.
TEST(StateTest, LoadedChatContinuesWithoutRecomputingItsTurns) {
  const Model* model = testing_qwen3::Qwen3Model();
  ASSERT_NE(model, nullptr);
  const std::string path = TempPath("state_chat");
  SessionOptions options;
  options.kv_type = KvType::kF32;
  ChatOptions chat;
  Session first(model, options);
  GenerateResult r1;
  ASSERT_TRUE(GenerateChat(&first, {{"system", "Be brief."}, {"user", "Hi there"}}, chat, Greedy(3),
                           nullptr, &r1)
                  .ok());
  ASSERT_TRUE(first.Save(path).ok());
  GenerateResult kept, loaded;
  ASSERT_TRUE(GenerateChat(&first, {{"user", "And then?"}}, chat, Greedy(4), nullptr, &kept).ok());

  Session second(model, options);
  ASSERT_TRUE(second.Load(path).ok());
  ASSERT_TRUE(
      GenerateChat(&second, {{"user", "And then?"}}, chat, Greedy(4), nullptr, &loaded).ok());
  EXPECT_EQ(loaded.prefill_tokens, kept.prefill_tokens);
  EXPECT_LT(static_cast<size_t>(loaded.prefill_tokens), r1.prompt_ids.size());
  EXPECT_EQ(loaded.ids, kept.ids);
  EXPECT_EQ(second.tokens(), first.tokens());
  std::remove(path.c_str());
}

// A state written by another Pocket version (its version string patched,
// the CRC32C recomputed) or in an older format is refused, naming both
// versions, and the session is unchanged.
TEST(StateTest, StateFromAnotherPocketVersionIsRefused) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const std::string path = TempPath("state_version");
  Session session(model, SessionOptions());
  ASSERT_TRUE(session.Eval({1, 403, 407}, LogitsMode::kLast, nullptr).ok());
  ASSERT_TRUE(session.Save(path).ok());
  const std::string good = ReadBytes(path);
  const auto with_crc = [](std::string bytes) {
    const uint32_t crc = Crc32c(0, bytes.data(), bytes.size() - sizeof(crc));
    std::memcpy(&bytes[bytes.size() - sizeof(crc)], &crc, sizeof(crc));
    return bytes;
  };
  const std::string version = POCKET_PROJECT_VERSION;
  const size_t at = good.rfind(version);
  ASSERT_NE(at, std::string::npos);
  std::string other = good;
  other.replace(at, version.size(), std::string(version.size(), '9'));
  WriteBytes(path, with_crc(other));
  Status s = session.Load(path);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("saved by Pocket " + std::string(version.size(), '9')),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("this is Pocket " + version), std::string::npos) << s.message();

  std::string old = good;
  const uint32_t v1 = 1;
  std::memcpy(&old[8], &v1, sizeof(v1));  // after the magic
  WriteBytes(path, with_crc(old));
  s = session.Load(path);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("session state version 1"), std::string::npos) << s.message();
  EXPECT_EQ(session.tokens(), (std::vector<int32_t>{1, 403, 407}));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace pocket
