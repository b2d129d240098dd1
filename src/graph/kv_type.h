// The KV cache's vocabulary shared by every backend: the element types a
// cache stores, the rotary embedding cached K rows carry, and the size of a
// row in the serialized form session states use (whatever the backend's
// in-memory layout, a state's rows are this layout, so a state saved on one
// backend loads on another).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/model_config.h"

namespace pocket {

// K/V element types. q8 rows are codes with one f16 scale per kv head, the
// head's values rotated into the Walsh-Hadamard basis when head_dim is a
// power of two (backends/cpu/ops.h has the CPU's page layouts).
enum class KvType : uint8_t { kF32 = 0, kF16 = 1, kQ8 = 2, kBf16 = 3 };

// "f32", "f16", "q8", "bf16" (the --kv flag's spelling); "unknown" otherwise.
inline const char* KvTypeName(KvType type) {
  switch (type) {
    case KvType::kF32:
      return "f32";
    case KvType::kF16:
      return "f16";
    case KvType::kQ8:
      return "q8";
    case KvType::kBf16:
      return "bf16";
  }
  return "unknown";
}

// Bytes of one stored K/V element (q8: the code).
inline size_t KvElemBytes(KvType type) {
  return type == KvType::kF32 ? 4 : type == KvType::kQ8 ? 1 : 2;
}

// Bytes one token row of K or V takes serialized: its row_stride values in
// element order, then (q8) one f16 scale per head of head_dim values.
inline size_t KvRowBytes(KvType type, size_t row_stride, size_t head_dim) {
  const size_t scales = type == KvType::kQ8 && head_dim > 0 ? row_stride / head_dim * 2 : 0;
  return row_stride * KvElemBytes(type) + scales;
}

// The rotary embedding a layer applied to its cached K rows (head_dim 0:
// none), so that rows can be moved to other positions.
struct KvRope {
  size_t head_dim = 0;
  float theta = 10000.0f;
  RopeStyle style = RopeStyle::kNeox;
};

}  // namespace pocket
