// The header-only C++ API (pocket.hpp) on the bundled stories260K model,
// against llama2.c run.c's greedy output (tests/data/stories260K-golden.txt).
#include "pocket/pocket.hpp"

#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_target.h"
#include "format/pocket_test_util.h"

namespace {

const char kModel[] = POCKET_TEST_MODELS "/stories260K-f32.pocket";
const char kGoldenContinuation[] =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, "
    "she saw a big, red ball. She wanted to play with it, but it was too high.\n";

// pocket_set_cpu_matrix_extension turns the prompts' matrix unit off and
// on again (where this host has one, AMX or I8MM, on before and after).
TEST(CApi, CpuMatrixExtensionCanBeTurnedOff) {
  const bool chosen = pocket::cpu::MatrixExtensionChosen();
  pocket_set_cpu_matrix_extension(0);
  EXPECT_FALSE(pocket::cpu::MatrixExtensionChosen());
  pocket_set_cpu_matrix_extension(1);
  EXPECT_EQ(pocket::cpu::MatrixExtensionChosen(), chosen);
}

TEST(CppApi, LoadFailureCarriesMessage) {
  pocket::Model model;
  pocket::Status s = pocket::Model::Load("/no/such/file.pocket", {}, &model);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/no/such/file.pocket"), std::string::npos);
}

TEST(CppApi, GreedyGenerationMatchesLlama2c) {
  pocket::Model model;
  ASSERT_TRUE(pocket::Model::Load(kModel, {}, &model).ok()) << pocket_last_error();
  EXPECT_EQ(model.architecture(), "llama");
  std::vector<int32_t> ids;
  ASSERT_TRUE(model.Tokenize("Once upon a time", &ids).ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{403, 407, 261, 378}));
  std::string text;
  ASSERT_TRUE(model.Detokenize(ids, &text).ok());
  EXPECT_EQ(text, "Once upon a time");

  pocket::Session session;
  ASSERT_TRUE(model.NewSession({}, &session).ok());
  pocket::Sampling sampling;
  sampling.max_new_tokens = 60;
  pocket::Generation gen;
  std::string streamed;
  pocket::Status s = session.Generate(
      "Once upon a time", sampling,
      [&](std::string_view piece, int32_t) {
        streamed.append(piece);
        return true;
      },
      &gen);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(gen.n_generated, 60);
  EXPECT_EQ(streamed, gen.text);
  const std::string golden = kGoldenContinuation;
  ASSERT_GE(gen.text.size(), golden.size());
  EXPECT_EQ(gen.text.substr(0, golden.size()), golden);
}

// The model drafting for itself inside the session's budget: the text is
// still llama2.c's and the two budgets add up to the one given. (Drafting
// with the model itself never pays, so the cost model may verify no
// guess; tests/runtime/draft_session_test.cc checks kept guesses with
// every draft verified.)
TEST(CppApi, ADraftSessionInsideTheBudgetKeepsTheGoldenText) {
  pocket::Model model;
  ASSERT_TRUE(pocket::Model::Load(kModel, {}, &model).ok()) << pocket_last_error();
  pocket::SessionOptions options;
  options.budget_bytes = 16u << 20;
  pocket::Session session, draft;
  ASSERT_TRUE(model.NewSession(options, &session).ok()) << pocket_last_error();
  ASSERT_TRUE(session.NewDraft(model, &draft).ok()) << pocket_last_error();
  pocket::MemoryUsage target_memory, draft_memory;
  ASSERT_TRUE(session.Memory(&target_memory).ok());
  ASSERT_TRUE(draft.Memory(&draft_memory).ok());
  EXPECT_EQ(target_memory.budget + draft_memory.budget, options.budget_bytes);
  pocket::Sampling sampling;
  sampling.max_new_tokens = 60;
  sampling.speculation = POCKET_SPECULATION_MODEL;
  sampling.draft_session = draft.get();
  pocket::Generation gen;
  ASSERT_TRUE(session.Generate("Once upon a time", sampling, nullptr, &gen).ok())
      << pocket_last_error();
  const std::string golden = kGoldenContinuation;
  ASSERT_GE(gen.text.size(), golden.size());
  EXPECT_EQ(gen.text.substr(0, golden.size()), golden);
}

TEST(CppApi, StopStringEndsGenerationWithoutEmittingIt) {
  pocket::Model model;
  ASSERT_TRUE(pocket::Model::Load(kModel, {}, &model).ok());
  pocket::Session session;
  ASSERT_TRUE(model.NewSession({}, &session).ok());
  pocket::Sampling sampling;
  sampling.max_new_tokens = 100;
  sampling.stops = {"Lily."};
  pocket::Generation gen;
  ASSERT_TRUE(session.Generate("Once upon a time", sampling, nullptr, &gen).ok());
  EXPECT_EQ(gen.stop_reason, POCKET_STOP_STRING);
  EXPECT_EQ(gen.text, ", there was a little girl named ");
}

TEST(CppApi, MemoryBudgetAndState) {
  pocket::Model model;
  ASSERT_TRUE(pocket::Model::Load(kModel, {}, &model).ok()) << pocket_last_error();
  pocket::SessionOptions options;
  options.kv_type = 2;  // q8
  pocket::Session session;
  ASSERT_TRUE(model.NewSession(options, &session).ok());
  std::vector<float> before, after;
  ASSERT_TRUE(session.Eval({1, 403, 407}, &before).ok());
  pocket::MemoryUsage usage;
  ASSERT_TRUE(session.Memory(&usage).ok());
  EXPECT_EQ(usage.tokens, 3u);
  EXPECT_GT(usage.kv, 0u);
  EXPECT_EQ(usage.total, usage.weights + usage.model + usage.kv + usage.scratch + usage.logits);

  const std::string path = std::string(POCKET_BINARY_DIR) + "/cpp_api_test_state.bin";
  ASSERT_TRUE(session.Save(path).ok());
  ASSERT_TRUE(session.Eval({261}, &before).ok());
  ASSERT_TRUE(session.Load(path).ok());
  ASSERT_TRUE(session.Eval({261}, &after).ok());
  EXPECT_EQ(before, after);

  pocket::Session f16;
  ASSERT_TRUE(model.NewSession({}, &f16).ok());
  const pocket::Status s = f16.Load(path);
  EXPECT_EQ(s.code(), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("q8"), std::string::npos) << s.message();
  std::remove(path.c_str());

  options.budget_bytes = 1000;
  pocket::Session tiny;
  const pocket::Status too_small = model.NewSession(options, &tiny);
  EXPECT_EQ(too_small.code(), POCKET_BUDGET_EXCEEDED);
  EXPECT_NE(too_small.message().find("too small"), std::string::npos);
}

// Another thread's calls on a session that is generating are refused, and
// the generation goes on unchanged.
TEST(CppApi, CallsFromAnotherThreadWhileGeneratingAreBusy) {
  pocket::Model model;
  ASSERT_TRUE(pocket::Model::Load(kModel, {}, &model).ok()) << pocket_last_error();
  pocket::Session session;
  ASSERT_TRUE(model.NewSession({}, &session).ok());
  pocket::Sampling sampling;
  sampling.max_new_tokens = 60;
  std::vector<pocket::Status> other;
  int32_t other_position = 0;
  pocket::Generation gen;
  const pocket::Status s = session.Generate(
      "Once upon a time", sampling,
      [&](std::string_view, int32_t) {
        if (!other.empty()) return true;
        std::thread([&] {
          other.push_back(session.Reset());
          other.push_back(session.Generate("x", pocket::Sampling(), nullptr));
          other.push_back(session.Eval({1}, nullptr));
          other.push_back(session.Save(std::string(POCKET_BINARY_DIR) + "/cpp_api_busy.bin"));
          other_position = session.position();
        }).join();
        return true;
      },
      &gen);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(other.size(), 4u);
  for (const pocket::Status& o : other) {
    EXPECT_EQ(o.code(), POCKET_BUSY) << o.message();
    EXPECT_NE(o.message().find("the session is busy in pocket_generate"), std::string::npos)
        << o.message();
  }
  EXPECT_EQ(other_position, -1);
  EXPECT_EQ(gen.n_generated, 60);
  EXPECT_EQ(gen.text.substr(0, std::strlen(kGoldenContinuation)), kGoldenContinuation);
  EXPECT_TRUE(session.Reset().ok());
}

// Generation is filled by every call, failed ones included, and holds only
// that call's text.
TEST(CppApi, GenerationIsFilledWhateverTheStatus) {
  pocket::Model model;
  ASSERT_TRUE(pocket::Model::Load(kModel, {}, &model).ok()) << pocket_last_error();
  pocket::Session session;
  ASSERT_TRUE(model.NewSession({}, &session).ok());
  pocket::Sampling sampling;
  sampling.max_new_tokens = 5;
  pocket::Generation gen;
  ASSERT_TRUE(session.Generate("Once upon a time", sampling, nullptr, &gen).ok());
  const std::string first = gen.text;
  ASSERT_TRUE(session.Generate(" and", sampling, nullptr, &gen).ok());
  EXPECT_EQ(gen.n_generated, 5);
  EXPECT_EQ(gen.text.find(first), std::string::npos) << gen.text;

  const pocket::Status s = session.Generate("\xff", sampling, nullptr, &gen);
  EXPECT_EQ(s.code(), POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(gen.n_generated, 0);
  EXPECT_EQ(gen.n_prompt_tokens, 0);
  EXPECT_EQ(gen.stop_reason, POCKET_STOP_ERROR);
  EXPECT_EQ(gen.text, "");
}

// The model file with its first weight (token 0's embedding, also its
// output row) set to NaN, checksums recomputed.
std::string NanWeightModel() {
  using namespace pocket::testing;  // NOLINT: the test file tools
  Bytes bytes = ReadFileBytes(kModel);
  for (const pocket::SectionEntry& e : TableOf(bytes)) {
    if (e.kind != 5) continue;  // the data section
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(bytes.data() + e.offset, &nan, sizeof(nan));
  }
  FixAllCrcs(&bytes);
  const std::string path = TempPath("nan_weight.pocket");
  WriteFileBytes(path, bytes);
  return path;
}

TEST(CppApi, NonFiniteLogitsAreCorruptFileNamingThePosition) {
  pocket::Model model;
  ASSERT_TRUE(pocket::Model::Load(NanWeightModel(), {}, &model).ok()) << pocket_last_error();
  pocket::Session session;
  ASSERT_TRUE(model.NewSession({}, &session).ok());
  pocket::Generation gen;
  pocket::Status s = session.Generate("Once upon a time", pocket::Sampling(), nullptr, &gen);
  EXPECT_EQ(s.code(), POCKET_CORRUPT_FILE);
  EXPECT_NE(s.message().find("non-finite logit (NaN, vocabulary entry 0) at position 4"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(gen.stop_reason, POCKET_STOP_ERROR);
  EXPECT_EQ(gen.n_generated, 0);
  EXPECT_EQ(session.position(), 0);
  std::vector<float> logits;
  s = session.Eval({1, 403}, &logits);
  EXPECT_EQ(s.code(), POCKET_CORRUPT_FILE);
  EXPECT_NE(s.message().find("at position 1"), std::string::npos) << s.message();
  EXPECT_EQ(session.position(), 0);
}

}  // namespace
