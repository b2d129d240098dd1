// ModelOptions' CPU kernel tuning reaches the kernels' dispatch at Load
// (process-wide, as kernel_target.h says), and a target this CPU does not
// run fails the load naming the choices. Each test puts the process's
// setting back.
#include <string>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_target.h"
#include "runtime/model.h"
#include "stories_fixture.h"

namespace pocket {
namespace {

TEST(ModelOptionsTest, CpuTargetHoldsTheKernels) {
  const std::vector<std::string> targets = cpu::KernelTargets();
  ASSERT_FALSE(targets.empty());
  ModelOptions options;
  options.cpu_target = targets.back();
  auto model = Model::Load(testing_stories::StoriesPath(), options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(std::string(cpu::KernelTargetName()), targets.back());
  cpu::LiftKernelTargetRestriction();
  EXPECT_EQ(std::string(cpu::KernelTargetName()), targets.front());
}

TEST(ModelOptionsTest, UnknownCpuTargetFailsNamingTheChoices) {
  ModelOptions options;
  options.cpu_target = "avx9";
  auto model = Model::Load(testing_stories::StoriesPath(), options);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(), "cpu_target='avx9' is not available here; choose one of: " +
                                          cpu::KernelTargetList(", "));
}

TEST(ModelOptionsTest, MatrixExtensionAndReadAheadAreSetAtLoad) {
  ModelOptions options;
  options.matrix_extension = false;
  options.decode_read_ahead = 128;
  ASSERT_TRUE(Model::Load(testing_stories::StoriesPath(), options).ok());
  EXPECT_FALSE(cpu::MatrixExtensionChosen());
  EXPECT_EQ(cpu::DecodeReadAhead(), 128u);
  // Unset, they keep what the process has.
  ASSERT_TRUE(Model::Load(testing_stories::StoriesPath(), ModelOptions()).ok());
  EXPECT_FALSE(cpu::MatrixExtensionChosen());
  EXPECT_EQ(cpu::DecodeReadAhead(), 128u);
  cpu::AllowMatrixExtension(true);
  cpu::SetDecodeReadAhead(~size_t{0});
  EXPECT_EQ(cpu::DecodeReadAhead(), cpu::DefaultDecodeReadAhead());
}

}  // namespace
}  // namespace pocket
