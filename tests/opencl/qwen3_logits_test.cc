// The numeric acceptance for OpenCL: on a tiny Qwen3 (q/k head
// norms, NeoX RoPE, GQA; f32 weights and f32 KV cache), teacher-forced
// logits over 64 tokens are within 1e-3 of the CPU backend's.
#include <gtest/gtest.h>

#include "gpu/model_test_util.h"

namespace pocket {
namespace {

TEST(OpenClQwen3Test, TeacherForcedLogitsWithin1e3OfTheCpu) {
  gpu::testing::ExpectQwen3LogitsNearTheCpu("opencl", "opencl_qwen3");
}

}  // namespace
}  // namespace pocket
