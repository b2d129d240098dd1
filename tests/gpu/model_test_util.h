// Helpers of the GPU backends' whole-model acceptance tests: stories260K
// loaded on a named backend, greedy ids as Generate (against the goldens)
// and as a token loop make them, the budget that makes a window slide, and the teacher-forced
// comparison of a tiny Qwen3's logits with the CPU backend's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/generate.h"
#include "runtime/session.h"
#include "tests/runtime/qwen3_fixture.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket::gpu::testing {

inline std::unique_ptr<Model> LoadOn(const std::string& backend, const std::string& path) {
  ModelOptions options;
  options.backend = backend;
  auto m = Model::Load(path, options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// stories260K on `backend`, loaded once per test binary.
inline const Model* StoriesModelOn(const std::string& backend) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto it = models.find(backend);
  if (it == models.end()) {
    it = models.emplace(backend, LoadOn(backend, testing_stories::StoriesPath())).first;
  }
  return it->second.get();
}

// The prompt's ids and the greedy ids Generate gives for a golden run.
inline std::vector<int32_t> GoldenGreedyIds(const Model* model, KvType kv_type,
                                            const testing_stories::GoldenRun& run) {
  SessionOptions options;
  options.kv_type = kv_type;
  options.prefill_chunk = 3;  // the prompts run as several prefill chunks too
  Session session(model, options);
  GenerateResult result;
  const Status s = Generate(
      &session, run.prompt, testing_stories::GreedyFor(run),
      [](std::string_view, int32_t) { return true; }, &result);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<int32_t> all = result.prompt_ids;
  all.insert(all.end(), result.ids.begin(), result.ids.end());
  return all;
}

// Greedy generation of every golden run on `backend` gives the CPU
// backend's ids, which are llama2.c's.
inline void ExpectGoldenGreedyIds(const std::string& backend, KvType kv_type) {
  const Model* model = StoriesModelOn(backend);
  const Model* cpu = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  ASSERT_NE(cpu, nullptr);
  for (const testing_stories::GoldenRun& run : testing_stories::LoadGolden()) {
    SCOPED_TRACE("prompt '" + run.prompt + "'");
    const std::vector<int32_t> ids = GoldenGreedyIds(model, kv_type, run);
    EXPECT_EQ(ids, GoldenGreedyIds(cpu, kv_type, run));
    EXPECT_EQ(ids, run.ids);  // llama2.c's own output
  }
}

// Runs `prompt`, then `steps` greedy tokens one at a time; returns those.
inline std::vector<int32_t> GreedyIds(Session* session, const std::vector<int32_t>& prompt,
                                      size_t steps) {
  std::vector<float> logits;
  std::vector<int32_t> ids;
  Status s = session->Eval(prompt, LogitsMode::kLast, &logits);
  for (size_t i = 0; i < steps && s.ok(); ++i) {
    ids.push_back(
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    s = session->Eval({ids.back()}, LogitsMode::kLast, &logits);
  }
  EXPECT_TRUE(s.ok()) << s.ToString();
  return ids;
}

// Session options whose budget allows exactly `tokens` positions on
// `model`'s backend (the smallest budget whose max_tokens() reaches them),
// sliding, with an f32 cache.
inline SessionOptions SlidingOptions(const Model* model, size_t tokens) {
  SessionOptions options;
  options.kv_type = KvType::kF32;
  options.kv_policy = KvPolicy::kSlide;
  options.prefill_chunk = 16;
  size_t lo = 1, hi = size_t{1} << 30;
  while (lo < hi) {
    options.budget_bytes = lo + (hi - lo) / 2;
    if (Session(model, options).max_tokens() >= tokens) {
      hi = options.budget_bytes;
    } else {
      lo = options.budget_bytes + 1;
    }
  }
  options.budget_bytes = lo;
  return options;
}

// Saved to `path` after a prompt and some greedy tokens, then loaded into
// a fresh session (backend -> backend, -> cpu, cpu -> backend), an f32
// session goes on with the ids of a CPU session that never stopped.
inline void ExpectSaveLoadContinues(const std::string& backend, const std::string& path) {
  const Model* model = StoriesModelOn(backend);
  const Model* cpu = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  ASSERT_NE(cpu, nullptr);
  SessionOptions options;
  options.kv_type = KvType::kF32;
  const std::vector<int32_t> prompt = testing_stories::LoadGolden()[2].prompt_ids;
  Session straight(cpu, options);
  const std::vector<int32_t> want = GreedyIds(&straight, prompt, 60);

  const struct {
    const Model* from;
    const Model* to;
  } moves[] = {{model, model}, {model, cpu}, {cpu, model}};
  for (const auto& move : moves) {
    SCOPED_TRACE(std::string(move.from->backend().name()) + " -> " + move.to->backend().name());
    Session first(move.from, options);
    std::vector<int32_t> ids = GreedyIds(&first, prompt, 25);
    ASSERT_EQ(ids.size(), 25u);
    // The state holds the last greedy token's input as well: feed it again
    // in the loaded session to get its logits.
    Status s = first.Save(path);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Session second(move.to, options);
    s = second.Load(path);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(second.tokens(), first.tokens());
    second.Truncate(second.position() - 1);
    const std::vector<int32_t> rest = GreedyIds(&second, {first.tokens().back()}, 35);
    ids.insert(ids.end(), rest.begin(), rest.end());
    EXPECT_EQ(ids, want);
  }
}

// A tiny Qwen3 (written as `name`) on `backend`: the logits of 64 ids,
// teacher-forced with an f32 cache, are within 1e-3 of the CPU backend's.
inline void ExpectQwen3LogitsNearTheCpu(const std::string& backend, const std::string& name) {
  const std::string path = testing_qwen3::Write(name, 512);
  ASSERT_FALSE(path.empty());
  auto cpu_model = Model::Load(path, ModelOptions());
  ASSERT_TRUE(cpu_model.ok()) << cpu_model.status().ToString();
  const std::unique_ptr<Model> gpu_model = LoadOn(backend, path);
  ASSERT_NE(gpu_model, nullptr);

  // 64 ids spread over the vocabulary by a fixed LCG (no tokenizer needed).
  const int32_t vocab = (*cpu_model)->config().vocab;
  std::vector<int32_t> ids(64);
  uint32_t x = 12345;
  for (int32_t& id : ids) {
    x = x * 1664525u + 1013904223u;
    id = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab));
  }
  SessionOptions options;
  options.kv_type = KvType::kF32;
  Session cpu(cpu_model->get(), options);
  Session gpu(gpu_model.get(), options);
  std::vector<float> want, got;
  ASSERT_TRUE(cpu.Eval(ids, LogitsMode::kAll, &want).ok());
  const Status s = gpu.Eval(ids, LogitsMode::kAll, &got);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.size(), ids.size() * static_cast<size_t>(vocab));
  float worst = 0.0f;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  EXPECT_LE(worst, 1e-3f);
}

}  // namespace pocket::gpu::testing
