// The numeric acceptance for OpenCL: on a tiny Qwen3 (q/k head
// norms, NeoX RoPE, GQA; f32 weights and f32 KV cache), teacher-forced
// logits over 64 tokens are within 1e-3 of the CPU backend's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/session.h"
#include "tests/runtime/qwen3_fixture.h"

namespace pocket {
namespace {

TEST(OpenClQwen3Test, TeacherForcedLogitsWithin1e3OfTheCpu) {
  const std::string path = testing_qwen3::Write("opencl_qwen3", 512);
  ASSERT_FALSE(path.empty());
  auto cpu_model = Model::Load(path, ModelOptions());
  ModelOptions gpu_options;
  gpu_options.backend = "opencl";
  auto gpu_model = Model::Load(path, gpu_options);
  ASSERT_TRUE(cpu_model.ok()) << cpu_model.status().ToString();
  ASSERT_TRUE(gpu_model.ok()) << gpu_model.status().ToString();

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
  Session gpu(gpu_model->get(), options);
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

}  // namespace
}  // namespace pocket
