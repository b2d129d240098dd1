// A Metal KV cache's positions to and from the serialized rows session
// states hold (graph/kv_type.h, backend.h's KvStateRowBytes): layer by
// layer (layers with no KV skipped), K rows of positions [0, n_tokens),
// then V rows, each the row's values then (q8) its f16 scales. The cache's
// buffers are shared storage, so these are CPU copies; the GPU must be idle.
// Plain C++, tested through the shim's buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "backends/metal/ops.h"
#include "util/status.h"

namespace pocket::metal {

using RowSink = std::function<void(const uint8_t* data, size_t size)>;

// Bytes n_tokens positions take serialized.
size_t KvRowsBytes(const std::vector<DeviceKvView>& layers, size_t n_tokens);
// Hands positions [0, n_tokens) to `sink`, one row at a time.
Status ExportKvRows(const std::vector<DeviceKvView>& layers, size_t n_tokens, const RowSink& sink);
// CorruptFile, naming the layer and position, unless `size` is
// KvRowsBytes and every f32/f16 value and q8 scale is finite.
Status ValidateKvRows(const std::vector<DeviceKvView>& layers, size_t n_tokens, const uint8_t* data,
                      size_t size);
// Writes validated rows into positions [0, n_tokens).
Status ImportKvRows(const std::vector<DeviceKvView>& layers, size_t n_tokens, const uint8_t* data);

}  // namespace pocket::metal
