#include "backends/metal/kv_rows.h"

#include <cmath>
#include <cstring>

#include "graph/kv_type.h"
#include "util/fp16.h"

namespace pocket::metal {
namespace {

// Where row t of one K or V buffer keeps its values and (q8) its scales.
struct RowPlace {
  size_t values_at, values, scales_at, scales;
};

RowPlace Place(const DeviceKvView& kv, size_t t) {
  const size_t row = KvRowBytes(kv.type, kv.row_stride, kv.head_dim);
  const size_t values = kv.type == KvType::kQ8 ? kv.row_stride : row;
  const size_t scales = row - values;
  return {t * values, values, KvScalesOffset(kv.type, kv.capacity, kv.row_stride) + t * scales,
          scales};
}

Status CheckHeld(const std::vector<DeviceKvView>& layers, size_t n_tokens) {
  for (const DeviceKvView& kv : layers) {
    if (kv.row_stride != 0 && n_tokens > kv.capacity) {
      return Errorf(StatusCode::kInvalidArgument, "KV cache: %zu positions asked for, %zu held",
                    n_tokens, kv.capacity);
    }
  }
  return Status::Ok();
}

}  // namespace

size_t KvRowsBytes(const std::vector<DeviceKvView>& layers, size_t n_tokens) {
  size_t bytes = 0;
  for (const DeviceKvView& kv : layers) {
    if (kv.row_stride != 0) bytes += 2 * n_tokens * KvRowBytes(kv.type, kv.row_stride, kv.head_dim);
  }
  return bytes;
}

Status ExportKvRows(const std::vector<DeviceKvView>& layers, size_t n_tokens, const RowSink& sink) {
  POCKET_RETURN_IF_ERROR(CheckHeld(layers, n_tokens));
  std::vector<uint8_t> row;
  for (const DeviceKvView& kv : layers) {
    if (kv.row_stride == 0) continue;
    for (const Buffer* buffer : {kv.k, kv.v}) {
      for (size_t t = 0; t < n_tokens; ++t) {
        const RowPlace p = Place(kv, t);
        row.assign(buffer->contents + p.values_at, buffer->contents + p.values_at + p.values);
        row.insert(row.end(), buffer->contents + p.scales_at,
                   buffer->contents + p.scales_at + p.scales);
        sink(row.data(), row.size());
      }
    }
  }
  return Status::Ok();
}

Status ValidateKvRows(const std::vector<DeviceKvView>& layers, size_t n_tokens, const uint8_t* data,
                      size_t size) {
  if (size != KvRowsBytes(layers, n_tokens)) {
    return Errorf(StatusCode::kCorruptFile,
                  "KV data of %zu bytes does not hold %zu positions (%zu bytes expected)", size,
                  n_tokens, KvRowsBytes(layers, n_tokens));
  }
  // f32 and f16 values, and q8 scales (a finite scale times a code is
  // finite), must be finite.
  for (size_t l = 0; l < layers.size(); ++l) {
    const DeviceKvView& kv = layers[l];
    if (kv.row_stride == 0) continue;
    const size_t row = KvRowBytes(kv.type, kv.row_stride, kv.head_dim);
    for (size_t i = 0; i < 2 * n_tokens; ++i, data += row) {
      bool finite = true;
      if (kv.type == KvType::kF32) {
        for (size_t j = 0; j < kv.row_stride; ++j) {
          float x;
          std::memcpy(&x, data + 4 * j, 4);
          finite = finite && std::isfinite(x);
        }
      } else {
        for (size_t j = kv.type == KvType::kQ8 ? kv.row_stride : 0; j < row; j += 2) {
          uint16_t h;
          std::memcpy(&h, data + j, 2);
          finite = finite && std::isfinite(F16ToF32(h));
        }
      }
      if (!finite) {
        return Errorf(StatusCode::kCorruptFile,
                      "KV data: layer %zu %s row of position %zu holds a value that is not "
                      "finite",
                      l, i < n_tokens ? "K" : "V", i % n_tokens);
      }
    }
  }
  return Status::Ok();
}

Status ImportKvRows(const std::vector<DeviceKvView>& layers, size_t n_tokens, const uint8_t* data) {
  POCKET_RETURN_IF_ERROR(CheckHeld(layers, n_tokens));
  for (const DeviceKvView& kv : layers) {
    if (kv.row_stride == 0) continue;
    for (const Buffer* buffer : {kv.k, kv.v}) {
      for (size_t t = 0; t < n_tokens; ++t) {
        const RowPlace p = Place(kv, t);
        std::memcpy(buffer->contents + p.values_at, data, p.values);
        std::memcpy(buffer->contents + p.scales_at, data + p.values, p.scales);
        data += p.values + p.scales;
      }
    }
  }
  return Status::Ok();
}

}  // namespace pocket::metal
