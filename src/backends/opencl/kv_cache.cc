#include "backends/opencl/kv_cache.h"

#include <algorithm>
#include <utility>

namespace pocket::opencl {

DeviceKvCache::DeviceKvCache(Context* ctx, const std::vector<size_t>& row_elems,
                             const std::vector<size_t>& head_dims, KvType type,
                             size_t grow_tokens, size_t max_tokens)
    : ctx_(ctx),
      type_(type),
      grow_tokens_(std::max<size_t>(grow_tokens, 1)),
      max_tokens_(max_tokens) {
  layers_.resize(row_elems.size());
  for (size_t l = 0; l < row_elems.size(); ++l) {
    layers_[l].row_elems = row_elems[l];
    layers_[l].head_dim = l < head_dims.size() ? head_dims[l] : 0;
  }
}

Status DeviceKvCache::Reserve(size_t n_tokens) {
  if (n_tokens <= capacity_) return Status::Ok();
  if (n_tokens > max_tokens_) {
    return Errorf(StatusCode::kOutOfRange, "KV cache: %zu positions exceed the context of %zu",
                  n_tokens, max_tokens_);
  }
  // Whole steps, at least doubling, so a long generation copies the cache
  // O(log n) times rather than once per step.
  size_t capacity = (n_tokens + grow_tokens_ - 1) / grow_tokens_ * grow_tokens_;
  capacity = std::min(std::max(capacity, 2 * capacity_), max_tokens_);
  std::vector<std::pair<Buffer, Buffer>> grown(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    if (layer.row_elems == 0) continue;
    if (type_ == KvType::kQ8 &&
        (layer.head_dim == 0 || layer.row_elems % layer.head_dim != 0)) {
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
