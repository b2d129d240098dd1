// ModelOptions::huge_pages: the weights copied out of the file mapping into
// a huge-page buffer compute exactly what the mapped weights compute (the
// run.c golden runs, and bit-equal logits of a q4 model with the int8
// maths), the plan no longer reads the mapping, and the memory report
// counts the copy.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/generate.h"
#include "runtime/session.h"
#include "tests/runtime/qwen3_fixture.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

std::unique_ptr<Model> Load(const std::string& path, bool huge_pages) {
  ModelOptions options;
  options.huge_pages = huge_pages;
  auto model = Model::Load(path, options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

// Whether any step reads weights, norms or biases inside the file mapping.
bool ReadsMapping(const Model& model) {
  const uint8_t* begin = model.file().bytes();
  const uint8_t* end = begin + model.file().size();
  const auto inside = [&](const void* p) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    return b != nullptr && b >= begin && b < end;
  };
  for (const PlanStep& s : model.plan().steps) {
    if (inside(s.weight.data) || inside(s.norm) || inside(s.bias)) return true;
  }
  return false;
}

TEST(HugePagesTest, GoldenGreedyRunsFromTheCopy) {
  std::unique_ptr<Model> model = Load(testing_stories::StoriesPath(), true);
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(model->weights_in_huge_pages());
  EXPECT_FALSE(ReadsMapping(*model));
  for (const testing_stories::GoldenRun& run : testing_stories::LoadGolden()) {
    SCOPED_TRACE("prompt '" + run.prompt + "'");
    Session session(model.get(), SessionOptions());
    GenerateResult result;
    ASSERT_TRUE(
        Generate(&session, run.prompt, testing_stories::GreedyFor(run), nullptr, &result).ok());
    std::vector<int32_t> all = result.prompt_ids;
    all.insert(all.end(), result.ids.begin(), result.ids.end());
    EXPECT_EQ(all, run.ids);
  }
}

TEST(HugePagesTest, Q4LogitsEqualTheMappedWeightsBitForBit) {
  const std::string path = testing_qwen3::Write("huge_pages_q4", 256, DType::kQ4);
  ASSERT_FALSE(path.empty());
  std::unique_ptr<Model> mapped = Load(path, false);
  std::unique_ptr<Model> copied = Load(path, true);
  ASSERT_NE(mapped, nullptr);
  ASSERT_NE(copied, nullptr);
  EXPECT_FALSE(mapped->weights_in_huge_pages());
  EXPECT_TRUE(ReadsMapping(*mapped));
  EXPECT_FALSE(ReadsMapping(*copied));
  const std::vector<int32_t> ids = {1, 17, 300, 1000, 9, 77, 123, 5};
  std::vector<float> a, b;
  Session sa(mapped.get(), SessionOptions()), sb(copied.get(), SessionOptions());
  const Status ea = sa.Eval(ids, LogitsMode::kAll, &a);
  ASSERT_TRUE(ea.ok()) << ea.ToString();
  const Status eb = sb.Eval(ids, LogitsMode::kAll, &b);
  ASSERT_TRUE(eb.ok()) << eb.ToString();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a, b);
  // The budget counts the same weights, and the copy's rounding up to whole
  // 2 MiB pages with the model; all of the copy is resident.
  const MemoryUsage ma = sa.memory(), mb = sb.memory();
  EXPECT_EQ(ma.weights, mb.weights);
  EXPECT_GE(mb.model, ma.model);
  EXPECT_LE(mb.weights + mb.model, ma.weights + ma.model + HugePageBuffer::kPageBytes);
  EXPECT_GE(mb.weights_resident, mb.weights);
}

}  // namespace
}  // namespace pocket
