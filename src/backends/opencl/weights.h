// The model's weights on the device: each tensor uploaded once from the
// mapped file at load, keyed by its address in the mapping, so a tensor
// used twice (tied embeddings: embed and the output head) is held once.
#pragma once

#include <cstddef>
#include <map>
#include <memory>

#include "backends/opencl/ops.h"
#include "graph/weight_view.h"

namespace pocket::opencl {

class WeightStore {
 public:
  explicit WeightStore(Context* ctx) : ctx_(ctx) {}

  // The device copy of a weight matrix as the CPU backend sees it.
  StatusOr<DeviceWeight> Upload(const WeightView& w);
  // The device copy of `count` f32 values (norm weights, biases).
  StatusOr<const Buffer*> UploadF32(const float* data, size_t count);

  // Bytes held on the device.
  size_t bytes() const { return bytes_; }

 private:
  StatusOr<const Buffer*> UploadBytes(const void* key, const void* data, size_t bytes);

  Context* ctx_;
  // unique_ptr: DeviceWeight and callers keep Buffer pointers across inserts.
  std::map<const void*, std::unique_ptr<Buffer>> buffers_;
  size_t bytes_ = 0;
};

}  // namespace pocket::opencl
