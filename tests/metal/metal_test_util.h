// Shared helpers of the Metal op tests: the encoder they run the ops with
// (here the shim's CPU harness; on a Mac, with POCKET_METAL_DEVICE_TESTS,
// the GPU), weights placed inside a larger buffer as the host places them
// (offsets into the mapped file), and the OpenCL op tests' tolerance check. Random data and
// weight encoding come from the CPU backend's test helpers, so every
// backend is tested on identically built inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/metal/ops.h"
#include "backends/ops_test_util.h"
#if POCKET_METAL_DEVICE_TESTS
#include "metal/device/device_test_encoder.h"
#else
#include "metal/harness/shim_encoder.h"
#endif

namespace pocket::metal::testing {

using cpu::testing::RandomFloats;
using cpu::testing::RandomWeight;
using cpu::testing::TestWeight;
#if POCKET_METAL_DEVICE_TESTS
using TestEncoder = device::DeviceTestEncoder;
#else
using TestEncoder = harness::ShimEncoder;
#endif

// The weight's bytes `offset` bytes into a buffer, as a tensor sits in the
// mapped file the host wraps without a copy.
inline DeviceWeight PlaceWeight(TestEncoder* enc, const TestWeight& w, size_t offset) {
  Buffer* buffer = enc->NewBuffer(offset + w.bytes.size());
  std::memset(buffer->contents, 0xEE, offset);
  std::memcpy(buffer->contents + offset, w.bytes.data(), w.bytes.size());
  DeviceWeight d;
  d.buffer = buffer;
  d.offset = offset;
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

}  // namespace pocket::metal::testing
