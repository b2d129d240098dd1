// Acceptance for GGUF import: stories260K written as a GGUF the way
// llama.cpp writes it and converted by `pocket convert` reproduces run.c's
// greedy ids: as `llama` (q/k rows in llama.cpp's interleaved order, rotated
// as pairs) and as `qwen2` (rotate-half order, zero biases), both with the
// tok512 vocabulary as `llama` tokenizer metadata.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/converter.h"
#include "convert/gguf_stories.h"
#include "runtime/generate.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

using testing_gguf::StoriesArch;
using testing_stories::GoldenRun;
using testing_stories::GreedyFor;

std::unique_ptr<Model> ConvertAndLoad(StoriesArch arch, uint32_t matrix_type) {
  const std::string dir = testing::MakeTempDir("gguf_greedy");
  testing_util::WriteFile(dir + "/stories.gguf", testing_gguf::StoriesGguf(arch, matrix_type));
  ConvertOptions options;
  options.quant.keep_source_types = true;
  auto stats = ConvertModel(dir + "/stories.gguf", dir + "/stories.pocket", options);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return nullptr;
  auto model = Model::Load(dir + "/stories.pocket", ModelOptions());
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

std::vector<int32_t> Greedy(const Model* model, const GoldenRun& run) {
  Session session(model, SessionOptions());
  GenerateResult result;
  const Status s = Generate(
      &session, run.prompt, GreedyFor(run), [](std::string_view, int32_t) { return true; },
      &result);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(result.prompt_ids, run.prompt_ids);
  std::vector<int32_t> all = result.prompt_ids;
  all.insert(all.end(), result.ids.begin(), result.ids.end());
  return all;
}

class GgufGreedyTest : public ::testing::TestWithParam<StoriesArch> {};

TEST_P(GgufGreedyTest, ReproducesRunC) {
  const std::unique_ptr<Model> model = ConvertAndLoad(GetParam(), testing_gguf::kGgmlF32);
  ASSERT_NE(model, nullptr);
  for (const GoldenRun& run : testing_stories::LoadGolden()) {
    SCOPED_TRACE("prompt '" + run.prompt + "'");
    EXPECT_EQ(Greedy(model.get(), run), run.ids);
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, GgufGreedyTest,
                         ::testing::Values(StoriesArch::kLlama, StoriesArch::kQwen2),
                         [](const ::testing::TestParamInfo<StoriesArch>& info) {
                           return std::string(info.param == StoriesArch::kLlama ? "llama"
                                                                                : "qwen2");
                         });

}  // namespace
}  // namespace pocket
