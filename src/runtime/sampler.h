// Token sampling: logit processors (penalties, bias) then greedy or
// temperature + top-k + top-p + min-p sampling, driven by a seeded
// generator so the same seed gives the same output on the same build.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "util/status.h"

namespace pocket {

struct SamplingParams {
  float temperature = 0.0f;        // 0 = greedy (ties: lowest id)
  int32_t top_k = 0;               // 0 = off
  float top_p = 1.0f;              // 1 = off
  float min_p = 0.0f;              // 0 = off; keep p >= min_p * p_max
  float repeat_penalty = 1.0f;     // llama.cpp/CTRL style: logit/r if > 0 else logit*r
  int32_t repeat_last_n = 64;      // window of previous tokens the penalties see (-1 = all)
  float frequency_penalty = 0.0f;  // OpenAI style: -= count * f
  float presence_penalty = 0.0f;   // -= p if count > 0
  std::vector<std::pair<int32_t, float>> logit_bias;  // id, added to the logit
  uint64_t seed = 0;
};

Status ValidateSamplingParams(const SamplingParams& params, int32_t vocab);

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // Picks the next id from logits[vocab] (modified in place by the
  // processors). `history` is every token so far (prompt + generated).
  int32_t Sample(float* logits, int32_t vocab, const std::vector<int32_t>& history);
  void Reseed(uint64_t seed);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> scratch_;
};

}  // namespace pocket
