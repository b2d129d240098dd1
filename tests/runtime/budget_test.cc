// The memory budget: accounting by category, the maximum context computed
// at creation (q8 holds >= 1.9x the tokens of f16), a budget too small for
// the model, and policy kError at the budget's end (the session unchanged
// and usable).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/executor.h"
#include "runtime/generate.h"
#include "runtime/memory.h"
#include "tests/runtime/qwen3_fixture.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

TEST(MemoryTest, PagesCoveringCountsEachPageOnce) {
  EXPECT_EQ(PagesCovering({}, 4096), 0u);
  EXPECT_EQ(PagesCovering({{0, 1}}, 4096), 4096u);
  // Overlapping, adjacent, contained and empty ranges.
  EXPECT_EQ(PagesCovering({{100, 5000}, {4000, 100}, {8192, 4096}, {9000, 10}, {50000, 0}}, 4096),
            3u * 4096);
  EXPECT_EQ(PagesCovering({{4095, 2}}, 4096), 2u * 4096);
}

TEST(MemoryTest, Q8HoldsAtLeast1_9TimesTheTokensOfF16) {
  const Model* model = testing_qwen3::Qwen3Model();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.budget_bytes = model->weight_bytes() + model->model_bytes() + 8 * kMiB;
  options.kv_type = KvType::kF16;
  auto f16 = Session::Create(model, options);
  options.kv_type = KvType::kQ8;
  auto q8 = Session::Create(model, options);
  ASSERT_TRUE(f16.ok() && q8.ok());
  const size_t f16_tokens = (*f16)->max_tokens(), q8_tokens = (*q8)->max_tokens();
  // The context (40960) must not be what limits either.
  ASSERT_LT(q8_tokens, static_cast<size_t>(model->config().context));
  ASSERT_GT(f16_tokens, 0u);
  EXPECT_GE(static_cast<double>(q8_tokens), 1.9 * static_cast<double>(f16_tokens))
      << f16_tokens << " vs " << q8_tokens;
  // Per token: 2 layers x K and V x 64 values, 2 bytes (f16) or 1 + a 2-byte
  // scale per 64 (q8); pages of 64 tokens.
  EXPECT_EQ((*f16)->backend_session().kv_page_bytes(), 2u * 2 * 64 * 2 * 64);
  EXPECT_EQ((*q8)->backend_session().kv_page_bytes(), 2u * 2 * (64 + 2) * 64);
}

TEST(MemoryTest, UsageByCategory) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  auto session = Session::Create(model, SessionOptions());
  ASSERT_TRUE(session.ok());
  // stories260K at f32: every weight of the file is read by the plan.
  const size_t params_bytes = model->weight_bytes();
  EXPECT_GT(params_bytes, 260000u * 4);
  EXPECT_LE(params_bytes, static_cast<size_t>(model->file().size()) + OsPageSize());
  std::vector<float> logits;
  ASSERT_TRUE((*session)->Eval(std::vector<int32_t>(70, 403), LogitsMode::kLast, &logits).ok());
  const MemoryUsage m = (*session)->memory();
  EXPECT_EQ(m.weights, params_bytes);
  EXPECT_GT(m.model, 0u);
  EXPECT_EQ(m.kv, 2 * (*session)->backend_session().kv_page_bytes());
  EXPECT_EQ(m.tokens, 70u);
  EXPECT_EQ(m.budget, 300 * kMiB);
  EXPECT_EQ(m.max_tokens, 512u);  // the context limits this tiny model
  EXPECT_EQ(m.logits, 512u * 12);
  EXPECT_EQ(m.total(), m.weights + m.model + m.kv + m.scratch + m.logits);
  // The file was just read, so the kernel holds its pages.
  EXPECT_GT(m.weights_resident, 0u);
  // A prefill chunk keeps one row of logits, not 64.
  EXPECT_EQ(m.scratch, cpu::Executor::ScratchBytesFor(model->plan(), 64, BackendOutput::kLastRow));
  EXPECT_LT(m.scratch + 63 * 512 * sizeof(float),
            cpu::Executor::ScratchBytesFor(model->plan(), 64, BackendOutput::kAllRows));
}

TEST(MemoryTest, BudgetTooSmallForTheModelIsAnErrorAtCreation) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.budget_bytes = kMiB;
  auto session = Session::Create(model, options);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kBudgetExceeded);
  const std::string msg = session.status().message();
  // 1.4 MiB before the KV cache and 0.04 MiB per page, plus the 2 MiB huge
  // page the OS may commit for the cache's range where it has one.
  options.budget_bytes = 0;
  const bool huge = Session(model, options).backend_session().kv_commit_slack() == 2 * kMiB;
  const std::string at_least = huge ? "at least 4 MiB" : "at least 2 MiB";
  for (const std::string& part : {std::string("memory budget of 1 MiB is too small"),
                                  std::string("weights 1."), std::string("before any KV"),
                                  std::string("plus up to"), "raise the budget to " + at_least}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in: " << msg;
  }
}

// A budget that holds exactly `pages` KV pages beside everything else.
SessionOptions BudgetForPages(const Model* model, size_t pages, KvType type) {
  SessionOptions options;
  options.kv_type = type;
  options.budget_bytes = 0;
  Session probe(model, options);
  const size_t fixed = model->weight_bytes() + model->model_bytes() +
                       cpu::Executor::ScratchBytesFor(model->plan(), 64, BackendOutput::kLastRow) +
                       static_cast<size_t>(model->config().vocab) * 12;
  options.budget_bytes = fixed + pages * probe.backend_session().kv_page_bytes() +
                         probe.backend_session().kv_commit_slack() + 100;
  return options;
}

TEST(MemoryTest, ErrorPolicyFailsAtTheBudgetAndKeepsTheSession) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  auto created = Session::Create(model, BudgetForPages(model, 2, KvType::kF32));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Session& session = **created;
  ASSERT_EQ(session.max_tokens(), 128u);
  std::vector<float> logits;
  ASSERT_TRUE(session.Eval(std::vector<int32_t>(120, 403), LogitsMode::kLast, &logits).ok());
  Status s = session.Eval(std::vector<int32_t>(9, 403), LogitsMode::kLast, &logits);
  EXPECT_EQ(s.code(), StatusCode::kBudgetExceeded);
  for (const char* part : {"memory budget of", "120 tokens are held and 9 more do not fit",
                           "budget_bytes", "kv_type=q8", "kv_policy=slide"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << part << " in: " << s.message();
  }
  EXPECT_EQ(session.position(), 120u);
  EXPECT_EQ(session.backend_session().kv_bytes(), 2 * session.backend_session().kv_page_bytes());
  // Still usable: what fits goes in and gives the logits a fresh session
  // gives.
  ASSERT_TRUE(session.Eval(std::vector<int32_t>(8, 407), LogitsMode::kLast, &logits).ok());
  SessionOptions unlimited;
  unlimited.kv_type = KvType::kF32;
  unlimited.budget_bytes = 0;
  Session fresh(model, unlimited);
  std::vector<int32_t> all(120, 403);
  all.insert(all.end(), 8, 407);
  std::vector<float> expected;
  ASSERT_TRUE(fresh.Eval(all, LogitsMode::kLast, &expected).ok());
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_NEAR(logits[i], expected[i], 1e-3) << i;

  // Generate stops with the same error, keeping what it generated.
  session.Truncate(100);
  GenerateOptions o;
  o.max_new_tokens = 100;
  o.ignore_eos = true;
  GenerateResult r;
  s = Generate(&session, " once", o, nullptr, &r);
  EXPECT_EQ(s.code(), StatusCode::kBudgetExceeded);
  EXPECT_EQ(session.position(), 128u);
  EXPECT_FALSE(r.ids.empty());
  EXPECT_EQ(r.stop, "budget");
}

// Budgets are printed exactly: "3.5 MiB" is not "4 MiB", and 1 byte is not
// "0 MiB", which means unlimited.
TEST(MemoryTest, BudgetMessagesPrintTheExactBudget) {
  EXPECT_EQ(BudgetText(300 * kMiB), "300 MiB");
  EXPECT_EQ(BudgetText(7 * kMiB / 2), "3670016 bytes (3.50 MiB)");
  EXPECT_EQ(BudgetText(1), "1 byte");
  EXPECT_EQ(BudgetText(10000), "10000 bytes");

  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.budget_bytes = 1;
  auto session = Session::Create(model, options);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("memory budget of 1 byte is too small"),
            std::string::npos)
      << session.status().message();

  // BudgetForPages leaves 100 bytes over whole pages: never whole MiB.
  options = BudgetForPages(model, 1, KvType::kF32);
  const std::string exact = "memory budget of " + BudgetText(options.budget_bytes);
  EXPECT_EQ(exact.find(StringPrintf("memory budget of %zu bytes (", options.budget_bytes)), 0u);
  options.kv_policy = KvPolicy::kSlide;
  session = Session::Create(model, options);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find(exact + " leaves room for 64 tokens"),
            std::string::npos)
      << session.status().message();

  options.kv_policy = KvPolicy::kError;
  session = Session::Create(model, options);
  ASSERT_TRUE(session.ok());
  const Status s = (*session)->Eval(std::vector<int32_t>(65, 403), LogitsMode::kLast, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kBudgetExceeded);
  EXPECT_NE(s.message().find(exact + " reached"), std::string::npos) << s.message();
}

TEST(MemoryTest, SlidingNeedsRoomForSinksAndOneChunk) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SessionOptions options = BudgetForPages(model, 1, KvType::kF16);
  options.kv_policy = KvPolicy::kSlide;
  auto session = Session::Create(model, options);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kBudgetExceeded);
  EXPECT_NE(session.status().message().find("leaves room for 64 tokens, fewer than a sliding "
                                            "window needs (4 sink tokens + a prefill chunk of 64)"),
            std::string::npos)
      << session.status().message();
  options = BudgetForPages(model, 2, KvType::kF16);
  options.kv_policy = KvPolicy::kSlide;
  EXPECT_TRUE(Session::Create(model, options).ok());
}

}  // namespace
}  // namespace pocket
