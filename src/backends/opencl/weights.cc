#include "backends/opencl/weights.h"

#include <vector>

#include "quant/rows16.h"

namespace pocket::opencl {

StatusOr<const Buffer*> WeightStore::UploadBytes(const void* key, const void* data, size_t bytes) {
  auto it = buffers_.find(key);
  if (it != buffers_.end()) {
    if (it->second->bytes() < bytes) {
      return Errorf(StatusCode::kInternal,
                    "a tensor was uploaded with %zu bytes and is now used with %zu",
                    it->second->bytes(), bytes);
    }
    return it->second.get();
  }
  POCKET_ASSIGN_OR_RETURN(Buffer buffer, ctx_->NewBuffer(bytes));
  POCKET_RETURN_IF_ERROR(ctx_->Write(buffer, 0, data, bytes));
  bytes_ += bytes;
  auto stored = std::make_unique<Buffer>(std::move(buffer));
  const Buffer* result = stored.get();
  buffers_.emplace(key, std::move(stored));
  return result;
}

StatusOr<DeviceWeight> WeightStore::Upload(const WeightView& w) {
  uint64_t bytes = 0;
  if (w.data == nullptr || !TensorByteSize(w.dtype, w.rows, w.cols, w.group, &bytes)) {
    return Errorf(StatusCode::kInvalidArgument, "weight [%zu, %zu] %s (group %u) has no valid size",
                  w.rows, w.cols, DTypeName(w.dtype), w.group);
  }
  // The kernels index elements with 32-bit integers.
  if (static_cast<uint64_t>(w.rows) * w.cols > 0xFFFFFFFFull || bytes > 0xFFFFFFFFull) {
    return Errorf(StatusCode::kUnsupported,
                  "weight [%zu, %zu] is too large for the OpenCL kernels (over 2^32 elements)",
                  w.rows, w.cols);
  }
  // The OpenCL kernels read planar q4 and q8: a rows16 weight is unpacked
  // into a host copy that lives only until the upload.
  std::vector<uint8_t> planar;
  const void* src = w.data;
  if (w.layout == TensorLayout::kRows16 && buffers_.find(w.data) == buffers_.end()) {
    planar = w.dtype == DType::kQ8 ? UnpackQ8Rows16(w.data, w.rows, w.cols)
                                   : UnpackQ4Rows16(w.data, w.rows, w.cols, w.group);
    src = planar.data();
  }
  POCKET_ASSIGN_OR_RETURN(const Buffer* buffer,
                          UploadBytes(w.data, src, static_cast<size_t>(bytes)));
  DeviceWeight d;
  d.buffer = buffer;
  d.dtype = w.dtype;
  d.group = w.group;
  d.rows = w.rows;
  d.cols = w.cols;
  return d;
}

StatusOr<const Buffer*> WeightStore::UploadF32(const float* data, size_t count) {
  return UploadBytes(data, data, count * sizeof(float));
}

}  // namespace pocket::opencl
