// Shared helpers of the OpenCL backend tests: one Context for the whole
// test binary (building the kernels takes a while on PoCL) and host<->device
// copies. Random data and weight encoding come from the CPU backend's test
// helpers, so both backends are tested on identically built inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

#include "backends/opencl/context.h"
#include "backends/opencl/ops.h"
#include "backends/ops_test_util.h"

namespace pocket::opencl::testing {

using cpu::testing::RandomFloats;
using cpu::testing::RandomWeight;
using cpu::testing::TestWeight;

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
  DeviceWeight d;
  d.buffer = storage;
  d.dtype = w.view.dtype;
  d.group = w.view.group;
  d.rows = w.view.rows;
  d.cols = w.view.cols;
  return d;
}

// |got - want| <= abs_tol + rel_tol * |want| for every element.
inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                        float abs_tol, float rel_tol) {
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float tol = abs_tol + rel_tol * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tol) && bad++ < 5) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i]
                    << " (tolerance " << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << "elements outside the tolerance";
}

}  // namespace pocket::opencl::testing
