// Sampler: each logit processor on hand-computed values, the candidate sets
// of top-k / top-p / min-p on hand-built distributions (empirical
// frequencies within a 5-sigma binomial bound of the renormalised
// probabilities), determinism of the seeded draw, and parameter validation.
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pocket {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

SamplingParams Greedy() { return SamplingParams(); }

SamplingParams Temperature(float t, uint64_t seed = 1234) {
  SamplingParams p;
  p.temperature = t;
  p.seed = seed;
  return p;
}

// Logits whose softmax (T = 1) is exactly the given distribution.
std::vector<float> LogitsOf(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

// Draws `n` tokens from fresh copies of `logits` and counts each id.
std::map<int32_t, int> Histogram(const SamplingParams& params, const std::vector<float>& logits,
                                 int n) {
  Sampler sampler(params);
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = logits;
    ++counts[sampler.Sample(l.data(), static_cast<int32_t>(l.size()), {})];
  }
  return counts;
}

// Exactly the ids in `expected` occur, each within 5 binomial standard
// deviations of n * probability.
void ExpectDistribution(const std::map<int32_t, int>& counts,
                        const std::map<int32_t, double>& expected, int n) {
  for (const auto& [id, count] : counts) {
    EXPECT_TRUE(expected.count(id)) << "id " << id << " drawn " << count << " times";
  }
  for (const auto& [id, p] : expected) {
    const auto it = counts.find(id);
    const int count = it == counts.end() ? 0 : it->second;
    const double sigma = std::sqrt(n * p * (1.0 - p));
    EXPECT_NEAR(count, n * p, 5.0 * sigma) << "id " << id << " (p = " << p << ")";
  }
}

constexpr int kDraws = 20000;

TEST(SamplerTest, GreedyTakesLowestIdOnTies) {
  Sampler s(Greedy());
  std::vector<float> l = {1.0f, 3.0f, 3.0f, 2.0f};
  EXPECT_EQ(s.Sample(l.data(), 4, {}), 1);
  l = {kNan, 1.0f, 2.0f};
  EXPECT_EQ(s.Sample(l.data(), 3, {}), 2);
  l = {kNan, kNan, kNan};
  EXPECT_EQ(s.Sample(l.data(), 3, {}), 0);
}

TEST(SamplerTest, LogitBiasIsAdded) {
  SamplingParams p = Greedy();
  p.logit_bias = {{0, 2.5f}, {2, -1.0f}};
  Sampler s(p);
  std::vector<float> l = {1.0f, 2.0f, 3.0f};
  EXPECT_EQ(s.Sample(l.data(), 3, {}), 0);
  EXPECT_EQ(l, (std::vector<float>{3.5f, 2.0f, 2.0f}));
}

TEST(SamplerTest, RepeatPenaltyDividesPositiveMultipliesNegative) {
  SamplingParams p = Greedy();
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  std::vector<float> l = {2.0f, -1.0f, 3.0f, 0.5f, 0.0f};
  // Id 1 appears twice but is penalised once; out-of-vocabulary ids in the
  // history are ignored.
  EXPECT_EQ(s.Sample(l.data(), 5, {0, 1, 1, 4, -5, 100}), 2);
  EXPECT_EQ(l, (std::vector<float>{1.0f, -2.0f, 3.0f, 0.5f, 0.0f}));
}

TEST(SamplerTest, RepeatWindow) {
  SamplingParams p = Greedy();
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = 2;
  std::vector<float> l = {4.0f, 4.0f, 4.0f, 4.0f};
  Sampler(p).Sample(l.data(), 4, {3, 0, 1});
  EXPECT_EQ(l, (std::vector<float>{2.0f, 2.0f, 4.0f, 4.0f}));

  p.repeat_last_n = -1;  // the whole history
  l = {4.0f, 4.0f, 4.0f, 4.0f};
  Sampler(p).Sample(l.data(), 4, {3, 0, 1});
  EXPECT_EQ(l, (std::vector<float>{2.0f, 2.0f, 4.0f, 2.0f}));

  p.repeat_last_n = 0;  // no window: no penalty
  l = {4.0f, 4.0f, 4.0f, 4.0f};
  Sampler(p).Sample(l.data(), 4, {3, 0, 1});
  EXPECT_EQ(l, (std::vector<float>{4.0f, 4.0f, 4.0f, 4.0f}));
}

TEST(SamplerTest, FrequencyAndPresencePenalties) {
  SamplingParams p = Greedy();
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 1.0f;
  std::vector<float> l = {0.0f, 0.0f, 0.0f};
  Sampler(p).Sample(l.data(), 3, {2, 2, 2, 1});
  EXPECT_EQ(l, (std::vector<float>{0.0f, -1.5f, -2.5f}));

  // The repetition penalty comes first: 4 / 2 - count * 0.5 - 1.
  p.repeat_penalty = 2.0f;
  l = {4.0f, 4.0f, 4.0f};
  EXPECT_EQ(Sampler(p).Sample(l.data(), 3, {2, 2, 2, 1}), 0);
  EXPECT_EQ(l, (std::vector<float>{4.0f, 0.5f, -0.5f}));
}

TEST(SamplerTest, PlainTemperatureMatchesSoftmax) {
  const std::vector<double> probs = {0.1, 0.4, 0.2, 0.3};
  ExpectDistribution(Histogram(Temperature(1.0f), LogitsOf(probs), kDraws),
                     {{0, 0.1}, {1, 0.4}, {2, 0.2}, {3, 0.3}}, kDraws);
  // T = 2 takes the square root of the probabilities before renormalising.
  double sum = 0.0;
  for (double p : probs) sum += std::sqrt(p);
  std::map<int32_t, double> expected;
  for (int i = 0; i < 4; ++i) expected[i] = std::sqrt(probs[i]) / sum;
  ExpectDistribution(Histogram(Temperature(2.0f), LogitsOf(probs), kDraws), expected, kDraws);
}

TEST(SamplerTest, TopK) {
  SamplingParams p = Temperature(1.0f);
  p.top_k = 2;
  ExpectDistribution(Histogram(p, LogitsOf({0.1, 0.4, 0.2, 0.3}), kDraws),
                     {{1, 0.4 / 0.7}, {3, 0.3 / 0.7}}, kDraws);
  // Ties at the cut keep the lower id.
  p.top_k = 1;
  ExpectDistribution(Histogram(p, {1.0f, 2.0f, 2.0f}, 100), {{1, 1.0}}, 100);
}

TEST(SamplerTest, TopP) {
  SamplingParams p = Temperature(1.0f);
  const std::vector<float> logits = LogitsOf({0.1, 0.4, 0.2, 0.3});
  p.top_p = 0.6f;  // 0.4 < 0.6 <= 0.4 + 0.3
  ExpectDistribution(Histogram(p, logits, kDraws), {{1, 0.4 / 0.7}, {3, 0.3 / 0.7}}, kDraws);
  p.top_p = 0.75f;  // 0.7 < 0.75 <= 0.9
  ExpectDistribution(Histogram(p, logits, kDraws), {{1, 0.4 / 0.9}, {3, 0.3 / 0.9}, {2, 0.2 / 0.9}},
                     kDraws);
  p.top_p = 0.01f;  // always at least the most likely token
  ExpectDistribution(Histogram(p, logits, 100), {{1, 1.0}}, 100);
}

// 200 equally likely tokens (the rest impossible): top_p = 0.5025 needs 101
// of them, more than one sorting chunk, and ties go to the lowest ids.
TEST(SamplerTest, TopPAcrossChunksWithTies) {
  std::vector<float> logits(1000, -kInf);
  for (int i = 0; i < 200; ++i) logits[i * 5] = 0.0f;
  SamplingParams p = Temperature(1.0f);
  p.top_p = 0.5025f;
  std::map<int32_t, double> expected;
  for (int i = 0; i <= 100; ++i) expected[i * 5] = 1.0 / 101.0;
  ExpectDistribution(Histogram(p, logits, kDraws), expected, kDraws);
}

TEST(SamplerTest, MinP) {
  SamplingParams p = Temperature(1.0f);
  const std::vector<float> logits = LogitsOf({0.1, 0.4, 0.2, 0.3});
  p.min_p = 0.6f;  // keep p >= 0.24
  ExpectDistribution(Histogram(p, logits, kDraws), {{1, 0.4 / 0.7}, {3, 0.3 / 0.7}}, kDraws);
  p.min_p = 0.45f;  // keep p >= 0.18
  ExpectDistribution(Histogram(p, logits, kDraws), {{1, 0.4 / 0.9}, {3, 0.3 / 0.9}, {2, 0.2 / 0.9}},
                     kDraws);
}

// top-k 4 drops id 0 and renormalises to 0.35/0.95, 0.25/0.95, 0.2/0.95,
// 0.15/0.95; top-p 0.8 keeps ids 1, 2, 3 (cumulative 0.842); min-p 0.6 cuts
// below 0.6 * 0.368 = 0.221, dropping id 3 (0.2105).
TEST(SamplerTest, ProcessorsCombine) {
  SamplingParams p = Temperature(1.0f);
  p.top_k = 4;
  p.top_p = 0.8f;
  p.min_p = 0.6f;
  ExpectDistribution(Histogram(p, LogitsOf({0.05, 0.35, 0.25, 0.2, 0.15}), kDraws),
                     {{1, 0.35 / 0.6}, {2, 0.25 / 0.6}}, kDraws);
}

TEST(SamplerTest, ImpossibleTokens) {
  // NaN logits and -inf bias are never drawn; +inf logits share all mass.
  SamplingParams p = Temperature(1.0f);
  ExpectDistribution(Histogram(p, {kNan, kNan, 1.0f, kNan}, 100), {{2, 1.0}}, 100);
  p.logit_bias = {{0, -kInf}};
  ExpectDistribution(Histogram(p, {5.0f, 0.0f}, 100), {{1, 1.0}}, 100);
  p.logit_bias.clear();
  ExpectDistribution(Histogram(p, {1.0f, kInf, 2.0f, kInf}, kDraws), {{1, 0.5}, {3, 0.5}}, kDraws);
  // Nothing possible at all: falls back to the greedy answer.
  ExpectDistribution(Histogram(p, {kNan, -kInf}, 10), {{0, 1.0}}, 10);
}

// With four equal weights the draw is id = floor(4u), u = (x >> 11) / 2^53,
// which is x >> 62: the sequence is fixed by the standard's mt19937_64
// alone, whatever the platform.
TEST(SamplerTest, DrawFollowsTheDocumentedFormula) {
  for (uint64_t seed : {0ull, 1ull, 42ull, 0xDEADBEEFull}) {
    Sampler s(Temperature(0.7f, seed));
    std::mt19937_64 reference(seed);
    for (int i = 0; i < 1000; ++i) {
      std::vector<float> l(4, 0.25f);
      ASSERT_EQ(s.Sample(l.data(), 4, {}), static_cast<int32_t>(reference() >> 62))
          << "seed " << seed << " draw " << i;
    }
  }
}

std::vector<int32_t> Draws(Sampler* s, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l(1000, 0.0f);
    out.push_back(s->Sample(l.data(), 1000, {}));
  }
  return out;
}

TEST(SamplerTest, SameSeedSameSequence) {
  Sampler a(Temperature(1.0f, 7));
  Sampler b(Temperature(1.0f, 7));
  Sampler c(Temperature(1.0f, 8));
  const std::vector<int32_t> first = Draws(&a, 100);
  EXPECT_EQ(first, Draws(&b, 100));
  EXPECT_NE(first, Draws(&c, 100));
  a.Reseed(7);
  EXPECT_EQ(first, Draws(&a, 100));
}

TEST(SamplerTest, TinyTemperatureIsGreedy) {
  std::mt19937_64 gen(99);
  for (float t : {1e-4f, 1e-20f, 1e-45f}) {
    Sampler sampler(Temperature(t));
    for (int trial = 0; trial < 200; ++trial) {
      // Distinct logits at least 0.01 apart: a shuffled ladder.
      std::vector<float> l(50);
      for (int i = 0; i < 50; ++i) l[i] = 0.01f * static_cast<float>(i);
      std::shuffle(l.begin(), l.end(), gen);
      std::vector<float> greedy_copy = l;
      const int32_t greedy = Sampler(Greedy()).Sample(greedy_copy.data(), 50, {});
      EXPECT_EQ(sampler.Sample(l.data(), 50, {}), greedy) << "T = " << t;
    }
  }
}

void ExpectInvalid(const SamplingParams& p, const std::string& name) {
  const Status s = ValidateSamplingParams(p, 100);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
  EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
}

TEST(SamplerTest, Validation) {
  SamplingParams p;
  EXPECT_TRUE(ValidateSamplingParams(p, 100).ok());
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.repeat_last_n = -1;
  p.logit_bias = {{0, -kInf}, {99, 3.0f}};
  EXPECT_TRUE(ValidateSamplingParams(p, 100).ok());
  EXPECT_EQ(ValidateSamplingParams(p, 0).code(), StatusCode::kInvalidArgument);

  for (float t : {-0.1f, kNan, kInf}) {
    SamplingParams q;
    q.temperature = t;
    ExpectInvalid(q, "temperature");
  }
  for (float v : {0.0f, 1.5f, kNan}) {
    SamplingParams q;
    q.top_p = v;
    ExpectInvalid(q, "top_p");
  }
  for (float v : {-0.1f, 1.1f, kNan}) {
    SamplingParams q;
    q.min_p = v;
    ExpectInvalid(q, "min_p");
  }
  for (float v : {0.0f, -1.0f, kNan, kInf}) {
    SamplingParams q;
    q.repeat_penalty = v;
    ExpectInvalid(q, "repeat_penalty");
  }
  SamplingParams q;
  q.top_k = -1;
  ExpectInvalid(q, "top_k");
  q = SamplingParams();
  q.repeat_last_n = -2;
  ExpectInvalid(q, "repeat_last_n");
  q = SamplingParams();
  q.frequency_penalty = kNan;
  ExpectInvalid(q, "frequency_penalty");
  q = SamplingParams();
  q.presence_penalty = kInf;
  ExpectInvalid(q, "presence_penalty");
  for (int32_t id : {-1, 100}) {
    q = SamplingParams();
    q.logit_bias = {{id, 1.0f}};
    ExpectInvalid(q, "logit_bias names token id " + std::to_string(id));
  }
  q = SamplingParams();
  q.logit_bias = {{3, kNan}};
  ExpectInvalid(q, "logit_bias for token 3");
}

}  // namespace
}  // namespace pocket
