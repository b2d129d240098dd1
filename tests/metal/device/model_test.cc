// Acceptance of the Metal backend on a Mac (label metal): the whole decoder
// on the GPU gives what the CPU backend gives. Greedy ids on stories260K
// equal the CPU's and llama2.c's with f16 and f32 caches; on a tiny Qwen3
// with an f32 cache, teacher-forced logits are within 1e-3 of the CPU's;
// with a budget that makes the window slide, greedy ids equal the CPU's;
// a state saved and loaded (metal -> metal, metal -> cpu, cpu -> metal)
// goes on with the ids of a CPU session that never stopped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/generate.h"
#include "runtime/session.h"
#include "tests/runtime/qwen3_fixture.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

using testing_stories::GoldenRun;

std::unique_ptr<Model> LoadOnMetal(const std::string& path) {
  ModelOptions options;
  options.backend = "metal";
  auto m = Model::Load(path, options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

const Model* MetalStoriesModel() {
  static std::unique_ptr<Model> model = LoadOnMetal(testing_stories::StoriesPath());
  return model.get();
}

std::vector<int32_t> GreedyIds(const Model* model, KvType kv_type, const GoldenRun& run) {
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

class MetalGoldenTest : public ::testing::TestWithParam<KvType> {};

TEST_P(MetalGoldenTest, GreedyIdsMatchTheCpuBackend) {
  const Model* gpu = MetalStoriesModel();
  const Model* cpu = testing_stories::StoriesModel();
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(cpu, nullptr);
  for (const GoldenRun& run : testing_stories::LoadGolden()) {
    SCOPED_TRACE("prompt '" + run.prompt + "'");
    const std::vector<int32_t> ids = GreedyIds(gpu, GetParam(), run);
    EXPECT_EQ(ids, GreedyIds(cpu, GetParam(), run));
    EXPECT_EQ(ids, run.ids);  // llama2.c's own output
  }
}

INSTANTIATE_TEST_SUITE_P(KvTypes, MetalGoldenTest, ::testing::Values(KvType::kF16, KvType::kF32),
                         [](const ::testing::TestParamInfo<KvType>& info) {
                           return std::string(KvTypeName(info.param));
                         });

TEST(MetalQwen3Test, TeacherForcedLogitsWithin1e3OfTheCpu) {
  const std::string path = testing_qwen3::Write("metal_qwen3", 512);
  ASSERT_FALSE(path.empty());
  auto cpu_model = Model::Load(path, ModelOptions());
  ASSERT_TRUE(cpu_model.ok()) << cpu_model.status().ToString();
  const std::unique_ptr<Model> gpu_model = LoadOnMetal(path);
  ASSERT_NE(gpu_model, nullptr);
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
  float worst = 0.0f;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  EXPECT_LE(worst, 1e-3f);
}

// Greedy ids of `steps` tokens after `prompt`, one token per step.
std::vector<int32_t> Continue(Session* session, const std::vector<int32_t>& prompt, size_t steps) {
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

// Options whose budget allows exactly `tokens` positions on `model`'s
// backend (the smallest budget whose max_tokens() reaches them), sliding.
SessionOptions SlidingOptions(const Model* model, size_t tokens) {
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

TEST(MetalSlideTest, GreedyIdsThroughASlidingWindowMatchTheCpuBackend) {
  const Model* gpu = MetalStoriesModel();
  const Model* cpu = testing_stories::StoriesModel();
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(cpu, nullptr);
  const std::vector<int32_t> prompt = testing_stories::LoadGolden()[1].prompt_ids;
  std::vector<std::vector<int32_t>> ids;
  for (const Model* model : {cpu, gpu}) {
    // 128 positions: 300 tokens slide the window several times.
    Session session(model, SlidingOptions(model, 128));
    ASSERT_EQ(session.max_tokens(), 128u) << model->backend().name();
    ids.push_back(Continue(&session, prompt, 300));
    EXPECT_LE(session.position(), 128u);
  }
  ASSERT_EQ(ids[0].size(), 300u);
  EXPECT_EQ(ids[1], ids[0]);
}

TEST(MetalStateTest, SaveLoadContinueMatchesTheCpuBackend) {
  const Model* gpu = MetalStoriesModel();
  const Model* cpu = testing_stories::StoriesModel();
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(cpu, nullptr);
  const std::string path = std::string(POCKET_BINARY_DIR) + "/metal_state_test.state";
  SessionOptions options;
  options.kv_type = KvType::kF32;
  const std::vector<int32_t> prompt = testing_stories::LoadGolden()[2].prompt_ids;
  Session straight(cpu, options);
  const std::vector<int32_t> want = Continue(&straight, prompt, 60);
  const struct {
    const Model* from;
    const Model* to;
  } moves[] = {{gpu, gpu}, {gpu, cpu}, {cpu, gpu}};
  for (const auto& move : moves) {
    SCOPED_TRACE(std::string(move.from->backend().name()) + " -> " + move.to->backend().name());
    Session first(move.from, options);
    std::vector<int32_t> ids = Continue(&first, prompt, 25);
    ASSERT_TRUE(first.Save(path).ok());
    Session second(move.to, options);
    const Status s = second.Load(path);
    ASSERT_TRUE(s.ok()) << s.ToString();
    // The state holds the last token's input too: run it again for its
    // logits.
    second.Truncate(second.position() - 1);
    const std::vector<int32_t> rest = Continue(&second, {first.tokens().back()}, 35);
    ids.insert(ids.end(), rest.begin(), rest.end());
    EXPECT_EQ(ids, want);
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace pocket
