// Acceptance of the Metal backend on a Mac (label metal): the whole decoder
// on the GPU gives what the CPU backend gives. Greedy ids on stories260K
// equal the CPU's and llama2.c's with f16 and f32 caches; on a tiny Qwen3
// with an f32 cache, teacher-forced logits are within 1e-3 of the CPU's;
// with a budget that makes the window slide, greedy ids equal the CPU's;
// a state saved and loaded (metal -> metal, metal -> cpu, cpu -> metal)
// goes on with the ids of a CPU session that never stopped.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu/model_test_util.h"
#include "runtime/session.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

using gpu::testing::GreedyIds;
using gpu::testing::SlidingOptions;

const Model* MetalStoriesModel() { return gpu::testing::StoriesModelOn("metal"); }

class MetalGoldenTest : public ::testing::TestWithParam<KvType> {};

TEST_P(MetalGoldenTest, GreedyIdsMatchTheCpuBackend) {
  gpu::testing::ExpectGoldenGreedyIds("metal", GetParam());
}

INSTANTIATE_TEST_SUITE_P(KvTypes, MetalGoldenTest, ::testing::Values(KvType::kF16, KvType::kF32),
                         [](const ::testing::TestParamInfo<KvType>& info) {
                           return std::string(KvTypeName(info.param));
                         });

TEST(MetalQwen3Test, TeacherForcedLogitsWithin1e3OfTheCpu) {
  gpu::testing::ExpectQwen3LogitsNearTheCpu("metal", "metal_qwen3");
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
    ids.push_back(GreedyIds(&session, prompt, 300));
    EXPECT_LE(session.position(), 128u);
  }
  ASSERT_EQ(ids[0].size(), 300u);
  EXPECT_EQ(ids[1], ids[0]);
}

TEST(MetalStateTest, SaveLoadContinueMatchesTheCpuBackend) {
  const std::string path = std::string(POCKET_BINARY_DIR) + "/metal_state_test.state";
  gpu::testing::ExpectSaveLoadContinues("metal", path);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace pocket
