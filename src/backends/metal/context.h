// One Metal device ready to run Pocket's ops: the device, a command queue,
// the library compiled from the embedded source (library_source.h) and one
// compute pipeline per kernel (pipelines.h). Objective-C++: included by the
// backend's .mm files only.
#pragma once

#import <Metal/Metal.h>

#include <array>
#include <memory>
#include <string>

#include "backends/metal/pipelines.h"
#include "util/status.h"

namespace pocket::metal {

// Threads per threadgroup of the reducing kernels (POCKET_WG): two
// SIMD-groups of 32 on every Apple GPU.
constexpr size_t kThreadsPerGroup = 64;

class Context {
 public:
  // NotFound without a Metal device; Unsupported when the Metal compiler
  // rejects the kernels (with its log).
  static StatusOr<std::unique_ptr<Context>> Create();

  id<MTLDevice> device() const { return device_; }
  id<MTLCommandQueue> queue() const { return queue_; }
  id<MTLComputePipelineState> pipeline(Pipeline p) const {
    return pipelines_[static_cast<size_t>(p)];
  }
  // Threads per SIMD-group (the pipelines' threadExecutionWidth).
  size_t simd_width() const { return simd_width_; }

  // A shared-storage buffer of `bytes` (zero-filled by Metal);
  // BudgetExceeded when the device will not give it.
  StatusOr<id<MTLBuffer>> NewBuffer(size_t bytes) const;

 private:
  Context() = default;

  id<MTLDevice> device_ = nil;
  id<MTLCommandQueue> queue_ = nil;
  id<MTLLibrary> library_ = nil;
  std::array<id<MTLComputePipelineState>, gpu::kNumKernels> pipelines_;
  size_t simd_width_ = 32;
};

// `pocket inspect --devices` lines: the default Metal device's name,
// recommended working set, unified memory and SIMD width.
std::string DescribeDevices();

}  // namespace pocket::metal
