// Session::MoveTo: a conversation moved between backends keeps its
// context. stories260K at f32 with an f32 cache and f32 maths computes the
// same numbers on the cpu and reference backends, so a session moved
// cpu -> reference -> cpu goes on with the ids of one that never moved; a
// move that cannot be made leaves the session where it was.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/generate.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

std::unique_ptr<Model> LoadStories(const std::string& backend) {
  ModelOptions options;
  options.backend = backend;
  options.quant_math = QuantMath::kF32;
  auto model = Model::Load(testing_stories::StoriesPath(), options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

int32_t Greedy(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Runs `input`, then `steps` greedy tokens one at a time; returns those.
std::vector<int32_t> GreedyIds(Session* session, const std::vector<int32_t>& input, size_t steps) {
  std::vector<float> logits;
  std::vector<int32_t> ids;
  Status s = session->Eval(input, LogitsMode::kLast, &logits);
  for (size_t i = 0; i < steps && s.ok(); ++i) {
    ids.push_back(Greedy(logits));
    s = session->Eval({ids.back()}, LogitsMode::kLast, &logits);
  }
  EXPECT_TRUE(s.ok()) << s.ToString();
  return ids;
}

SessionOptions F32Options() {
  SessionOptions options;
  options.kv_type = KvType::kF32;
  return options;
}

TEST(SessionMoveTest, CpuToReferenceToCpuGoesOnWithTheSameIds) {
  const std::unique_ptr<Model> cpu = LoadStories("cpu");
  const std::unique_ptr<Model> reference = LoadStories("reference");
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(reference, nullptr);
  const std::vector<int32_t> prompt = testing_stories::LoadGolden()[1].prompt_ids;
  Session still(cpu.get(), F32Options());
  const std::vector<int32_t> want = GreedyIds(&still, prompt, 60);

  Session moving(cpu.get(), F32Options());
  std::vector<int32_t> ids = GreedyIds(&moving, prompt, 20);
  moving.continuation()->chat_text = "kept";
  const std::vector<int32_t> held = moving.tokens();
  for (const Model* to : {reference.get(), cpu.get()}) {
    SCOPED_TRACE(std::string("to ") + to->backend().name());
    const Status s = moving.MoveTo(to);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(&moving.model(), to);
    EXPECT_EQ(moving.tokens(), held);
    EXPECT_EQ(moving.continuation()->chat_text, "kept");
    EXPECT_EQ(moving.backend_session().kv_bytes(),
              moving.backend_session().KvBytesFor(held.size()));
  }
  // The last greedy token's logits were not kept: run it again.
  moving.Truncate(moving.position() - 1);
  const std::vector<int32_t> rest = GreedyIds(&moving, {held.back()}, 40);
  ids.insert(ids.end(), rest.begin(), rest.end());
  EXPECT_EQ(ids, want);
}

TEST(SessionMoveTest, AFailedMoveLeavesTheSessionAsItWas) {
  const std::unique_ptr<Model> cpu = LoadStories("cpu");
  ASSERT_NE(cpu, nullptr);
  Session session(cpu.get(), F32Options());
  const std::vector<int32_t> prompt = testing_stories::LoadGolden()[1].prompt_ids;
  std::vector<float> before, after;
  // The last token alone, as it runs again below.
  ASSERT_TRUE(session.Eval({prompt.begin(), prompt.end() - 1}, LogitsMode::kLast, nullptr).ok());
  ASSERT_TRUE(session.Eval({prompt.back()}, LogitsMode::kLast, &before).ok());
  const std::vector<int32_t> held = session.tokens();

  Status s = session.MoveTo(nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("no target model"), std::string::npos) << s.message();

  // Another model file: the rows would mean nothing there.
  auto other = Model::Load(testing_stories::NanWeightStoriesPath(), ModelOptions());
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  s = session.MoveTo(other->get());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("same model file"), std::string::npos) << s.message();

  EXPECT_EQ(&session.model(), cpu.get());
  EXPECT_EQ(session.tokens(), held);
  // The cache is untouched: the last token gives the same logits again.
  session.Truncate(session.position() - 1);
  ASSERT_TRUE(session.Eval({held.back()}, LogitsMode::kLast, &after).ok());
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace pocket
