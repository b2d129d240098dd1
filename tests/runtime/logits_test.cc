// Teacher-forced logits against the independent numpy reference, and the
// kLast shortcut against the full computation.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/session.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

struct Reference {
  std::vector<int32_t> input_ids;
  std::vector<std::vector<float>> logits;
};

Reference LoadReference() {
  Reference ref;
  auto j = ParseJson(testing_stories::ReadFile(
                         testing_stories::DataPath("stories260K/logits-once-upon-a-time.json")),
                     "logits json");
  EXPECT_TRUE(j.ok());
  if (!j.ok()) return ref;
  ref.input_ids = testing_stories::Ints(*j, "input_ids");
  const Json* rows = FindMember(*j, "logits");
  EXPECT_TRUE(rows != nullptr && rows->is_array());
  if (rows == nullptr || !rows->is_array()) return ref;
  for (const Json& row : *rows) {
    std::vector<float> r;
    for (const Json& v : row) r.push_back(v.is_number() ? v.get<float>() : NAN);
    ref.logits.push_back(r);
  }
  return ref;
}

TEST(LogitsTest, TeacherForcedMatchesReference) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const Reference ref = LoadReference();
  ASSERT_EQ(ref.logits.size(), 16u);
  const size_t vocab = static_cast<size_t>(model->config().vocab);
  SessionOptions options;
  options.kv_type = KvType::kF32;
  // A chunk smaller than the sequence also exercises the chunked prefill.
  options.prefill_chunk = 5;
  Session session(model, options);
  std::vector<int32_t> ids(ref.input_ids.begin(), ref.input_ids.begin() + 16);
  std::vector<float> logits;
  ASSERT_TRUE(session.Eval(ids, LogitsMode::kAll, &logits).ok());
  ASSERT_EQ(logits.size(), 16 * vocab);
  for (size_t p = 0; p < 16; ++p) {
    ASSERT_EQ(ref.logits[p].size(), vocab);
    for (size_t i = 0; i < vocab; ++i) {
      ASSERT_NEAR(logits[p * vocab + i], ref.logits[p][i], 1e-4) << "position " << p << " id " << i;
    }
  }
  EXPECT_EQ(session.position(), 16u);
}

TEST(LogitsTest, LastModeEqualsLastRowOfAll) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const Reference ref = LoadReference();
  ASSERT_GE(ref.input_ids.size(), 16u);
  std::vector<int32_t> ids(ref.input_ids.begin(), ref.input_ids.begin() + 16);
  const size_t vocab = static_cast<size_t>(model->config().vocab);
  SessionOptions options;
  options.kv_type = KvType::kF32;
  Session all(model, options), last(model, options);
  std::vector<float> la, ll;
  ASSERT_TRUE(all.Eval(ids, LogitsMode::kAll, &la).ok());
  ASSERT_TRUE(last.Eval(ids, LogitsMode::kLast, &ll).ok());
  ASSERT_EQ(ll.size(), vocab);
  for (size_t i = 0; i < vocab; ++i) {
    ASSERT_NEAR(ll[i], la[15 * vocab + i], 1e-5) << i;
    ASSERT_NEAR(ll[i], ref.logits[15][i], 1e-4) << i;
  }
}

}  // namespace
}  // namespace pocket
