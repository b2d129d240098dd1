// Speculative decoding through the C API (pocket_sampling's speculation,
// max_draft, lookup_text and draft_session; pocket_session_new_draft;
// pocket_generation's step counts) on a tiny synthetic Qwen3: the text
// equals decoding without speculation (the default, AUTO, too), a draft
// session's budget comes out of the target's, bad values are
// POCKET_INVALID_ARGUMENT, and a caller built against API version 9 (no
// such fields) generates as before.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "pocket/pocket.h"
#include "testing/run_cli.h"

namespace {

using pocket::testing::RunCli;

class Speculation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = std::string(POCKET_BINARY_DIR) + "/speculation_test_" + std::to_string(getpid()) +
            ".pocket";
    const auto out = RunCli("synth --preset tiny-qwen3 --quant f32 -o '" + path_ + "'");
    ASSERT_EQ(out.exit_code, 0) << out.out;
  }
  static void TearDownTestSuite() { std::remove(path_.c_str()); }

  void SetUp() override {
    ASSERT_EQ(pocket_model_load(path_.c_str(), nullptr, &model_), POCKET_OK) << pocket_last_error();
  }
  void TearDown() override { pocket_model_free(model_); }

  // Generates in a fresh session (or in `session` when given).
  pocket_status Generate(const pocket_sampling& sampling, std::string* text,
                         pocket_generation* result, pocket_session* given = nullptr) {
    pocket_session* session = given;
    if (session == nullptr) {
      EXPECT_EQ(pocket_session_new(model_, nullptr, &session), POCKET_OK) << pocket_last_error();
    }
    text->clear();
    const pocket_status s = pocket_generate(
        session, "a b c a b c a b", &sampling,
        [](const char* piece, size_t len, int32_t, void* user) {
          static_cast<std::string*>(user)->append(piece, len);
          return 0;
        },
        text, result);
    if (given == nullptr) pocket_session_free(session);
    return s;
  }

  static std::string path_;
  pocket_model* model_ = nullptr;
};

std::string Speculation::path_;

TEST_F(Speculation, TextEqualsPlainDecoding) {
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  sampling.speculation = POCKET_SPECULATION_OFF;
  sampling.max_new_tokens = 40;
  sampling.ignore_eos = 1;
  std::string plain, fast;
  pocket_generation result;
  pocket_generation_init(&result);
  ASSERT_EQ(Generate(sampling, &plain, &result), POCKET_OK) << pocket_last_error();
  EXPECT_EQ(result.n_drafted, 0);
  EXPECT_EQ(result.n_decode_steps, 39);  // the last token is never run
  sampling.speculation = POCKET_SPECULATION_NGRAM;
  sampling.max_draft = 4;
  sampling.lookup_text = "a b c d e f";
  ASSERT_EQ(Generate(sampling, &fast, &result), POCKET_OK) << pocket_last_error();
  EXPECT_EQ(fast, plain);
  EXPECT_EQ(result.n_generated, 40);
  EXPECT_LE(result.n_accepted, result.n_drafted);
  // A kept guess saves a step.
  EXPECT_EQ(result.n_decode_steps, 39 - result.n_accepted);
  // The default, prompt lookup where the backend is exact.
  pocket_sampling defaults;
  pocket_sampling_init(&defaults);
  EXPECT_EQ(defaults.speculation, POCKET_SPECULATION_AUTO);
  defaults.max_new_tokens = 40;
  defaults.ignore_eos = 1;
  std::string automatic;
  ASSERT_EQ(Generate(defaults, &automatic, &result), POCKET_OK) << pocket_last_error();
  EXPECT_EQ(automatic, plain);
  EXPECT_EQ(result.n_decode_steps, 39 - result.n_accepted);
}

TEST_F(Speculation, DraftModelTextEqualsPlainDecoding) {
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  sampling.max_new_tokens = 30;
  sampling.ignore_eos = 1;
  std::string plain, fast;
  ASSERT_EQ(Generate(sampling, &plain, nullptr), POCKET_OK) << pocket_last_error();
  // The model drafting for itself.
  pocket_session* draft = nullptr;
  ASSERT_EQ(pocket_session_new(model_, nullptr, &draft), POCKET_OK) << pocket_last_error();
  sampling.speculation = POCKET_SPECULATION_MODEL;
  sampling.draft_session = draft;
  pocket_generation result;
  pocket_generation_init(&result);
  ASSERT_EQ(Generate(sampling, &fast, &result), POCKET_OK) << pocket_last_error();
  EXPECT_EQ(fast, plain);
  EXPECT_EQ(result.n_decode_steps, 29 - result.n_accepted);
  // The draft session is free again, and cannot draft for itself.
  EXPECT_EQ(Generate(sampling, &fast, nullptr, draft), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("draft_session is the session generating"),
            std::string::npos)
      << pocket_last_error();
  pocket_session_free(draft);
}

uint64_t Budget(const pocket_session* session) {
  pocket_memory_usage usage;
  pocket_memory_usage_init(&usage);
  EXPECT_EQ(pocket_session_memory(session, &usage), POCKET_OK) << pocket_last_error();
  return usage.budget;
}

// pocket_session_new_draft: the draft session's budget comes out of the
// target's, and the text equals plain decoding in a session with the
// budget left to the target (whether or not the cost model verified any
// guess of the model drafting for itself).
TEST_F(Speculation, ADraftSessionSharesTheBudget) {
  pocket_session_options options;
  pocket_session_options_init(&options);
  options.budget_bytes = 64ull << 20;
  pocket_session *target = nullptr, *draft = nullptr;
  ASSERT_EQ(pocket_session_new(model_, &options, &target), POCKET_OK) << pocket_last_error();
  ASSERT_EQ(pocket_session_new_draft(target, model_, &draft), POCKET_OK) << pocket_last_error();
  EXPECT_EQ(Budget(target) + Budget(draft), options.budget_bytes);
  EXPECT_LT(Budget(draft), options.budget_bytes);

  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  sampling.max_new_tokens = 30;
  sampling.ignore_eos = 1;
  sampling.speculation = POCKET_SPECULATION_OFF;
  options.budget_bytes = Budget(target);
  pocket_session* plain_session = nullptr;
  ASSERT_EQ(pocket_session_new(model_, &options, &plain_session), POCKET_OK);
  std::string plain, fast;
  ASSERT_EQ(Generate(sampling, &plain, nullptr, plain_session), POCKET_OK) << pocket_last_error();
  sampling.speculation = POCKET_SPECULATION_MODEL;
  sampling.draft_session = draft;
  pocket_generation result;
  pocket_generation_init(&result);
  ASSERT_EQ(Generate(sampling, &fast, &result, target), POCKET_OK) << pocket_last_error();
  EXPECT_EQ(fast, plain);
  EXPECT_EQ(result.n_decode_steps, 29 - result.n_accepted);

  pocket_session* refused = nullptr;
  EXPECT_EQ(pocket_session_new_draft(target, nullptr, &refused), POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(pocket_session_new_draft(nullptr, model_, &refused), POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(pocket_session_new_draft(target, model_, nullptr), POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(refused, nullptr);
  pocket_session_free(plain_session);
  pocket_session_free(draft);
  pocket_session_free(target);
}

TEST_F(Speculation, BadValuesAreInvalidArguments) {
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  sampling.max_new_tokens = 4;
  std::string text;
  sampling.speculation = 7;
  EXPECT_EQ(Generate(sampling, &text, nullptr), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("speculation 7"), std::string::npos);
  sampling.speculation = POCKET_SPECULATION_MODEL;
  EXPECT_EQ(Generate(sampling, &text, nullptr), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("needs a draft_session"), std::string::npos);
  sampling.speculation = POCKET_SPECULATION_NGRAM;
  sampling.max_draft = 16;
  EXPECT_EQ(Generate(sampling, &text, nullptr), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("max_draft 16"), std::string::npos);
}

// A caller built against API version 9: its pocket_sampling ends before
// speculation, its pocket_generation before n_decode_steps (nothing is
// written there).
TEST_F(Speculation, VersionNineCallersGenerateAsBefore) {
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  sampling.max_new_tokens = 6;
  sampling.ignore_eos = 1;
  sampling.speculation = 99;  // not read
  sampling.struct_size = offsetof(pocket_sampling, speculation);
  struct {
    pocket_generation g;
    char canary[sizeof(pocket_generation)];
  } result;
  pocket_generation_init(&result.g);
  result.g.struct_size = offsetof(pocket_generation, n_decode_steps);
  std::memset(reinterpret_cast<char*>(&result.g) + result.g.struct_size, 0x5A,
              sizeof(pocket_generation) - result.g.struct_size);
  std::string text;
  ASSERT_EQ(Generate(sampling, &text, &result.g), POCKET_OK) << pocket_last_error();
  EXPECT_EQ(result.g.n_generated, 6);
  const unsigned char* tail =
      reinterpret_cast<const unsigned char*>(&result.g) + result.g.struct_size;
  for (size_t i = 0; i < sizeof(pocket_generation) - result.g.struct_size; ++i) {
    ASSERT_EQ(tail[i], 0x5A) << i;
  }
}

}  // namespace
