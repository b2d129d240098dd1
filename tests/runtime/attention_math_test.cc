// Which maths a model's attention uses: bf16 products with the int8 maths on
// a model with q4/q8 Linears, f32 with the f32 maths or plain weights.
#include <gtest/gtest.h>

#include "backends/cpu/ops.h"

#include "tests/runtime/qwen3_fixture.h"

namespace pocket {
namespace {

cpu::AttentionMath AttentionMathOf(const std::string& path, QuantMath math) {
  ModelOptions options;
  options.quant_math = math;
  auto model = Model::Load(path, options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? (*model)->attention_math() : cpu::AttentionMath::kF32;
}

TEST(AttentionMathTest, Bf16OnlyWithInt8MathsOnQuantizedWeights) {
  const std::string q4 = testing_qwen3::Write("attention_math_q4", 256, DType::kQ4);
  const std::string f32 = testing_qwen3::Write("attention_math_f32", 256, DType::kF32);
  ASSERT_FALSE(q4.empty());
  ASSERT_FALSE(f32.empty());
  EXPECT_EQ(AttentionMathOf(q4, QuantMath::kInt8), cpu::AttentionMath::kBf16);
  EXPECT_EQ(AttentionMathOf(q4, QuantMath::kF32), cpu::AttentionMath::kF32);
  EXPECT_EQ(AttentionMathOf(f32, QuantMath::kInt8), cpu::AttentionMath::kF32);
}

}  // namespace
}  // namespace pocket
