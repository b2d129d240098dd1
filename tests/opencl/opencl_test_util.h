// Shared helpers of the OpenCL backend tests: one Context for the whole
// test binary (building the kernels takes a while on PoCL) and host<->device
// copies. Random data and weight encoding come from the CPU backend's test
// helpers, so both backends are tested on identically built inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "backends/opencl/context.h"
#include "backends/opencl/ops.h"
#include "backends/ops_test_util.h"
#include "gpu/gpu_test_util.h"

namespace pocket::opencl::testing {

using cpu::testing::RandomFloats;
using cpu::testing::RandomWeight;
using cpu::testing::TestWeight;
using gpu::testing::ExpectClose;

// The test machine must have an OpenCL device (PoCL at least): a missing
// one fails the tests rather than skipping them.
inline Context* TestContext() {
  static Context* ctx = [] {
    auto created = Context::Create();
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? std::move(created).value().release() : nullptr;
  }();
  return ctx;
}

inline Buffer Upload(Context* ctx, const void* data, size_t bytes) {
  auto buffer = ctx->NewBuffer(bytes);
  EXPECT_TRUE(buffer.ok()) << buffer.status().ToString();
  if (!buffer.ok()) return Buffer();
  const Status s = ctx->Write(*buffer, 0, data, bytes);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::move(buffer).value();
}

inline Buffer UploadFloats(Context* ctx, const std::vector<float>& v) {
  return Upload(ctx, v.data(), v.size() * sizeof(float));
}

inline std::vector<float> DownloadFloats(Context* ctx, const Buffer& b, size_t offset,
                                         size_t count) {
  std::vector<float> v(count);
  const Status s = ctx->Read(b, offset * sizeof(float), v.data(), count * sizeof(float));
  EXPECT_TRUE(s.ok()) << s.ToString();
  return v;
}

inline DeviceWeight UploadWeight(Context* ctx, const TestWeight& w, Buffer* storage) {
  *storage = Upload(ctx, w.bytes.data(), w.bytes.size());
  return gpu::testing::WeightAt(w, storage, 0);
}

}  // namespace pocket::opencl::testing
