#include "backends/metal/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "backends/metal/command_encoder.h"

namespace pocket::metal {

KvCache::KvCache(const Context* ctx, std::vector<size_t> rows, std::vector<size_t> head_dims,
                 KvType type, size_t grow_tokens, size_t max_tokens)
    : ctx_(ctx), type_(type), grow_tokens_(grow_tokens), max_tokens_(max_tokens) {
  layers_.resize(rows.size());
  for (size_t l = 0; l < rows.size(); ++l) {
    layers_[l].row = rows[l];
    layers_[l].head_dim = l < head_dims.size() ? head_dims[l] : 0;
  }
}

size_t KvCache::Rounded(size_t n_tokens) const {
  const size_t steps = (n_tokens + grow_tokens_ - 1) / grow_tokens_;
  return std::min(steps * grow_tokens_, std::max(max_tokens_, n_tokens));
}

size_t KvCache::BytesFor(size_t n_tokens) const {
  const size_t tokens = Rounded(n_tokens);
  size_t total = 0;
  for (const Layer& l : layers_) {
    if (l.row != 0) total += 2 * KvBufferBytes(type_, tokens, l.row, l.head_dim);
  }
  return total;
}

Status KvCache::Reserve(size_t n_tokens) {
  if (n_tokens <= capacity_) return Status::Ok();
  if (n_tokens > max_tokens_) {
    return Errorf(StatusCode::kOutOfRange, "KV cache: %zu positions asked for, the context is %zu",
                  n_tokens, max_tokens_);
  }
  const size_t capacity = Rounded(n_tokens);
  std::vector<Layer> grown = layers_;
  for (Layer& l : grown) {
    if (l.row == 0) continue;
    const size_t bytes = KvBufferBytes(type_, capacity, l.row, l.head_dim);
    POCKET_ASSIGN_OR_RETURN(l.k, ctx_->NewBuffer(bytes));
    POCKET_ASSIGN_OR_RETURN(l.v, ctx_->NewBuffer(bytes));
    l.k_view = ViewOf(l.k);
    l.v_view = ViewOf(l.v);
  }
  // The held positions move to the new buffers: the codes (or values) at
  // the start, and for q8 the scales, whose offset depends on capacity.
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& from = layers_[i];
    const Layer& to = grown[i];
    if (from.row == 0 || capacity_ == 0) continue;
    const size_t total = KvBufferBytes(type_, capacity_, from.row, from.head_dim);
    const size_t values = type_ == KvType::kQ8 ? KvScalesOffset(type_, capacity_, from.row) : total;
    const size_t scales = total - values;
    for (bool keys : {true, false}) {
      const uint8_t* src = (keys ? from.k_view : from.v_view).contents;
      uint8_t* dst = (keys ? to.k_view : to.v_view).contents;
      std::memcpy(dst, src, values);
      std::memcpy(dst + KvScalesOffset(type_, capacity, from.row),
                  src + KvScalesOffset(type_, capacity_, from.row), scales);
    }
  }
  layers_ = std::move(grown);
  capacity_ = capacity;
  return Status::Ok();
}

void KvCache::Clear() {
  for (Layer& l : layers_) {
    l.k = l.v = nil;
    l.k_view = l.v_view = Buffer();
  }
  capacity_ = 0;
}

DeviceKvView KvCache::View(size_t layer) const {
  const Layer& l = layers_[layer];
  DeviceKvView v;
  v.type = type_;
  v.k = &l.k_view;
  v.v = &l.v_view;
  v.row_stride = l.row;
  v.head_dim = l.head_dim;
  v.capacity = capacity_;
  return v;
}

std::vector<DeviceKvView> KvCache::Views() const {
  std::vector<DeviceKvView> views;
  for (size_t l = 0; l < layers_.size(); ++l) views.push_back(View(l));
  return views;
}

}  // namespace pocket::metal
