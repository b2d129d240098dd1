// Speculative decoding (runtime/speculative.h) against decoding without
// it, the reference: greedy ids are equal token for token on stories260K
// and a tiny Qwen3, with prompt lookup, lookup text and a draft model,
// at the budget's and the context's edge under both policies; seeded
// sampled runs reproduce the plain runs, and the output distribution of
// sampled speculative runs matches the model's exact one.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/drafters.h"
#include "runtime/generate.h"
#include "tests/runtime/qwen3_fixture.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

TEST(PromptLookupTest, ProposesWhatFollowedTheLatestLongestMatch) {
  PromptLookupDrafter drafter({});
  std::vector<int32_t> draft;
  // "5 6" occurs twice; the latest occurrence is followed by 9 1.
  drafter.Draft({5, 6, 7, 8, 5, 6, 9, 1, 2, 5, 6}, 3, &draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{9, 1, 2}));
  // The 3-gram "2 5 6" beats the later 2-gram "5 6".
  draft.clear();
  drafter.Draft({2, 5, 6, 4, 4, 5, 6, 3, 3, 2, 5, 6}, 2, &draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{4, 4}));
  // A period of one token continues.
  draft.clear();
  drafter.Draft({1, 7, 7, 7}, 4, &draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{7}));
  // No match of two tokens: nothing.
  draft.clear();
  drafter.Draft({1, 2, 3, 4, 1}, 4, &draft);
  EXPECT_TRUE(draft.empty());
}

TEST(PromptLookupTest, SearchesTheLookupTextAfterTheSequence) {
  PromptLookupDrafter drafter({10, 11, 12, 13, 14});
  std::vector<int32_t> draft;
  drafter.Draft({3, 11, 12}, 8, &draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{13, 14}));
  draft.clear();
  drafter.Draft({11, 12, 40, 3, 11, 12}, 1, &draft);
  EXPECT_EQ(draft, (std::vector<int32_t>{40}));
}

GenerateResult GenerateIds(Session* session, const std::string& prompt,
                           const GenerateOptions& options, Status* status = nullptr) {
  GenerateResult r;
  Status s = Generate(session, prompt, options, nullptr, &r);
  if (status != nullptr) {
    *status = s;
  } else {
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return r;
}

// Greedy ids with `spec` equal those without, for each prompt and length,
// in fresh sessions made with `session_options`; returns the guesses
// accepted over all runs.
int64_t ExpectSameGreedyIds(const Model* model, const SessionOptions& session_options,
                            const SpeculationOptions& spec, const std::vector<std::string>& prompts,
                            const std::vector<int>& lengths) {
  int64_t accepted = 0;
  for (const std::string& prompt : prompts) {
    for (int n : lengths) {
      GenerateOptions plain;
      plain.speculation = SpeculationOptions::Off();
      plain.max_new_tokens = n;
      plain.ignore_eos = n > 100;  // long runs go on; short ones may stop
      GenerateOptions fast = plain;
      fast.speculation = spec;
      Session a(model, session_options), b(model, session_options);
      const GenerateResult ra = GenerateIds(&a, prompt, plain);
      const GenerateResult rb = GenerateIds(&b, prompt, fast);
      EXPECT_EQ(ra.ids, rb.ids) << "prompt '" << prompt << "', " << n << " tokens";
      EXPECT_EQ(ra.stop, rb.stop);
      EXPECT_EQ(a.tokens(), b.tokens()) << "the caches differ after '" << prompt << "'";
      accepted += rb.speculation.accepted;
    }
  }
  return accepted;
}

const std::vector<std::string> kStoryPrompts = {
    "Once upon a time",
    "Lily and Tom went to the park. Lily and Tom went to the",
    "The cat sat on the mat. The dog sat on the",
    "One day, a little girl named",
    "Tim had a red ball. He liked his red ball. One day, Tim lost his red ball.",
};

TEST(SpeculativeTest, GreedyIdsEqualPlainOnStoriesWithPromptLookup) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SpeculationOptions spec;
  spec.prompt_lookup = true;
  // Every guess verified, drafts of 1 to 16: the stories model repeats
  // itself, so guesses are verified and kept.
  spec.adaptive = false;
  for (int32_t max_draft : {1, 4, 15}) {
    spec.max_draft = max_draft;
    EXPECT_GT(ExpectSameGreedyIds(model, SessionOptions(), spec, kStoryPrompts, {1, 9, 150}), 50)
        << "max_draft " << max_draft;
  }
  // Adaptive (which may find no batched step worth it on a model this
  // small).
  spec.adaptive = true;
  spec.max_draft = 8;
  ExpectSameGreedyIds(model, SessionOptions(), spec, kStoryPrompts, {1, 150});
}

TEST(SpeculativeTest, GreedyIdsEqualPlainWithLookupTextAndEveryKvType) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SpeculationOptions spec;
  spec.adaptive = false;
  spec.lookup_text = "Lily wanted to play with the big red ball in the garden with her mom.";
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8, KvType::kBf16}) {
    SessionOptions options;
    options.kv_type = type;
    EXPECT_GT(
        ExpectSameGreedyIds(model, options, spec, {"Lily wanted to play", "Once upon"}, {5, 80}),
        0);
  }
}

TEST(SpeculativeTest, GreedyIdsEqualPlainOnTinyQwen3) {
  const Model* model = testing_qwen3::Qwen3Model();
  ASSERT_NE(model, nullptr);
  SpeculationOptions spec;
  spec.prompt_lookup = true;
  spec.adaptive = false;
  spec.lookup_text = "{\"name\": \"Ada\", \"items\": [1, 2, 3], \"ok\": true}";
  SessionOptions options;
  options.budget_bytes = 0;
  EXPECT_GT(ExpectSameGreedyIds(model, options, spec,
                                {"{\"name\": \"Ada\",", "hello hello hello hello", "你好，世界"},
                                {1, 9, 64}),
            0);
}

TEST(SpeculativeTest, GreedyIdsEqualPlainWithADraftModel) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  // The model drafting for itself, its cache stored differently: nearly
  // every guess is kept.
  SessionOptions draft_options;
  draft_options.kv_type = KvType::kQ8;
  Session draft(model, draft_options);
  SpeculationOptions spec;
  spec.draft_session = &draft;
  spec.adaptive = false;
  spec.max_draft = 4;
  EXPECT_GT(ExpectSameGreedyIds(model, SessionOptions(), spec, kStoryPrompts, {3, 50}), 100);

  const Model* qwen = testing_qwen3::Qwen3Model();
  ASSERT_NE(qwen, nullptr);
  SessionOptions unlimited;
  unlimited.budget_bytes = 0;
  Session qwen_draft(qwen, unlimited);
  spec.draft_session = &qwen_draft;
  spec.adaptive = true;
  ExpectSameGreedyIds(qwen, unlimited, spec, {"hello", "a b c a b c"}, {30});
}

// The default speculates (prompt lookup) on a backend whose batched rows
// are exact, and not on others unless asked.
TEST(SpeculativeTest, TheDefaultSpeculatesOnlyOnExactBackends) {
  ModelOptions on_reference;
  on_reference.backend = "reference";
  auto reference = Model::Load(testing_stories::StoriesPath(), on_reference);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  const Model* cpu = testing_stories::StoriesModel();
  ASSERT_NE(cpu, nullptr);
  ASSERT_TRUE(cpu->backend().capabilities().exact_batch_rows);
  ASSERT_FALSE((*reference)->backend().capabilities().exact_batch_rows);
  GenerateOptions o;
  o.max_new_tokens = 60;
  o.speculation.adaptive = false;  // every draft verified where it runs
  for (const Model* model : {cpu, static_cast<const Model*>(reference->get())}) {
    for (bool asked : {false, true}) {
      o.speculation.exact_backends_only = !asked;
      Session session(model, SessionOptions());
      const GenerateResult r = GenerateIds(&session, kStoryPrompts[1], o);
      const bool speculates = model == cpu || asked;
      EXPECT_EQ(r.speculation.batched_steps > 0, speculates)
          << model->backend().name() << (asked ? ", asked" : ", by default");
    }
  }
  // Off is off everywhere.
  o.speculation = SpeculationOptions::Off();
  Session session(cpu, SessionOptions());
  EXPECT_EQ(GenerateIds(&session, kStoryPrompts[1], o).speculation.batched_steps, 0);
}

TEST(SpeculativeTest, ADraftModelWithAnotherTokenizerIsRefused) {
  const Model* stories = testing_stories::StoriesModel();
  const Model* qwen = testing_qwen3::Qwen3Model();
  ASSERT_NE(stories, nullptr);
  ASSERT_NE(qwen, nullptr);
  SessionOptions unlimited;
  unlimited.budget_bytes = 0;
  Session session(stories, unlimited), draft(qwen, unlimited);
  GenerateOptions o;
  o.speculation.draft_session = &draft;
  Status s;
  GenerateIds(&session, "Once", o, &s);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("same tokenizer"), std::string::npos) << s.message();
  EXPECT_EQ(session.position(), 0u);
}

TEST(SpeculativeTest, GreedyIdsEqualPlainPastTheContextWithSliding) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SpeculationOptions spec;
  spec.prompt_lookup = true;
  spec.adaptive = false;
  SessionOptions options;
  options.kv_policy = KvPolicy::kSlide;
  // The context (512) slides several times.
  EXPECT_GT(ExpectSameGreedyIds(model, options, spec, {"Once upon a time"}, {1100}), 0);
}

// The smallest budget under which a session holds `tokens` positions.
SessionOptions BudgetFor(const Model* model, size_t tokens, KvPolicy policy,
                         size_t prefill_chunk = 64) {
  SessionOptions options;
  options.prefill_chunk = prefill_chunk;
  options.kv_type = KvType::kF32;
  options.kv_policy = policy;
  options.kv_page_tokens = 16;
  size_t lo = model->weight_bytes(), hi = lo + 64 * kMiB;
  while (lo + 1 < hi) {
    options.budget_bytes = lo + (hi - lo) / 2;
    (Session(model, options).max_tokens() >= tokens ? hi : lo) = options.budget_bytes;
  }
  options.budget_bytes = hi;
  return options;
}

TEST(SpeculativeTest, GreedyIdsEqualPlainAtTheBudgetsEdge) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SpeculationOptions spec;
  spec.prompt_lookup = true;
  spec.adaptive = false;
  // A batched step's budget counts scratch for a whole prefill chunk of
  // all-row logits, about 170 stories260K positions: the budgets leave
  // room for batched steps only in part of the window.
  // With chunks of 4 a batched step's scratch (every row's logits) is more
  // than a single step's plan, which counts what the session holds: it is
  // given back before the single steps at the edge.
  for (const auto& [room, chunk] : {std::pair<size_t, size_t>{300, 64}, {450, 64}, {450, 4}}) {
    const SessionOptions sliding = BudgetFor(model, room, KvPolicy::kSlide, chunk);
    ASSERT_LT(Session(model, sliding).max_tokens(), 512u) << "the budget limits, not the context";
    EXPECT_GT(ExpectSameGreedyIds(model, sliding, spec, {"Once upon a time"}, {700}), 0)
        << room << " tokens, chunks of " << chunk;
  }
  // Policy kError fails at the same token, with the same tokens cached.
  const SessionOptions bounded = BudgetFor(model, 350, KvPolicy::kError, 4);
  GenerateOptions plain;
  plain.speculation = SpeculationOptions::Off();
  plain.max_new_tokens = 600;
  plain.ignore_eos = true;
  GenerateOptions fast = plain;
  fast.speculation = spec;
  Session a(model, bounded), b(model, bounded);
  Status sa, sb;
  const GenerateResult ra = GenerateIds(&a, "Once upon a time", plain, &sa);
  const GenerateResult rb = GenerateIds(&b, "Once upon a time", fast, &sb);
  EXPECT_EQ(sa.code(), StatusCode::kBudgetExceeded);
  EXPECT_EQ(sb.code(), StatusCode::kBudgetExceeded);
  EXPECT_EQ(ra.ids, rb.ids);
  EXPECT_EQ(a.tokens(), b.tokens());
  EXPECT_GT(rb.speculation.accepted, 0);
}

TEST(SpeculativeTest, SeededSampledRunsReproduceThePlainRuns) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  Session draft(model, SessionOptions());
  for (bool with_model : {false, true}) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      GenerateOptions plain;
      plain.speculation = SpeculationOptions::Off();
      plain.max_new_tokens = 120;
      plain.sampling.temperature = 0.7f;
      plain.sampling.top_k = 40;
      plain.sampling.top_p = 0.95f;
      plain.sampling.repeat_penalty = 1.1f;
      plain.sampling.seed = seed;
      GenerateOptions fast = plain;
      fast.speculation.prompt_lookup = true;
      fast.speculation.adaptive = false;
      if (with_model) fast.speculation.draft_session = &draft;
      Session a(model, SessionOptions()), b(model, SessionOptions()), c(model, SessionOptions());
      const GenerateResult ra = GenerateIds(&a, "Once upon a time", plain);
      const GenerateResult rb = GenerateIds(&b, "Once upon a time", fast);
      const GenerateResult rc = GenerateIds(&c, "Once upon a time", fast);
      EXPECT_EQ(ra.ids, rb.ids) << "seed " << seed;
      EXPECT_EQ(rb.ids, rc.ids) << "seed " << seed;
      EXPECT_GT(rb.speculation.drafted, 0);
    }
  }
}

// The exact distribution of the first three tokens under temperature 1 and
// top-k 3 (each step draws from the softmax of its three largest logits),
// computed from single-token evaluations, against the triples drawn by
// speculative runs (the model drafting for itself, every guess verified),
// over 1500 fixed seeds: Pearson's chi-square over the 27 triples stays
// under the 0.001 critical value of its degrees of freedom.
TEST(SpeculativeTest, SampledTriplesFollowTheModelsExactDistribution) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const std::string prompt = "Once upon a time";
  const size_t vocab = static_cast<size_t>(model->config().vocab);
  // Top-3 ids and probabilities after `ids`.
  auto top3 = [&](const std::vector<int32_t>& ids) {
    Session s(model, SessionOptions());
    std::vector<float> logits;
    EXPECT_TRUE(s.Eval(ids, LogitsMode::kLast, &logits).ok());
    std::vector<int32_t> order(vocab);
    for (size_t i = 0; i < vocab; ++i) order[i] = static_cast<int32_t>(i);
    std::partial_sort(order.begin(), order.begin() + 3, order.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    std::vector<std::pair<int32_t, double>> top;
    double sum = 0;
    for (int i = 0; i < 3; ++i) sum += std::exp(double{logits[order[i]]} - logits[order[0]]);
    for (int i = 0; i < 3; ++i) {
      top.push_back({order[i], std::exp(double{logits[order[i]]} - logits[order[0]]) / sum});
    }
    return top;
  };
  auto prompt_ids = model->tokenizer().Encode(prompt, true);
  ASSERT_TRUE(prompt_ids.ok());
  std::vector<int32_t> base = *prompt_ids;
  base.insert(base.begin(), model->config().bos_id);
  std::map<std::vector<int32_t>, double> exact;
  for (const auto& [a, pa] : top3(base)) {
    std::vector<int32_t> s1 = base;
    s1.push_back(a);
    for (const auto& [b, pb] : top3(s1)) {
      std::vector<int32_t> s2 = s1;
      s2.push_back(b);
      for (const auto& [c, pc] : top3(s2)) exact[{a, b, c}] = pa * pb * pc;
    }
  }
  ASSERT_EQ(exact.size(), 27u);

  Session draft(model, SessionOptions());
  std::map<std::vector<int32_t>, int> seen;
  const int n = 1500;
  int64_t accepted = 0;
  for (int seed = 0; seed < n; ++seed) {
    GenerateOptions o;
    o.max_new_tokens = 3;
    o.ignore_eos = true;
    o.sampling.temperature = 1.0f;
    o.sampling.top_k = 3;
    o.sampling.seed = static_cast<uint64_t>(seed);
    o.speculation.draft_session = &draft;
    o.speculation.adaptive = false;
    o.speculation.max_draft = 2;
    Session session(model, SessionOptions());
    const GenerateResult r = GenerateIds(&session, prompt, o);
    ASSERT_EQ(r.ids.size(), 3u);
    ++seen[r.ids];
    accepted += r.speculation.accepted;
  }
  EXPECT_GT(accepted, n / 4);  // the batched rows chose many of the tokens
  for (const auto& [ids, count] : seen) EXPECT_TRUE(exact.count(ids)) << "an impossible triple";
  // Triples expected fewer than 5 times are pooled into one cell.
  double chi2 = 0, pooled_expected = 0, pooled_got = 0;
  int cells = 0;
  for (const auto& [ids, p] : exact) {
    const double expected = p * n;
    const double got = seen.count(ids) ? seen[ids] : 0;
    if (expected < 5) {
      pooled_expected += expected;
      pooled_got += got;
      continue;
    }
    chi2 += (got - expected) * (got - expected) / expected;
    ++cells;
  }
  if (pooled_expected > 0) {
    chi2 += (pooled_got - pooled_expected) * (pooled_got - pooled_expected) / pooled_expected;
    ++cells;
  }
  // Critical values of chi-square at p = 0.001 for 1..26 degrees of freedom.
  const double critical[] = {10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88,
                             29.59, 31.26, 32.91, 34.53, 36.12, 37.70, 39.25, 40.79, 42.31,
                             43.82, 45.31, 46.80, 48.27, 49.73, 51.18, 52.62, 54.05};
  ASSERT_GE(cells, 2);
  EXPECT_LT(chi2, critical[cells - 2]) << cells << " cells";
}

}  // namespace
}  // namespace pocket
