// A draft model's session inside the target session's budget
// (CreateDraftSession): the two budgets add up to the one given, both
// caches hold the same number of tokens, greedy ids with the draft model
// equal plain decoding under the lowered budget while both windows slide,
// and a budget too small, another tokenizer or tokens that no longer fit
// change nothing.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/drafters.h"
#include "runtime/generate.h"
#include "tests/runtime/qwen3_fixture.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

// Options of a session on `model` whose budget holds its fixed bytes, a
// draft session's on the same model with q8 KV, and `tokens` positions of
// both caches.
SessionOptions SlidingOptions(const Model* model, size_t tokens) {
  SessionOptions options;
  options.kv_type = KvType::kF32;
  options.kv_policy = KvPolicy::kSlide;
  options.kv_page_tokens = 16;
  options.budget_bytes = 0;
  SessionOptions q8 = options;
  q8.kv_type = KvType::kQ8;
  const Session target(model, options), draft(model, q8);
  const auto per_token = [](const Session& s) {
    return s.backend_session().kv_page_bytes() / s.backend_session().kv_page_tokens();
  };
  options.budget_bytes = target.fixed_budget_bytes() + draft.fixed_budget_bytes() +
                         tokens * (per_token(target) + per_token(draft));
  return options;
}

TEST(DraftSessionTest, SharesTheTargetsBudget) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const SessionOptions options = SlidingOptions(model, 300);
  Session target(model, options);
  auto draft = CreateDraftSession(&target, model, KvType::kQ8);
  ASSERT_TRUE(draft.ok()) << draft.status().ToString();
  EXPECT_EQ(target.options().budget_bytes + (*draft)->options().budget_bytes, options.budget_bytes);
  EXPECT_EQ((*draft)->options().kv_policy, KvPolicy::kSlide);
  EXPECT_EQ((*draft)->options().kv_type, KvType::kQ8);
  // Both hold about 300 tokens: each cache's pages round its count.
  EXPECT_NEAR(static_cast<double>(target.max_tokens()), 300.0, 16.0);
  EXPECT_NEAR(static_cast<double>((*draft)->max_tokens()), 300.0, 16.0);
}

TEST(DraftSessionTest, GreedyIdsEqualPlainDecodingUnderTheLoweredBudget) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  Session target(model, SlidingOptions(model, 250));
  auto draft = CreateDraftSession(&target, model, KvType::kQ8);
  ASSERT_TRUE(draft.ok()) << draft.status().ToString();
  // The reference: plain decoding in a session with the budget left to
  // the target.
  Session plain(model, target.options());
  ASSERT_LT(plain.max_tokens(), 300u);

  GenerateOptions greedy;
  greedy.speculation = SpeculationOptions::Off();
  greedy.max_new_tokens = 700;  // both windows slide more than once
  greedy.ignore_eos = true;
  GenerateOptions fast = greedy;
  fast.speculation.draft_session = draft->get();
  fast.speculation.adaptive = false;
  fast.speculation.max_draft = 4;
  GenerateResult a, b;
  ASSERT_TRUE(Generate(&plain, "Once upon a time", greedy, nullptr, &a).ok());
  ASSERT_TRUE(Generate(&target, "Once upon a time", fast, nullptr, &b).ok());
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(plain.tokens(), target.tokens());
  EXPECT_LE((*draft)->position(), (*draft)->max_tokens());
  // The model drafting for itself keeps most guesses, also after its
  // window slid.
  EXPECT_GT(b.speculation.accepted, b.speculation.drafted / 2);
}

TEST(DraftSessionTest, WhatCannotShareChangesNothing) {
  const Model* stories = testing_stories::StoriesModel();
  const Model* qwen = testing_qwen3::Qwen3Model();
  ASSERT_NE(stories, nullptr);
  ASSERT_NE(qwen, nullptr);
  // Room for fewer tokens than a sliding window (4 sinks + a chunk of 64).
  SessionOptions small = SlidingOptions(stories, 40);
  Session target(stories, small);
  auto refused = CreateDraftSession(&target, stories, KvType::kQ8);
  EXPECT_EQ(refused.status().code(), StatusCode::kBudgetExceeded);
  EXPECT_NE(refused.status().message().find("draft model"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(target.options().budget_bytes, small.budget_bytes);

  auto other = CreateDraftSession(&target, qwen, KvType::kF32);
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(target.options().budget_bytes, small.budget_bytes);

  // A target holding more tokens than its share would keep.
  Session full(stories, SlidingOptions(stories, 300));
  std::vector<float> logits;
  ASSERT_TRUE(full.Eval(std::vector<int32_t>(360, 7), LogitsMode::kLast, &logits).ok());
  const size_t before = full.options().budget_bytes;
  auto late = CreateDraftSession(&full, stories, KvType::kQ8);
  EXPECT_EQ(late.status().code(), StatusCode::kBudgetExceeded);
  EXPECT_EQ(full.options().budget_bytes, before);
  EXPECT_EQ(full.position(), 360u);

  // Unlimited stays unlimited.
  SessionOptions unlimited;
  unlimited.budget_bytes = 0;
  Session free_target(stories, unlimited);
  auto free_draft = CreateDraftSession(&free_target, stories, KvType::kF32);
  ASSERT_TRUE(free_draft.ok()) << free_draft.status().ToString();
  EXPECT_EQ(free_target.options().budget_bytes, 0u);
  EXPECT_EQ((*free_draft)->options().budget_bytes, 0u);
}

TEST(SessionBudgetTest, SetBudgetKeepsWhatIsHeld) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SessionOptions options = SlidingOptions(model, 300);
  options.kv_policy = KvPolicy::kError;
  Session session(model, options);
  std::vector<float> logits;
  ASSERT_TRUE(session.Eval(std::vector<int32_t>(100, 9), LogitsMode::kLast, &logits).ok());
  // Too small for the 100 tokens held: refused, nothing changes.
  const Status s = session.SetBudget(session.fixed_budget_bytes() + 1);
  EXPECT_EQ(s.code(), StatusCode::kBudgetExceeded);
  EXPECT_NE(s.message().find("100 tokens"), std::string::npos) << s.message();
  EXPECT_EQ(session.options().budget_bytes, options.budget_bytes);
  // Lowered to about 150 tokens: the next 60 fit, 60 more do not.
  const size_t per_token =
      session.backend_session().kv_page_bytes() / session.backend_session().kv_page_tokens();
  ASSERT_TRUE(session.SetBudget(session.fixed_budget_bytes() + 150 * per_token).ok());
  EXPECT_EQ(session.position(), 100u);
  EXPECT_TRUE(session.Eval(std::vector<int32_t>(40, 9), LogitsMode::kLast, &logits).ok());
  EXPECT_EQ(session.Eval(std::vector<int32_t>(60, 9), LogitsMode::kLast, &logits).code(),
            StatusCode::kBudgetExceeded);
  EXPECT_EQ(session.position(), 140u);
  ASSERT_TRUE(session.SetBudget(0).ok());
  EXPECT_TRUE(session.Eval(std::vector<int32_t>(60, 9), LogitsMode::kLast, &logits).ok());
}

}  // namespace
}  // namespace pocket
