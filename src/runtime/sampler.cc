#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/ops.h"

namespace pocket {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Candidate order: higher value first, lower id on ties. A total order, so
// every selection below is the same on every standard library.
bool Before(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// A double in [0, 1) from the top 53 bits of one 64-bit draw: exact, and
// fixed by this formula rather than by a library's distribution code.
double UniformFromBits(uint64_t bits) {
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

void ApplyPenalties(const SamplingParams& p, float* logits, int32_t vocab,
                    const std::vector<int32_t>& history) {
  const bool repeat = p.repeat_penalty != 1.0f;
  if (!repeat && p.frequency_penalty == 0.0f && p.presence_penalty == 0.0f) return;
  size_t window = history.size();
  if (p.repeat_last_n >= 0) window = std::min(window, static_cast<size_t>(p.repeat_last_n));
  std::vector<int32_t> recent(history.end() - window, history.end());
  std::sort(recent.begin(), recent.end());
  for (size_t i = 0; i < recent.size();) {
    const int32_t id = recent[i];
    size_t j = i;
    while (j < recent.size() && recent[j] == id) ++j;
    const float count = static_cast<float>(j - i);
    i = j;
    if (id < 0 || id >= vocab) continue;
    float& l = logits[id];
    if (repeat) l = l > 0.0f ? l / p.repeat_penalty : l * p.repeat_penalty;
    l -= count * p.frequency_penalty + p.presence_penalty;
  }
}

// NaN never wins here (cpu::Argmax), nor passes the "> -inf" candidate
// test below: NaN logits count as -inf.
int32_t Argmax(const float* logits, int32_t vocab) {
  return static_cast<int32_t>(cpu::Argmax(logits, static_cast<size_t>(vocab)));
}

// Top-p bucket of a weight in [0, 1]: its float exponent and top three
// mantissa bits (eight buckets per power of two). The bit pattern of a
// non-negative float grows with its value, so buckets are ordered by weight.
constexpr int kTopPBuckets = 1024;
int TopPBucket(float weight) {
  uint32_t bits;
  std::memcpy(&bits, &weight, sizeof(bits));
  return static_cast<int>(bits >> 20);
}

// Keeps the smallest set of highest-weight candidates (ties: lower id) whose
// weight reaches `target`. One pass sums the weight per bucket to find the
// bucket where the running total crosses the target; every heavier bucket is
// kept whole (in its current order) and only the crossing bucket is sorted.
void KeepTopP(double target, std::vector<std::pair<float, int32_t>>* candidates) {
  std::vector<double> mass(kTopPBuckets, 0.0);
  for (const auto& c : *candidates) mass[TopPBucket(c.first)] += c.first;
  double heavier = 0.0;
  int cross = kTopPBuckets - 1;
  while (cross >= 0 && heavier + mass[cross] < target) heavier += mass[cross--];
  if (cross < 0) return;  // rounding left the total short: keep everything

  std::vector<std::pair<float, int32_t>> boundary;
  size_t kept = 0;
  for (const auto& c : *candidates) {
    const int bucket = TopPBucket(c.first);
    if (bucket > cross) {
      (*candidates)[kept++] = c;
    } else if (bucket == cross) {
      boundary.push_back(c);
    }
  }
  std::sort(boundary.begin(), boundary.end(), Before);
  candidates->resize(kept);
  double cumulative = heavier;
  for (const auto& c : boundary) {
    candidates->push_back(c);
    cumulative += c.first;
    if (cumulative >= target) break;
  }
}

// The tokens with non-zero probability (logit > -inf, so never NaN): all of
// them in id order, or with top_k > 0 only the k best, sorted by Before.
// Top-k keeps a heap of the k best seen so far, whose front is the worst of
// them; ids arrive in increasing order, so an equal logit never displaces an
// earlier (lower) id. For the usual small k almost every logit is rejected by
// one comparison with the front, which is far cheaper than selecting from
// all candidates.
void CollectCandidates(const float* logits, int32_t vocab, int32_t top_k,
                       std::vector<std::pair<float, int32_t>>* out) {
  out->clear();
  if (top_k <= 0 || top_k >= vocab) {
    for (int32_t i = 0; i < vocab; ++i) {
      if (logits[i] > kNegInf) out->emplace_back(logits[i], i);
    }
    return;
  }
  for (int32_t i = 0; i < vocab; ++i) {
    const float l = logits[i];
    if (!(l > kNegInf)) continue;
    if (out->size() < static_cast<size_t>(top_k)) {
      out->emplace_back(l, i);
      std::push_heap(out->begin(), out->end(), Before);
    } else if (l > out->front().first) {
      std::pop_heap(out->begin(), out->end(), Before);
      out->back() = {l, i};
      std::push_heap(out->begin(), out->end(), Before);
    }
  }
  // The heap's layout depends on the standard library; the sorted order
  // does not, and the draw walks the candidates in this order.
  std::sort(out->begin(), out->end(), Before);
}

}  // namespace

Status ValidateSamplingParams(const SamplingParams& p, int32_t vocab) {
  const auto bad = [](const char* what, double value) {
    return Errorf(StatusCode::kInvalidArgument, "sampling: %s (got %g)", what, value);
  };
  if (vocab <= 0) return bad("the vocabulary size must be positive", vocab);
  if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature)) {
    return bad("temperature must be finite and >= 0 (0 = greedy)", p.temperature);
  }
  if (p.top_k < 0) return bad("top_k must be >= 0 (0 = off)", p.top_k);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return bad("top_p must be in (0, 1] (1 = off)", p.top_p);
  }
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
    return bad("min_p must be in [0, 1] (0 = off)", p.min_p);
  }
  if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty)) {
    return bad("repeat_penalty must be finite and > 0 (1 = off)", p.repeat_penalty);
  }
  if (p.repeat_last_n < -1) return bad("repeat_last_n must be >= -1 (-1 = all)", p.repeat_last_n);
  if (!std::isfinite(p.frequency_penalty)) {
    return bad("frequency_penalty must be finite", p.frequency_penalty);
  }
  if (!std::isfinite(p.presence_penalty)) {
    return bad("presence_penalty must be finite", p.presence_penalty);
  }
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0 || id >= vocab) {
      return Errorf(StatusCode::kInvalidArgument,
                    "sampling: logit_bias names token id %d, outside the vocabulary [0, %d)", id,
                    vocab);
    }
    // -inf is allowed: it is how a caller bans a token.
    if (std::isnan(bias) || bias == std::numeric_limits<float>::infinity()) {
      return Errorf(StatusCode::kInvalidArgument,
                    "sampling: logit_bias for token %d is %g; use a finite value or -inf", id,
                    bias);
    }
  }
  return Status::Ok();
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

void Sampler::Reseed(uint64_t seed) { rng_.seed(seed); }

int32_t Sampler::Sample(float* logits, int32_t vocab, const std::vector<int32_t>& history) {
  if (logits == nullptr || vocab <= 0) return -1;
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id >= 0 && id < vocab) logits[id] += bias;
  }
  ApplyPenalties(params_, logits, vocab, history);
  if (!(params_.temperature > 0.0f)) return Argmax(logits, vocab);

  CollectCandidates(logits, vocab, params_.top_k, &scratch_);
  if (scratch_.empty()) return Argmax(logits, vocab);

  // Softmax with temperature: each value becomes its unnormalised weight
  // exp((l - max) / T), which is 1 for the most likely token. Dividing (not
  // multiplying by 1/T) keeps a tiny T from turning 0 * inf into NaN; +inf
  // logits share all the mass.
  float max_logit = kNegInf;
  for (const auto& c : scratch_) max_logit = std::max(max_logit, c.first);
  const float t = params_.temperature;
  const bool infinite_max = std::isinf(max_logit);
  double total = 0.0;
  for (auto& c : scratch_) {
    if (infinite_max) {
      c.first = c.first == max_logit ? 1.0f : 0.0f;
    } else {
      c.first = std::exp((c.first - max_logit) / t);
    }
    total += c.first;
  }

  // Top-p: the smallest set of most likely tokens with mass >= top_p.
  if (params_.top_p < 1.0f) KeepTopP(static_cast<double>(params_.top_p) * total, &scratch_);

  // Min-p: the weights are p / p_max already, so the cut is weight >= min_p.
  if (params_.min_p > 0.0f) {
    const float min_p = params_.min_p;
    scratch_.erase(
        std::remove_if(scratch_.begin(), scratch_.end(),
                       [min_p](const std::pair<float, int32_t>& c) { return c.first < min_p; }),
        scratch_.end());
  }

  // Renormalise over the survivors and draw by inverse CDF.
  double kept = 0.0;
  for (const auto& c : scratch_) kept += c.first;
  const double u = UniformFromBits(rng_()) * kept;
  double cumulative = 0.0;
  int32_t last_positive = scratch_.front().second;
  for (const auto& c : scratch_) {
    if (c.first <= 0.0f) continue;
    cumulative += c.first;
    last_positive = c.second;
    if (u < cumulative) return c.second;
  }
  return last_positive;
}

}  // namespace pocket
