// The GPU backends' KV cache layout: positions [0, capacity) contiguous,
// position p's row (row_stride values, all kv heads) at element
// p * row_stride. q8 buffers hold the int8 codes of all positions, then one
// f16 scale per (position, head of head_dim values), the CPU's q8 encoding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/backend.h"
#include "graph/kv_type.h"

namespace pocket::gpu {

// The KV types the GPU kernels store (BackendCapabilities::kv_types).
constexpr uint32_t kKvTypes =
    KvTypeBit(KvType::kF32) | KvTypeBit(KvType::kF16) | KvTypeBit(KvType::kQ8);

// Bytes of one K (or V) buffer holding `tokens` positions; 0 for a type
// outside kKvTypes.
inline size_t KvBufferBytes(KvType type, size_t tokens, size_t row_stride, size_t head_dim) {
  switch (type) {
    case KvType::kF32:
      return tokens * row_stride * 4;
    case KvType::kF16:
      return tokens * row_stride * 2;
    case KvType::kQ8:
      return tokens * row_stride + tokens * (row_stride / head_dim) * 2;
    case KvType::kBf16:
      break;
  }
  return 0;
}

// Byte offset of the q8 scales in a buffer of `tokens` positions.
inline size_t KvScalesOffset(KvType type, size_t tokens, size_t row_stride) {
  return type == KvType::kQ8 ? tokens * row_stride : 0;
}

}  // namespace pocket::gpu
