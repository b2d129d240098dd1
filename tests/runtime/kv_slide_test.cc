// K/V storage and the sliding window: q8 KV keeps stories260K's next-token
// distribution after 400 tokens within KL 1e-3 of f16 KV; policy kSlide
// keeps the sinks and the newest tokens with K re-encoded at the new
// positions (checked against a from-scratch run over the kept tokens), and
// generation goes on past the context in bounded memory.
#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/executor.h"
#include "runtime/generate.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

std::vector<double> Softmax(const std::vector<float>& logits) {
  const float max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(double{logits[i]} - max);
  for (double& x : p) x /= sum;
  return p;
}

// The golden story's tokens, repeated to reach n.
std::vector<int32_t> StoryTokens(size_t n) {
  const auto runs = testing_stories::LoadGolden();
  std::vector<int32_t> ids;
  for (size_t i = 0; ids.size() < n; ++i) {
    const std::vector<int32_t>& g = runs[i % runs.size()].ids;
    ids.insert(ids.end(), g.begin() + (ids.empty() ? 0 : 1), g.end());
  }
  ids.resize(n);
  return ids;
}

TEST(KvTypeTest, Q8NextTokenDistributionWithinKl1e3OfF16After400Tokens) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> ids = StoryTokens(400);
  std::vector<double> kl;
  std::vector<std::vector<float>> logits(2);
  for (KvType type : {KvType::kF16, KvType::kQ8}) {
    SessionOptions options;
    options.kv_type = type;
    Session session(model, options);
    ASSERT_TRUE(session.Eval(ids, LogitsMode::kLast, &logits[type == KvType::kQ8]).ok());
  }
  const std::vector<double> p = Softmax(logits[0]), q = Softmax(logits[1]);
  double d = 0;
  for (size_t i = 0; i < p.size(); ++i) d += p[i] * std::log(p[i] / q[i]);
  EXPECT_LE(d, 1e-3);
  EXPECT_GT(d, 0.0);  // q8 is really in use
}

// Layer 0's K and V of a token depend only on the token and its position,
// so after a slide they must equal a fresh run's over the kept tokens.
// `steps`: the tolerance in q8 steps (the row's max |value| / 127), 0 for
// f32 rows.
void ExpectLayer0Equal(const Session& a, const Session& b, float steps) {
  ASSERT_EQ(a.tokens(), b.tokens());
  // Both run on the CPU backend, whose session is a cpu::Executor.
  const cpu::KvView va = static_cast<const cpu::Executor&>(a.backend_session()).kv_cache().View(0);
  const cpu::KvView vb = static_cast<const cpu::Executor&>(b.backend_session()).kv_cache().View(0);
  std::vector<float> ra(va.row_stride), rb(vb.row_stride);
  for (size_t t = 0; t < a.position(); ++t) {
    for (int kv = 0; kv < 2; ++kv) {
      cpu::KvRowToF32(va, kv == 0 ? va.k_pages : va.v_pages, t, ra.data());
      cpu::KvRowToF32(vb, kv == 0 ? vb.k_pages : vb.v_pages, t, rb.data());
      float amax = 0.0f;
      for (float x : rb) amax = std::max(amax, std::fabs(x));
      const float tol = steps > 0 ? steps * amax / 127.0f : 1e-4f;
      for (size_t i = 0; i < ra.size(); ++i) {
        ASSERT_NEAR(ra[i], rb[i], tol) << "position " << t << (kv == 0 ? " K " : " V ") << i;
      }
    }
  }
}

TEST(SlideTest, KeepsSinksAndNewestWithPositionsReencoded) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  for (KvType type : {KvType::kF32, KvType::kQ8}) {
    SessionOptions options;
    options.kv_type = type;
    options.kv_policy = KvPolicy::kSlide;
    options.kv_page_tokens = 16;
    options.prefill_chunk = 16;
    Session sliding(model, options);
    const std::vector<int32_t> ids = StoryTokens(1300);
    std::vector<float> logits;
    // In uneven pieces, past the 512-token context twice.
    for (size_t at = 0; at < ids.size();) {
      const size_t n = std::min<size_t>(at % 7 + 1, ids.size() - at);
      ASSERT_TRUE(
          sliding.Eval({ids.begin() + at, ids.begin() + at + n}, LogitsMode::kLast, &logits).ok());
      ASSERT_LE(sliding.position(), 512u);
      ASSERT_LE(sliding.backend_session().kv_bytes(),
                512 / 16 * sliding.backend_session().kv_page_bytes());
      at += n;
    }
    const std::vector<int32_t>& kept = sliding.tokens();
    ASSERT_GT(kept.size(), 200u);
    EXPECT_EQ(std::vector<int32_t>(kept.begin(), kept.begin() + 4),
              std::vector<int32_t>(ids.begin(), ids.begin() + 4));
    const size_t tail = kept.size() - 4;
    EXPECT_EQ(std::vector<int32_t>(kept.begin() + 4, kept.end()),
              std::vector<int32_t>(ids.end() - static_cast<std::ptrdiff_t>(tail), ids.end()));

    options.kv_policy = KvPolicy::kError;
    Session fresh(model, options);
    ASSERT_TRUE(fresh.Eval(kept, LogitsMode::kLast, &logits).ok());
    // f32: only the rotation's rounding; q8: requantizing after the
    // rotation (up to ~0.7 + 0.5 step) adds to the half step of fresh codes.
    ExpectLayer0Equal(sliding, fresh, type == KvType::kF32 ? 0.0f : 2.0f);
  }
}

TEST(SlideTest, GenerationGoesOnPastTheContextInBoundedMemory) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.kv_policy = KvPolicy::kSlide;
  Session session(model, options);
  GenerateOptions o;
  o.max_new_tokens = 1200;
  o.ignore_eos = true;
  size_t max_bytes = 0;
  GenerateResult r;
  ASSERT_TRUE(Generate(
                  &session, "Once upon a time", o,
                  [&](std::string_view, int32_t) {
                    max_bytes = std::max(max_bytes, session.backend_session().kv_bytes());
                    return true;
                  },
                  &r)
                  .ok());
  EXPECT_EQ(r.ids.size(), 1200u);
  EXPECT_EQ(r.stop, "length");
  EXPECT_LE(session.position(), 512u);
  EXPECT_LE(max_bytes, 512 / 64 * session.backend_session().kv_page_bytes());

  // Policy kError stops at the context instead.
  Session bounded(model, SessionOptions());
  ASSERT_TRUE(Generate(&bounded, "Once upon a time", o, nullptr, &r).ok());
  EXPECT_EQ(r.stop, "length");
  EXPECT_EQ(bounded.position(), 512u);
}

}  // namespace
}  // namespace pocket
