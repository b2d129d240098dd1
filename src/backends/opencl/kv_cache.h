// The KV cache of one session on the device: per layer, K and V as one
// contiguous buffer each (kernels index them directly; OpenCL 1.2 has no
// arrays of buffers for pages). Capacity grows in steps of `grow_tokens`
// as positions are reserved (never the whole context up front); growing
// copies the old contents on the device.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/opencl/ops.h"

namespace pocket::opencl {

class DeviceKvCache {
 public:
  // `row_elems[l]` is layer l's K (and V) row width (layers with 0 get no
  // buffers), `head_dims[l]` its head_dim (the q8 scale group; may be empty
  // for f32 and f16). `max_tokens` is the context length.
  DeviceKvCache(Context* ctx, const std::vector<size_t>& row_elems,
                const std::vector<size_t>& head_dims, KvType type, size_t grow_tokens,
                size_t max_tokens);

  // Makes positions [0, n_tokens) addressable. On failure the cache keeps
  // its old buffers and contents.
  Status Reserve(size_t n_tokens);
  // Frees every buffer (positions beyond a truncation need no freeing: the
  // next append overwrites them).
  void Clear();

  DeviceKvView View(int layer) const;
  size_t capacity() const { return capacity_; }
  size_t bytes() const;

 private:
  struct Layer {
    size_t row_elems = 0;
    size_t head_dim = 0;
    Buffer k, v;
  };

  Context* ctx_;
  std::vector<Layer> layers_;
  KvType type_;
  size_t grow_tokens_;
  size_t max_tokens_;
  size_t capacity_ = 0;
};

}  // namespace pocket::opencl
