// A session's KV cache on Metal: per layer one K and one V buffer in shared
// storage, positions [0, capacity) contiguous in ops.h's layout (q8: all
// codes, then all scales). It grows by whole steps of positions and is
// counted in the session's budget. Objective-C++: included by the
// backend's .mm files only.
#pragma once

#import <Metal/Metal.h>

#include <vector>

#include "backends/metal/context.h"
#include "backends/metal/ops.h"
#include "graph/kv_type.h"

namespace pocket::metal {

class KvCache {
 public:
  // rows[l] values per position in layer l (0: a layer without KV), q8
  // scales per head_dims[l] values; grows by grow_tokens positions up to
  // max_tokens.
  KvCache(const Context* ctx, std::vector<size_t> rows, std::vector<size_t> head_dims, KvType type,
          size_t grow_tokens, size_t max_tokens);

  // Makes positions [0, n_tokens) addressable, keeping the rows held. The
  // GPU must be idle (the sessions commit and wait every step), since the
  // rows move by CPU copies between the shared buffers. OutOfRange past
  // max_tokens; BudgetExceeded when the device refuses the memory.
  Status Reserve(size_t n_tokens);
  void Clear();
  DeviceKvView View(size_t layer) const;
  std::vector<DeviceKvView> Views() const;
  size_t layers() const { return layers_.size(); }
  size_t row(size_t layer) const { return layers_[layer].row; }

  size_t capacity() const { return capacity_; }
  size_t bytes() const { return BytesFor(capacity_); }
  // Bytes the buffers hold with room for n_tokens (rounded up to a step).
  size_t BytesFor(size_t n_tokens) const;
  size_t step_tokens() const { return grow_tokens_; }
  size_t step_bytes() const { return BytesFor(grow_tokens_); }

 private:
  struct Layer {
    size_t row = 0;
    size_t head_dim = 0;
    id<MTLBuffer> k = nil, v = nil;
    Buffer k_view, v_view;
  };

  size_t Rounded(size_t n_tokens) const;

  const Context* ctx_;
  KvType type_;
  size_t grow_tokens_;
  size_t max_tokens_;
  size_t capacity_ = 0;
  std::vector<Layer> layers_;
};

}  // namespace pocket::metal
