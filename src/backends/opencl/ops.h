// OpenCL backend: the shared GPU ops (backends/gpu/ops.h) over a Context.
// Weights are uploaded once (weights.h); the KV cache lives on the device
// (kv_cache.h). Ops are enqueued in order and return before they finish;
// errors are argument checks and enqueue failures.
#pragma once

#include "backends/gpu/ops.h"
#include "backends/opencl/context.h"
#include "backends/opencl/launch.h"

namespace pocket::opencl {

using Span = gpu::Span<Buffer>;
using DeviceWeight = gpu::DeviceWeight<Buffer>;
using DeviceKvView = gpu::DeviceKvView<Buffer>;

// The op functions, KvBufferBytes and KvScalesOffset, as opencl::Linear etc.
using namespace gpu;

}  // namespace pocket::opencl
