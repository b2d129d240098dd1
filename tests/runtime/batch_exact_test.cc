// A step over a few tokens (speculation's verify step) gives each token the
// logits single steps give it, bit for bit, on the default q4/q8 path with
// int8 maths, for every KV type, with attention split across threads
// (segments) and not, so greedy speculation equals plain decoding exactly.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/model.h"
#include "runtime/session.h"

#include "tests/runtime/qwen3_fixture.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

std::vector<int32_t> Tokens(size_t n, uint32_t seed, int32_t vocab) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    ids[i] = static_cast<int32_t>((seed >> 8) % static_cast<uint32_t>(vocab));
  }
  return ids;
}

// After `prompt` tokens, steps of each size in `batches` against the same
// tokens one at a time (both sessions truncated back after each).
void ExpectBatchesEqualSingleSteps(const Model* model, const SessionOptions& options, size_t prompt,
                                   const std::vector<size_t>& batches) {
  const int32_t vocab = model->config().vocab;
  const std::vector<int32_t> context = Tokens(prompt, 7 + prompt, vocab);
  Session single(model, options), batched(model, options);
  std::vector<float> logits, all;
  ASSERT_TRUE(single.Eval(context, LogitsMode::kLast, &logits).ok());
  ASSERT_TRUE(batched.Eval(context, LogitsMode::kLast, &logits).ok());
  for (size_t batch : batches) {
    const std::vector<int32_t> guesses = Tokens(batch, 11 + batch, vocab);
    const Status s = batched.Eval(guesses, LogitsMode::kAll, &all);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(all.size(), batch * vocab);
    for (size_t t = 0; t < batch; ++t) {
      ASSERT_TRUE(single.Eval({guesses[t]}, LogitsMode::kLast, &logits).ok());
      ASSERT_EQ(0, std::memcmp(logits.data(), all.data() + t * vocab, vocab * sizeof(float)))
          << "token " << t << " of " << batch << " after " << prompt << ", kv "
          << KvTypeName(options.kv_type);
    }
    single.Truncate(prompt);
    batched.Truncate(prompt);
  }
}

TEST(BatchExactTest, EachTokenOfAStepGetsTheLogitsOfItsSingleStep) {
  for (DType weights : {DType::kQ4, DType::kQ8}) {
    const std::string path = testing_qwen3::Write(
        std::string("batch_exact_") + (weights == DType::kQ4 ? "q4" : "q8"), 4096, weights);
    ASSERT_FALSE(path.empty());
    // The fixture has one kv head: on 2 threads a head's positions are
    // split across them (segments) from 512 positions on.
    for (int threads : {1, 2}) {
      ModelOptions model_options;  // int8 maths: the default for q4/q8
      model_options.threads = threads;
      auto model = Model::Load(path, model_options);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      for (KvType kv : {KvType::kBf16, KvType::kF16, KvType::kQ8, KvType::kF32}) {
        SessionOptions options;
        options.kv_type = kv;
        options.budget_bytes = 0;
        SCOPED_TRACE(::testing::Message() << DTypeName(weights) << ", " << threads << " threads");
        for (size_t prompt : {5, 600}) {
          ExpectBatchesEqualSingleSteps(model->get(), options, prompt, {2, 5, 8, 16});
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// f32 weights (stories260K: Llama, eight heads over four KV heads).
TEST(BatchExactTest, F32WeightsGiveEachTokenItsSingleStep) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  for (KvType kv : {KvType::kBf16, KvType::kF16, KvType::kQ8, KvType::kF32}) {
    SessionOptions options;
    options.kv_type = kv;
    for (size_t prompt : {5, 300}) {
      ExpectBatchesEqualSingleSteps(model, options, prompt, {2, 5, 8, 16});
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace pocket
