// The KV cache of one session on the device: per layer, K and V as one
// contiguous buffer each (kernels index them directly; OpenCL 1.2 has no
// arrays of buffers for pages). Capacity grows in steps of `grow_tokens`
// as positions are reserved (never the whole context up front); growing
// copies the old contents on the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

  // Makes positions [0, n_tokens) addressable, growing in whole steps and
  // at least doubling, but never past `limit_tokens` (rounded up to a step)
  // unless n_tokens needs it: a memory budget's token limit holds the
  // device bytes to BytesFor(limit_tokens). On failure the cache keeps its
  // old buffers and contents.
  Status Reserve(size_t n_tokens, size_t limit_tokens = SIZE_MAX);
  // Frees every buffer (positions beyond a truncation need no freeing: the
  // next append overwrites them).
  void Clear();
  // Of the n_tokens held, forgets positions [begin, begin + count): the
  // rows after them move down by `count` positions, K re-encoded with each
  // layer's `rope` (ops.h KvShift), as the CPU's KvCache::Drop moves them.
  // The buffers stay. On failure positions from `begin` on hold nothing
  // valid.
  Status Drop(size_t begin, size_t count, size_t n_tokens, const std::vector<KvRope>& rope);

  // Positions [0, n_tokens) as bytes, layer by layer (K rows, then V rows,
  // each KvRowBytes long: the stored values in element order, then the q8
  // scales), the serialized form every backend's cache writes and reads, so
  // a state saved on one backend loads on another with the same KV type.
  // Write hands the bytes to `sink` a block of rows at a time; Validate
  // checks bytes from an untrusted source (size, every value finite)
  // without touching the device; Read needs them validated and
  // Reserve(n_tokens) done.
  using ByteSink = std::function<void(const uint8_t* data, size_t size)>;
  Status Write(size_t n_tokens, const ByteSink& sink) const;
  Status Validate(size_t n_tokens, const uint8_t* data, size_t size) const;
  Status Read(size_t n_tokens, const uint8_t* data);
  // Bytes Write produces for n_tokens.
  size_t SerializedBytes(size_t n_tokens) const { return n_tokens * row_bytes_; }

  DeviceKvView View(int layer) const;
  KvType type() const { return type_; }
  size_t capacity() const { return capacity_; }
  // Device bytes of the K and V buffers held.
  size_t bytes() const;
  // Positions one growth step adds, and the device bytes it costs (every
  // layer, K and V); BytesFor(n) is what the steps holding n positions
  // cost, the most Reserve(n, n) holds.
  size_t step_tokens() const { return grow_tokens_; }
  size_t step_bytes() const { return grow_tokens_ * row_bytes_; }
  size_t BytesFor(size_t n_tokens) const {
    return (n_tokens + grow_tokens_ - 1) / grow_tokens_ * step_bytes();
  }

 private:
  struct Layer {
    size_t row_elems = 0;
    size_t head_dim = 0;
    Buffer k, v;
  };
  // Where a block of serialized rows lies on the device: a row is `row`
  // bytes serialized, its values the first `values` at `values` per row from
  // the buffer's start, its (q8) scales the rest at scales_off.
  struct RowBlock {
    const Buffer* buffer;
    size_t row, values, scale_bytes, scales_off;
    size_t t0, n;  // positions [t0, t0 + n)
    size_t at;     // the block's offset in the serialized rows
  };
  // Calls fn(block) for blocks of about 1 MiB of positions [0, n_tokens),
  // in the serialized order (layer by layer, K then V), stopping at an error.
  template <typename Fn>
  Status ForEachRowBlock(size_t n_tokens, const Fn& fn) const;

  Context* ctx_;
  std::vector<Layer> layers_;
  KvType type_;
  size_t grow_tokens_;
  size_t max_tokens_;
  size_t row_bytes_ = 0;  // one position, every layer, K and V, serialized
  size_t capacity_ = 0;
};

}  // namespace pocket::opencl
