// Metal backend: the shared GPU ops (backends/gpu/ops.h) over an Encoder.
// Each op encodes its dispatches; nothing runs until the host commits the
// command buffer. Weights are read in place from the mapped file (a
// DeviceWeight's offset is where the tensor starts in it); the KV cache is
// one pair of buffers per layer.
#pragma once

#include "backends/gpu/ops.h"
#include "backends/metal/encoder.h"
#include "backends/metal/launch.h"

namespace pocket::metal {

using Span = gpu::Span<Buffer>;
using DeviceWeight = gpu::DeviceWeight<Buffer>;
using DeviceKvView = gpu::DeviceKvView<Buffer>;

// The op functions, KvBufferBytes and KvScalesOffset, as metal::Linear etc.
using namespace gpu;

}  // namespace pocket::metal
