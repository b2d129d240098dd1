#include "backends/opencl/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "util/fp16.h"

namespace pocket::opencl {

DeviceKvCache::DeviceKvCache(Context* ctx, const std::vector<size_t>& row_elems,
                             const std::vector<size_t>& head_dims, KvType type, size_t grow_tokens,
                             size_t max_tokens)
    : ctx_(ctx),
      type_(type),
      grow_tokens_(std::max<size_t>(grow_tokens, 1)),
      max_tokens_(max_tokens) {
  layers_.resize(row_elems.size());
  for (size_t l = 0; l < row_elems.size(); ++l) {
    layers_[l].row_elems = row_elems[l];
    layers_[l].head_dim = l < head_dims.size() ? head_dims[l] : 0;
    if (row_elems[l] != 0) row_bytes_ += 2 * KvRowBytes(type, row_elems[l], layers_[l].head_dim);
  }
}

Status DeviceKvCache::Reserve(size_t n_tokens, size_t limit_tokens) {
  if (n_tokens <= capacity_) return Status::Ok();
  if (n_tokens > max_tokens_) {
    return Errorf(StatusCode::kOutOfRange, "KV cache: %zu positions exceed the context of %zu",
                  n_tokens, max_tokens_);
  }
  if (type_ != KvType::kF32 && type_ != KvType::kF16 && type_ != KvType::kQ8) {
    return Errorf(StatusCode::kInvalidArgument,
                  "the OpenCL KV cache holds f32, f16 or q8 rows, not %s", KvTypeName(type_));
  }
  // Whole steps, at least doubling up to the limit, so a long generation
  // copies the cache O(log n) times rather than once per step.
  const auto steps = [&](size_t n) { return (n + grow_tokens_ - 1) / grow_tokens_ * grow_tokens_; };
  const size_t limit = limit_tokens >= max_tokens_ ? max_tokens_ : steps(limit_tokens);
  const size_t capacity =
      std::min(std::max(steps(n_tokens), std::min(2 * capacity_, limit)), max_tokens_);
  std::vector<std::pair<Buffer, Buffer>> grown(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    if (layer.row_elems == 0) continue;
    if (type_ == KvType::kQ8 && (layer.head_dim == 0 || layer.row_elems % layer.head_dim != 0)) {
      return Errorf(StatusCode::kInvalidArgument,
                    "KV cache layer %zu: q8 needs a head_dim dividing its row of %zu", l,
                    layer.row_elems);
    }
    const size_t bytes = KvBufferBytes(type_, capacity, layer.row_elems, layer.head_dim);
    POCKET_ASSIGN_OR_RETURN(grown[l].first, ctx_->NewBuffer(bytes));
    POCKET_ASSIGN_OR_RETURN(grown[l].second, ctx_->NewBuffer(bytes));
    // q8 buffers hold codes then scales, and the scales start further on in
    // the larger buffer: copy the two parts separately.
    const size_t old_bytes = KvBufferBytes(type_, capacity_, layer.row_elems, layer.head_dim);
    const size_t old_codes =
        type_ == KvType::kQ8 ? KvScalesOffset(type_, capacity_, layer.row_elems) : old_bytes;
    const size_t new_scales = KvScalesOffset(type_, capacity, layer.row_elems);
    const std::pair<const Buffer*, const Buffer*> copies[] = {{&layer.k, &grown[l].first},
                                                              {&layer.v, &grown[l].second}};
    for (const auto& [from, to] : copies) {
      POCKET_RETURN_IF_ERROR(ctx_->Copy(*from, 0, *to, 0, old_codes));
      POCKET_RETURN_IF_ERROR(ctx_->Copy(*from, old_codes, *to, new_scales, old_bytes - old_codes));
    }
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].row_elems == 0) continue;
    layers_[l].k = std::move(grown[l].first);
    layers_[l].v = std::move(grown[l].second);
  }
  capacity_ = capacity;
  return Status::Ok();
}

void DeviceKvCache::Clear() {
  for (Layer& layer : layers_) {
    layer.k = Buffer();
    layer.v = Buffer();
  }
  capacity_ = 0;
}

Status DeviceKvCache::Drop(size_t begin, size_t count, size_t n_tokens,
                           const std::vector<KvRope>& rope) {
  if (count == 0 || begin + count > n_tokens) return Status::Ok();
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].row_elems == 0) continue;
    POCKET_RETURN_IF_ERROR(KvShift(ctx_, View(static_cast<int>(l)), begin, begin + count,
                                   n_tokens - begin - count, l < rope.size() ? rope[l] : KvRope()));
  }
  return Status::Ok();
}

namespace {

// Rows per host transfer of Write and Read: whole rows, about 1 MiB.
size_t BlockRows(size_t row_bytes) {
  constexpr size_t kBlockBytes = size_t{1} << 20;
  return std::max<size_t>(1, kBlockBytes / row_bytes);
}

}  // namespace

template <typename Fn>
Status DeviceKvCache::ForEachRowBlock(size_t n_tokens, const Fn& fn) const {
  size_t at = 0;
  for (const Layer& layer : layers_) {
    if (layer.row_elems == 0) continue;
    const size_t row = KvRowBytes(type_, layer.row_elems, layer.head_dim);
    // The device holds a block's values as one run and (q8) its scales as
    // another; serialized, each row's scales follow its values.
    const size_t values = type_ == KvType::kQ8 ? layer.row_elems : row;
    const size_t scales_off = KvScalesOffset(type_, capacity_, layer.row_elems);
    for (const Buffer* buffer : {&layer.k, &layer.v}) {
      for (size_t t0 = 0; t0 < n_tokens; t0 += BlockRows(row)) {
        const size_t n = std::min(BlockRows(row), n_tokens - t0);
        POCKET_RETURN_IF_ERROR(
            fn(RowBlock{buffer, row, values, row - values, scales_off, t0, n, at + t0 * row}));
      }
      at += n_tokens * row;
    }
  }
  return Status::Ok();
}

Status DeviceKvCache::Write(size_t n_tokens, const ByteSink& sink) const {
  if (n_tokens > capacity_) {
    return Errorf(StatusCode::kInvalidArgument, "KV cache: %zu positions asked for, %zu held",
                  n_tokens, capacity_);
  }
  std::vector<uint8_t> block, scales;
  return ForEachRowBlock(n_tokens, [&](const RowBlock& b) {
    block.resize(b.n * b.row);
    POCKET_RETURN_IF_ERROR(ctx_->Read(*b.buffer, b.t0 * b.values, block.data(), b.n * b.values));
    if (b.scale_bytes != 0) {
      scales.resize(b.n * b.scale_bytes);
      POCKET_RETURN_IF_ERROR(
          ctx_->Read(*b.buffer, b.scales_off + b.t0 * b.scale_bytes, scales.data(), scales.size()));
      // Spread the rows out from the back, where nothing is overwritten
      // before it moves.
      for (size_t t = b.n; t-- > 0;) {
        std::memmove(block.data() + t * b.row, block.data() + t * b.values, b.values);
        std::memcpy(block.data() + t * b.row + b.values, scales.data() + t * b.scale_bytes,
                    b.scale_bytes);
      }
    }
    sink(block.data(), block.size());
    return Status::Ok();
  });
}

Status DeviceKvCache::Validate(size_t n_tokens, const uint8_t* data, size_t size) const {
  if (size != SerializedBytes(n_tokens)) {
    return Errorf(StatusCode::kCorruptFile,
                  "KV data of %zu bytes does not hold %zu positions (%zu bytes expected)", size,
                  n_tokens, SerializedBytes(n_tokens));
  }
  // f32 and f16 values, and q8 scales (a finite scale times a code is
  // finite, a non-finite one makes its head so), must be finite.
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    if (layer.row_elems == 0) continue;
    const size_t row = KvRowBytes(type_, layer.row_elems, layer.head_dim);
    for (size_t i = 0; i < 2 * n_tokens; ++i, data += row) {
      bool finite = true;
      if (type_ == KvType::kF32) {
        for (size_t j = 0; j < layer.row_elems; ++j) {
          float x;
          std::memcpy(&x, data + 4 * j, 4);
          finite = finite && std::isfinite(x);
        }
      } else {
        const size_t first = type_ == KvType::kQ8 ? layer.row_elems : 0;
        for (size_t j = first; j < row; j += 2) {
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

Status DeviceKvCache::Read(size_t n_tokens, const uint8_t* data) {
  if (n_tokens > capacity_) {
    return Errorf(StatusCode::kInvalidArgument,
                  "KV cache: %zu positions to read, %zu reserved; reserve them first", n_tokens,
                  capacity_);
  }
  std::vector<uint8_t> values_block, scales;
  return ForEachRowBlock(n_tokens, [&](const RowBlock& b) {
    const uint8_t* rows = data + b.at;
    if (b.scale_bytes == 0) return ctx_->Write(*b.buffer, b.t0 * b.values, rows, b.n * b.values);
    values_block.resize(b.n * b.values);
    scales.resize(b.n * b.scale_bytes);
    for (size_t t = 0; t < b.n; ++t) {
      std::memcpy(values_block.data() + t * b.values, rows + t * b.row, b.values);
      std::memcpy(scales.data() + t * b.scale_bytes, rows + t * b.row + b.values, b.scale_bytes);
    }
    POCKET_RETURN_IF_ERROR(
        ctx_->Write(*b.buffer, b.t0 * b.values, values_block.data(), values_block.size()));
    return ctx_->Write(*b.buffer, b.scales_off + b.t0 * b.scale_bytes, scales.data(),
                       scales.size());
  });
}

DeviceKvView DeviceKvCache::View(int layer) const {
  const Layer& l = layers_[static_cast<size_t>(layer)];
  DeviceKvView view;
  view.type = type_;
  view.k = &l.k;
  view.v = &l.v;
  view.row_stride = l.row_elems;
  view.head_dim = l.head_dim;
  view.capacity = capacity_;
  return view;
}

size_t DeviceKvCache::bytes() const {
  size_t total = 0;
  for (const Layer& layer : layers_) total += layer.k.bytes() + layer.v.bytes();
  return total;
}

}  // namespace pocket::opencl
