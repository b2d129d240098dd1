// OpenCL sessions keep a sliding window, save, load and move with their
// state as CPU sessions do: on stories260K with an f32 cache, greedy ids
// equal the CPU backend's when a budget forces the window to slide, after a
// save -> load -> continue, when a state saved on one backend is loaded on
// the other, and after Session::MoveTo cpu -> opencl -> cpu.
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

const Model* OpenClStoriesModel() { return gpu::testing::StoriesModelOn("opencl"); }

TEST(OpenClSlideTest, GreedyIdsUnderABudgetMatchTheCpuBackend) {
  const Model* gpu = OpenClStoriesModel();
  const Model* cpu = testing_stories::StoriesModel();
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(cpu, nullptr);
  // 128 positions of the 512-token context: 300 tokens slide the window
  // several times, each time re-encoding the kept K rows.
  constexpr size_t kLimit = 128;
  const std::vector<int32_t> prompt = testing_stories::LoadGolden()[1].prompt_ids;
  std::vector<std::vector<int32_t>> ids;
  for (const Model* model : {cpu, gpu}) {
    const SessionOptions options = SlidingOptions(model, kLimit);
    Session session(model, options);
    ASSERT_EQ(session.max_tokens(), kLimit) << model->backend().name();
    ids.push_back(GreedyIds(&session, prompt, 300));
    EXPECT_LE(session.position(), kLimit);
    // The device's KV buffers count against the budget and stay within it.
    const MemoryUsage m = session.memory();
    EXPECT_LE(m.total(), options.budget_bytes) << model->backend().name();
    EXPECT_GT(m.kv, 0u);
  }
  ASSERT_EQ(ids[0].size(), 300u);
  EXPECT_EQ(ids[1], ids[0]);
}

class OpenClStateTest : public ::testing::Test {
 protected:
  void TearDown() override { std::remove(path_.c_str()); }
  const std::string path_ = std::string(POCKET_BINARY_DIR) + "/opencl_state_test.state";
};

TEST_F(OpenClStateTest, SaveLoadContinueMatchesTheCpuBackend) {
  gpu::testing::ExpectSaveLoadContinues("opencl", path_);
}

// Session::MoveTo between the CPU and the device: moved cpu -> opencl ->
// cpu, a conversation goes on with the ids of one that never moved.
TEST(OpenClMoveTest, CpuToOpenClToCpuGoesOnWithTheSameIds) {
  const Model* gpu = OpenClStoriesModel();
  const Model* cpu = testing_stories::StoriesModel();
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(cpu, nullptr);
  SessionOptions options;
  options.kv_type = KvType::kF32;
  const std::vector<int32_t> prompt = testing_stories::LoadGolden()[0].prompt_ids;
  Session still(cpu, options);
  const std::vector<int32_t> want = GreedyIds(&still, prompt, 60);

  Session moving(cpu, options);
  std::vector<int32_t> ids = GreedyIds(&moving, prompt, 20);
  for (const Model* to : {gpu, cpu}) {
    const Status s = moving.MoveTo(to);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(&moving.model(), to);
    // The last greedy token's logits are not kept: run it again.
    const int32_t last = moving.tokens().back();
    moving.Truncate(moving.position() - 1);
    const std::vector<int32_t> more = GreedyIds(&moving, {last}, 20);
    ids.insert(ids.end(), more.begin(), more.end());
  }
  EXPECT_EQ(ids, want);
}

// The backends count different fixed bytes against a budget (the device
// its weights beside the mapped file's, the CPU the huge page the OS may
// commit past its KV pages): under a budget that lets the stricter one hold
// 64 tokens, a session of 100 tokens on the other cannot move to it. A bf16
// cache has no OpenCL form. Either move fails and the session stays.
TEST(OpenClMoveTest, AMoveThatDoesNotFitLeavesTheSessionWhereItWas) {
  const Model* gpu = OpenClStoriesModel();
  const Model* cpu = testing_stories::StoriesModel();
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(cpu, nullptr);
  SessionOptions options = SlidingOptions(cpu, 64);
  const Model* from = Session(gpu, options).max_tokens() > 64 ? gpu : cpu;
  const Model* to = from == gpu ? cpu : gpu;
  options = SlidingOptions(to, 64);
  options.kv_policy = KvPolicy::kError;
  ASSERT_GE(Session(from, options).max_tokens(), 100u);
  Session session(from, options);
  const std::vector<int32_t> prompt = testing_stories::LoadGolden()[1].prompt_ids;
  std::vector<int32_t> ids;
  while (ids.size() < 100) ids.push_back(prompt[ids.size() % prompt.size()]);
  std::vector<float> before, after;
  // The last token alone, as it runs again below.
  ASSERT_TRUE(session.Eval({ids.begin(), ids.end() - 1}, LogitsMode::kLast, nullptr).ok());
  ASSERT_TRUE(session.Eval({ids.back()}, LogitsMode::kLast, &before).ok());
  Status s = session.MoveTo(to);
  EXPECT_EQ(s.code(), StatusCode::kBudgetExceeded) << s.ToString();
  EXPECT_NE(s.message().find("holds 100 tokens"), std::string::npos) << s.message();

  SessionOptions bf16_options;
  bf16_options.kv_type = KvType::kBf16;
  Session bf16(cpu, bf16_options);
  ASSERT_TRUE(bf16.Eval(prompt, LogitsMode::kLast, nullptr).ok());
  s = bf16.MoveTo(gpu);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(&bf16.model(), cpu);

  EXPECT_EQ(&session.model(), from);
  ASSERT_EQ(session.tokens(), ids);
  session.Truncate(99);
  ASSERT_TRUE(session.Eval({ids.back()}, LogitsMode::kLast, &after).ok());
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace pocket
