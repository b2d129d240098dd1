// Shared helpers of the Metal op tests: the encoder they run the ops with
// (here the shim's CPU harness; on a Mac, with POCKET_METAL_DEVICE_TESTS,
// the GPU), weights placed inside a larger buffer as the host places them
// (offsets into the mapped file); the checks every GPU backend's tests
// share are tests/gpu/gpu_test_util.h.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backends/metal/ops.h"
#include "backends/ops_test_util.h"
#include "gpu/gpu_test_util.h"
#if POCKET_METAL_DEVICE_TESTS
#include "metal/device/device_test_encoder.h"
#else
#include "metal/harness/shim_encoder.h"
#endif

namespace pocket::metal::testing {

using cpu::testing::RandomFloats;
using cpu::testing::RandomWeight;
using cpu::testing::TestWeight;
using gpu::testing::ExpectClose;
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
  return gpu::testing::WeightAt(w, static_cast<const Buffer*>(buffer), offset);
}

}  // namespace pocket::metal::testing
