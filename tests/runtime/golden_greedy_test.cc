// Acceptance: greedy generation on stories260K reproduces llama2.c run.c
// exactly (ids and stdout), with the KV cache in f16 and in f32.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/generate.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

using testing_stories::GoldenRun;
using testing_stories::GreedyFor;

class GoldenGreedyTest : public ::testing::TestWithParam<KvType> {};

TEST_P(GoldenGreedyTest, ReproducesRunC) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.kv_type = GetParam();
  for (const GoldenRun& run : testing_stories::LoadGolden()) {
    SCOPED_TRACE("prompt '" + run.prompt + "'");
    Session session(model, options);
    std::string streamed;
    GenerateResult result;
    Status s = Generate(
        &session, run.prompt, GreedyFor(run),
        [&](std::string_view piece, int32_t) {
          streamed.append(piece);
          return true;
        },
        &result);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(result.prompt_ids, run.prompt_ids);
    std::vector<int32_t> all = result.prompt_ids;
    all.insert(all.end(), result.ids.begin(), result.ids.end());
    EXPECT_EQ(all, run.ids);
    EXPECT_EQ(result.stop, run.stopped_on_bos ? "eos" : "length");
    EXPECT_EQ(streamed, result.text);
    // run.c prints the prompt's pieces (the first without its leading
    // space), then each generated piece, then "\n".
    EXPECT_EQ(run.prompt + result.text + "\n", run.stdout_text);
    EXPECT_EQ(result.prefill_tokens, static_cast<int>(run.prompt_ids.size()));
    EXPECT_EQ(result.decode_tokens, static_cast<int>(result.ids.size()) - 1);
  }
}

INSTANTIATE_TEST_SUITE_P(KvTypes, GoldenGreedyTest,
                         ::testing::Values(KvType::kF16, KvType::kF32,
                                           KvType::kBf16),
                         [](const ::testing::TestParamInfo<KvType>& info) {
                           return std::string(KvTypeName(info.param));
                         });

}  // namespace
}  // namespace pocket
