// Device discovery, program building and the no-device path.
#include <cstdlib>
#include <string>

#include "backends/opencl/device_info.h"
#include "backends/opencl/program.h"
#include "opencl/opencl_test_util.h"

namespace pocket::opencl {
namespace {

using testing::TestContext;

TEST(DeviceTest, ListsTheTestMachinesDevice) {
  auto devices = ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_FALSE(devices->empty());
  const std::string described = DescribeDevices();
  EXPECT_NE(described.find("opencl:0.0"), std::string::npos) << described;
  EXPECT_NE(described.find(devices->front().device_name), std::string::npos) << described;
}

TEST(DeviceTest, ContextBuildsTheEmbeddedKernels) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  const size_t wg = ctx->work_group();
  EXPECT_GT(wg, 0u);
  EXPECT_EQ(wg & (wg - 1), 0u) << "the tree reductions need a power of two";
  // Every op file made it into the library.
  const std::string source = EmbeddedProgramSource();
  for (const char* file : {"prelude.cl", "dequant.cl", "reduce.cl", "linear.cl", "attention.cl"}) {
    EXPECT_NE(source.find(file), std::string::npos) << file;
  }
}

TEST(DeviceTest, CompilerErrorsCarryTheBuildLog) {
  Context* ctx = TestContext();
  ASSERT_NE(ctx, nullptr);
  cl_int err = CL_SUCCESS;
  ContextHandle cl_ctx(clCreateContext(nullptr, 1, &ctx->device().device, nullptr, nullptr, &err));
  ASSERT_EQ(err, CL_SUCCESS);
  auto program = BuildProgram(cl_ctx.get(), ctx->device(),
                              "__kernel void broken(__global float* x) { x[0] = y; }", "");
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kUnsupported);
  // The compiler's complaint names the undeclared identifier.
  EXPECT_NE(program.status().message().find("'y'"), std::string::npos)
      << program.status().message();
  EXPECT_NE(program.status().message().find("backend=cpu"), std::string::npos);
}

TEST(DeviceTest, MissingDeviceIndexIsNotFound) {
  ContextOptions options;
  options.platform = 0;
  options.device = 999;
  auto ctx = Context::Create(options);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), StatusCode::kNotFound);
  EXPECT_NE(ctx.status().message().find("0.999"), std::string::npos) << ctx.status().message();
}

// Runs in a fresh process (threadsafe death tests re-execute the binary),
// where the ICD loader reads OCL_ICD_VENDORS on first use and so finds no
// platform at all: the machine-without-OpenCL case.
TEST(NoPlatformDeathTest, ClearErrorNotACrash) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("OCL_ICD_VENDORS", "/nonexistent-pocket-test-dir", 1);
        auto ctx = Context::Create();
        const bool ok = !ctx.ok() && ctx.status().code() == StatusCode::kNotFound &&
                        ctx.status().message().find("backend=cpu") != std::string::npos &&
                        DescribeDevices().find("no OpenCL platform") != std::string::npos;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace pocket::opencl
