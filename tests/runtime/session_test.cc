// Session and Generate behaviour: errors leave the session usable and
// unchanged, cancellation, concurrent sessions on one Model, multi-turn
// continuation equal to a from-scratch run.
#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/generate.h"
#include "runtime/op_times.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

using testing_stories::GoldenRun;

const GoldenRun& OnceUponATime() {
  static const std::vector<GoldenRun> runs = testing_stories::LoadGolden();
  for (const GoldenRun& r : runs) {
    if (r.prompt == "Once upon a time") return r;
  }
  static GoldenRun none;
  ADD_FAILURE() << "golden run missing";
  return none;
}

GenerateOptions Greedy(int max_new) {
  GenerateOptions o;
  o.sampling.temperature = 0.0f;
  o.max_new_tokens = max_new;
  return o;
}

// Generates the golden "Once upon a time" run (first `n` tokens) from the
// session's current state and checks the ids.
void ExpectGolden(Session* session, int n) {
  const GoldenRun& g = OnceUponATime();
  GenerateResult r;
  ASSERT_TRUE(Generate(session, g.prompt, Greedy(n), nullptr, &r).ok());
  EXPECT_EQ(r.prompt_ids, g.prompt_ids);
  ASSERT_EQ(r.ids.size(), static_cast<size_t>(n));
  EXPECT_TRUE(std::equal(r.ids.begin(), r.ids.end(), g.ids.begin() + g.prompt_ids.size()));
}

int32_t ArgMax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

TEST(SessionTest, PromptLongerThanContext) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  Session session(model, SessionOptions());
  std::vector<float> logits;
  ASSERT_TRUE(session.Eval({1, 403, 407}, LogitsMode::kLast, &logits).ok());
  const std::vector<int32_t> long_input(600, 403);
  Status s = session.Eval(long_input, LogitsMode::kLast, &logits);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("prompt of 600 tokens does not fit: context is 512 tokens, 3 already "
                             "used"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(session.position(), 3u);

  session.Reset();
  std::string text;
  for (int i = 0; i < 200; ++i) text += "Once upon a time ";
  GenerateResult r;
  s = Generate(&session, text, Greedy(10), nullptr, &r);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("does not fit: context is 512 tokens, 0 already used"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(session.position(), 0u);
  EXPECT_EQ(session.backend_session().kv_bytes(), 0u);
  ExpectGolden(&session, 40);
}

TEST(SessionTest, IdOutOfRange) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  Session session(model, SessionOptions());
  std::vector<float> logits;
  Status s = session.Eval({1, 600, 5}, LogitsMode::kLast, &logits);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("token id 600 at index 1 is outside the vocabulary [0, 512)"),
            std::string::npos)
      << s.message();
  s = session.Eval({-1}, LogitsMode::kLast, &logits);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = session.Eval({}, LogitsMode::kLast, &logits);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(session.position(), 0u);
  ExpectGolden(&session, 40);
}

TEST(SessionTest, InvalidUtf8Prompt) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  Session session(model, SessionOptions());
  GenerateResult r;
  Status s = Generate(&session, std::string("Once \xff upon"), Greedy(5), nullptr, &r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("byte offset 5"), std::string::npos) << s.message();
  EXPECT_EQ(session.position(), 0u);
  ExpectGolden(&session, 40);
}

// A single NaN weight: generation, teacher forcing and the logits of a
// later call fail naming the position, and the session keeps only what it
// held before the call.
TEST(SessionTest, NonFiniteLogitsFailNamingThePosition) {
  auto model = Model::Load(testing_stories::NanWeightStoriesPath(), ModelOptions());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Session session(model->get(), SessionOptions());
  GenerateResult r;
  Status s = Generate(&session, "Once upon a time", Greedy(20), nullptr, &r);
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  for (const char* part :
       {"non-finite logit (NaN, vocabulary entry 0) at position 4 (input index 4 of 5, token id "
        "378)",
        "weights hold a NaN", "Reconvert the model"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << part << " in: " << s.message();
  }
  EXPECT_EQ(r.stop, "error");
  EXPECT_TRUE(r.ids.empty());
  EXPECT_EQ(session.position(), 0u);

  // Only the logits are checked: evaluating without them succeeds.
  ASSERT_TRUE(session.Eval({1, 403}, LogitsMode::kLast, nullptr).ok());
  std::vector<float> logits;
  s = session.Eval({407, 261, 378}, LogitsMode::kAll, &logits);
  EXPECT_EQ(s.code(), StatusCode::kCorruptFile);
  EXPECT_NE(s.message().find("at position 2 (input index 0 of 3, token id 407)"), std::string::npos)
      << s.message();
  EXPECT_EQ(session.tokens(), (std::vector<int32_t>{1, 403}));
}

TEST(SessionTest, CancelStopsWithinOneToken) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  Session session(model, SessionOptions());
  const GoldenRun& g = OnceUponATime();
  int calls = 0;
  int32_t last_id = -1;
  GenerateResult r;
  Status s = Generate(
      &session, g.prompt, Greedy(100),
      [&](std::string_view, int32_t id) {
        last_id = id;
        return ++calls < 7;
      },
      &r);
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_EQ(r.stop, "cancelled");
  EXPECT_EQ(calls, 7);
  ASSERT_FALSE(r.ids.empty());
  // The cancelling token is the last one generated.
  EXPECT_EQ(r.ids.back(), last_id);
  EXPECT_LE(r.ids.size(), 8u);
  EXPECT_TRUE(std::equal(r.ids.begin(), r.ids.end(), g.ids.begin() + g.prompt_ids.size()));
  session.Reset();
  ExpectGolden(&session, 40);
}

TEST(SessionTest, TwoSessionsInterleaved) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const GoldenRun& g = OnceUponATime();
  Session a(model, SessionOptions()), b(model, SessionOptions());
  std::vector<float> la, lb;
  ASSERT_TRUE(a.Eval(g.prompt_ids, LogitsMode::kLast, &la).ok());
  ASSERT_TRUE(b.Eval({g.prompt_ids[0], g.prompt_ids[1]}, LogitsMode::kLast, &lb).ok());
  ASSERT_TRUE(b.Eval({g.prompt_ids.begin() + 2, g.prompt_ids.end()}, LogitsMode::kLast, &lb).ok());
  std::vector<int32_t> ids_a, ids_b;
  for (int i = 0; i < 60; ++i) {
    ids_a.push_back(ArgMax(la));
    ids_b.push_back(ArgMax(lb));
    ASSERT_TRUE(a.Eval({ids_a.back()}, LogitsMode::kLast, &la).ok());
    ASSERT_TRUE(b.Eval({ids_b.back()}, LogitsMode::kLast, &lb).ok());
  }
  const std::vector<int32_t> expected(g.ids.begin() + g.prompt_ids.size(),
                                      g.ids.begin() + g.prompt_ids.size() + 60);
  EXPECT_EQ(ids_a, expected);
  EXPECT_EQ(ids_b, expected);
}

TEST(SessionTest, TwoSessionsOnTwoThreads) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const GoldenRun& g = OnceUponATime();
  const int n = static_cast<int>(g.ids.size() - g.prompt_ids.size());
  GenerateResult ra, rb;
  Status sa, sb;
  std::thread ta([&] {
    Session s(model, SessionOptions());
    sa = Generate(&s, g.prompt, Greedy(n), nullptr, &ra);
  });
  std::thread tb([&] {
    Session s(model, SessionOptions());
    sb = Generate(&s, g.prompt, Greedy(n), nullptr, &rb);
  });
  ta.join();
  tb.join();
  ASSERT_TRUE(sa.ok() && sb.ok());
  const std::vector<int32_t> expected(g.ids.begin() + g.prompt_ids.size(), g.ids.end());
  EXPECT_EQ(ra.ids, expected);
  EXPECT_EQ(rb.ids, expected);
}

TEST(SessionTest, MultiTurnEqualsFromScratch) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.kv_type = KvType::kF32;
  Session a(model, options);
  GenerateResult r1, r2;
  ASSERT_TRUE(Generate(&a, "Once upon a time", Greedy(12), nullptr, &r1).ok());
  ASSERT_TRUE(Generate(&a, " The dog ran", Greedy(9), nullptr, &r2).ok());
  // The second turn adds no BOS and starts right after the first.
  ASSERT_FALSE(r2.prompt_ids.empty());
  EXPECT_NE(r2.prompt_ids[0], model->config().bos_id);
  EXPECT_EQ(r2.prefill_tokens, static_cast<int>(r2.prompt_ids.size()) + 1);  // + r1's last id

  std::vector<int32_t> all = r1.prompt_ids;
  all.insert(all.end(), r1.ids.begin(), r1.ids.end());
  all.insert(all.end(), r2.prompt_ids.begin(), r2.prompt_ids.end());
  Session b(model, options);
  std::vector<float> lb;
  ASSERT_TRUE(b.Eval(all, LogitsMode::kLast, &lb).ok());
  EXPECT_EQ(ArgMax(lb), r2.ids[0]);
  std::vector<int32_t> rest(r2.ids.begin(), r2.ids.end());
  std::vector<float> la;
  ASSERT_TRUE(b.Eval(rest, LogitsMode::kLast, &lb).ok());
  ASSERT_TRUE(a.Eval({r2.ids.back()}, LogitsMode::kLast, &la).ok());
  ASSERT_EQ(a.tokens(), b.tokens());
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) ASSERT_NEAR(la[i], lb[i], 1e-5) << i;
}

TEST(SessionTest, StopStringIsHeldBackAndCut) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const GoldenRun& g = OnceUponATime();
  // The golden continuation is ", there was a little girl named Lily. ...".
  const std::string golden_text = g.stdout_text.substr(g.prompt.size());
  const std::string stop = "little girl";
  const size_t at = golden_text.find(stop);
  ASSERT_NE(at, std::string::npos);
  Session session(model, SessionOptions());
  GenerateOptions o = Greedy(100);
  o.stop_strings = {"nothing like this", stop};
  std::string streamed;
  GenerateResult r;
  ASSERT_TRUE(Generate(
                  &session, g.prompt, o,
                  [&](std::string_view piece, int32_t) {
                    streamed.append(piece);
                    return true;
                  },
                  &r)
                  .ok());
  EXPECT_EQ(r.stop, "stop_string");
  EXPECT_EQ(streamed, golden_text.substr(0, at));
  EXPECT_EQ(r.text, streamed);
}

// The op timer counts every step of every run it sees, and timing changes
// no result. Expected counts come from the architecture: a Llama layer has
// one attention and four Linear steps (q/k/v, output, gate/up, down; each
// group on one input is one step), and the tied output projection is one
// more Linear per run.
TEST(SessionTest, OpTimesCountEveryStepAndChangeNothing) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const size_t layers = static_cast<size_t>(model->config().n_layers);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  Session timed(model, SessionOptions());
  Session plain(model, SessionOptions());
  OpTimes times;
  timed.set_op_times(&times);
  std::vector<float> a, b;
  ASSERT_TRUE(timed.Eval(prompt, LogitsMode::kLast, &a).ok());
  ASSERT_TRUE(plain.Eval(prompt, LogitsMode::kLast, &b).ok());
  EXPECT_EQ(a, b);
  for (int i = 0; i < 3; ++i) {
    const int32_t next = ArgMax(a);
    ASSERT_TRUE(timed.Eval({next}, LogitsMode::kLast, &a).ok());
    ASSERT_TRUE(plain.Eval({next}, LogitsMode::kLast, &b).ok());
    EXPECT_EQ(a, b);
  }
  const uint64_t runs = 4;  // one prefill chunk, three decoded tokens
  EXPECT_EQ(times.runs, runs);
  const auto kind = [](OpKind op) { return static_cast<size_t>(op); };
  EXPECT_EQ(times.steps[kind(OpKind::kEmbed)], runs);
  EXPECT_EQ(times.steps[kind(OpKind::kAttention)], runs * layers);
  EXPECT_EQ(times.steps[kind(OpKind::kLinear)], runs * (4 * layers + 1));
  EXPECT_EQ(times.steps[kind(OpKind::kHeadRmsNorm)], 0u);  // Llama has no q/k norms
  EXPECT_GT(times.seconds[kind(OpKind::kLinear)], 0.0);
  EXPECT_GT(times.seconds[kind(OpKind::kAttention)], 0.0);
  for (size_t k = 0; k < kOpKindCount; ++k) {
    EXPECT_GE(times.seconds[k], 0.0) << OpKindName(static_cast<OpKind>(k));
    if (times.steps[k] == 0) EXPECT_EQ(times.seconds[k], 0.0) << OpKindName(static_cast<OpKind>(k));
  }
  // The Linears by output: the graph's groups on one input (q, k, v; gate,
  // up), each layer's o and down, and the tied head once per run, adding up
  // to the Linears' total.
  EXPECT_EQ(times.step_count.size(), model->plan().steps.size());
  const std::vector<LinearTime> linears = LinearTimesByOutput(model->plan(), times);
  const std::vector<std::string> names = {"q+k+v", "o", "g+u", "d", "logits"};
  ASSERT_EQ(linears.size(), names.size());
  double linear_seconds = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(linears[i].outputs, names[i]);
    EXPECT_EQ(linears[i].steps, names[i] == "logits" ? runs : runs * layers) << names[i];
    EXPECT_GT(linears[i].seconds, 0.0) << names[i];
    linear_seconds += linears[i].seconds;
  }
  EXPECT_NEAR(linear_seconds, times.seconds[kind(OpKind::kLinear)], 1e-9 * linear_seconds);

  // Unset: nothing more is counted.
  timed.set_op_times(nullptr);
  const OpTimes before = times;
  ASSERT_TRUE(timed.Eval({ArgMax(a)}, LogitsMode::kLast, &a).ok());
  EXPECT_EQ(times.runs, before.runs);
  for (size_t k = 0; k < kOpKindCount; ++k) EXPECT_EQ(times.steps[k], before.steps[k]);
}

TEST(SessionTest, KvPagesGrowOnDemandAndAreReturned) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  Session session(model, SessionOptions());
  EXPECT_EQ(session.backend_session().kv_bytes(), 0u);
  std::vector<float> logits;
  ASSERT_TRUE(session.Eval({1, 403}, LogitsMode::kLast, &logits).ok());
  const size_t one_page = session.backend_session().kv_page_bytes();
  // 5 layers x K and V x 4 kv heads x 8 dims x 64 tokens x 2 bytes.
  EXPECT_EQ(one_page, 5u * 2 * 32 * 64 * 2);
  EXPECT_EQ(session.backend_session().kv_bytes(), one_page);
  ASSERT_TRUE(session.Eval(std::vector<int32_t>(70, 403), LogitsMode::kLast, &logits).ok());
  EXPECT_EQ(session.backend_session().kv_bytes(), 2 * one_page);
  session.Truncate(10);
  EXPECT_EQ(session.position(), 10u);
  EXPECT_EQ(session.backend_session().kv_bytes(), one_page);
  session.Reset();
  EXPECT_EQ(session.backend_session().kv_bytes(), 0u);
}

}  // namespace
}  // namespace pocket
