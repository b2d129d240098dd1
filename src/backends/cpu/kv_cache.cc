#include "backends/cpu/kv_cache.h"

#include <cmath>
#include <cstdlib>
#include <utility>

namespace pocket::cpu {

// AddressSanitizer puts red zones around each allocation, so pages allocated
// one by one catch a kernel reading past its page; in one range it would
// read the next page unnoticed.
#if defined(__SANITIZE_ADDRESS__)
#define POCKET_KV_PAGES_ONE_BY_ONE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POCKET_KV_PAGES_ONE_BY_ONE 1
#endif
#endif
#ifndef POCKET_KV_PAGES_ONE_BY_ONE
#define POCKET_KV_PAGES_ONE_BY_ONE 0
#endif

namespace {
// Pages start on a cache line so SIMD loads of a row never straddle two.
constexpr size_t kPageAlignment = 64;

size_t RoundToAlignment(size_t bytes) {
  return (bytes + kPageAlignment - 1) / kPageAlignment * kPageAlignment;
}

void* AllocPage(size_t bytes) {
  return std::aligned_alloc(kPageAlignment, RoundToAlignment(bytes));
}
}  // namespace

KvCache::KvCache(std::vector<size_t> row_elems, std::vector<size_t> head_dims, KvType type,
                 size_t page_tokens, size_t max_tokens)
    : type_(type), page_tokens_(page_tokens == 0 ? kDefaultPageTokens : page_tokens) {
  max_pages_ = (max_tokens + page_tokens_ - 1) / page_tokens_;
  layers_.resize(row_elems.size());
  for (size_t l = 0; l < row_elems.size(); ++l) {
    Layer& layer = layers_[l];
    layer.row_elems = row_elems[l];
    layer.head_dim = l < head_dims.size() ? head_dims[l] : 0;
    const size_t row = KvRowBytes(type, layer.row_elems, layer.head_dim);
    layer.page_bytes = row * page_tokens_;
    page_bytes_ += 2 * layer.page_bytes;
    row_bytes_ += 2 * row;
    if (layer.row_elems == 0) continue;
    layer.arena_offset = arena_stride_;
    arena_stride_ += 2 * RoundToAlignment(layer.page_bytes);
  }
#if !POCKET_KV_PAGES_ONE_BY_ONE
  if (arena_stride_ != 0 && max_pages_ <= SIZE_MAX / arena_stride_) {
    auto arena = HugePageBuffer::Allocate(max_pages_ * arena_stride_);
    if (arena.ok()) arena_ = std::move(*arena);
  }
#endif
}

KvCache::~KvCache() { FreeFrom(0); }

Status KvCache::Reserve(size_t n_tokens) {
  const size_t need = (n_tokens + page_tokens_ - 1) / page_tokens_;
  if (need > max_pages_) {
    return Errorf(StatusCode::kOutOfRange, "KV cache: %zu positions exceed the context of %zu",
                  n_tokens, max_pages_ * page_tokens_);
  }
  const size_t old_pages = pages_;
  while (pages_ < need) {
    for (Layer& layer : layers_) {
      if (layer.row_elems == 0) continue;
      if (arena_ != nullptr) {
        uint8_t* k = arena_->data() + pages_ * arena_stride_ + layer.arena_offset;
        layer.k.push_back(k);
        layer.v.push_back(k + RoundToAlignment(layer.page_bytes));
        continue;
      }
      void* k = AllocPage(layer.page_bytes);
      void* v = AllocPage(layer.page_bytes);
      if (k == nullptr || v == nullptr) {
        std::free(k);
        std::free(v);
        FreeFrom(old_pages);
        return Errorf(StatusCode::kBudgetExceeded,
                      "KV cache: out of memory growing to %zu positions (%zu bytes held)", n_tokens,
                      bytes_);
      }
      layer.k.push_back(k);
      layer.v.push_back(v);
    }
    ++pages_;
    bytes_ += page_bytes_;
  }
  return Status::Ok();
}

void KvCache::Truncate(size_t n_tokens) { FreeFrom((n_tokens + page_tokens_ - 1) / page_tokens_); }

void KvCache::Drop(size_t begin, size_t count, size_t n_tokens, const std::vector<KvRope>& rope) {
  if (count == 0 || begin + count > n_tokens) return;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].row_elems == 0) continue;
    KvShift(View(static_cast<int>(l)), begin, begin + count, n_tokens - begin - count,
            l < rope.size() ? rope[l] : KvRope());
  }
  Truncate(n_tokens - count);
}

void KvCache::Write(size_t n_tokens, const ByteSink& sink) const {
  std::vector<uint8_t> bytes;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].row_elems == 0) continue;
    const KvView view = View(static_cast<int>(l));
    bytes.resize(KvRowBytes(type_, view.row_stride, view.head_dim));
    for (void* const* pages : {view.k_pages, view.v_pages}) {
      for (size_t t = 0; t < n_tokens; ++t) {
        KvReadRow(view, pages, t, bytes.data());
        sink(bytes.data(), bytes.size());
      }
    }
  }
}

Status KvCache::Validate(size_t n_tokens, const uint8_t* data, size_t size) const {
  if (size != SerializedBytes(n_tokens)) {
    return Errorf(StatusCode::kCorruptFile,
                  "KV data of %zu bytes does not hold %zu positions (%zu bytes expected)", size,
                  n_tokens, SerializedBytes(n_tokens));
  }
  // Each row is decoded from a one-row page of its own.
  std::vector<uint8_t> page;
  std::vector<float> values;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].row_elems == 0) continue;
    KvView view = View(static_cast<int>(l));
    const size_t row = KvRowBytes(type_, view.row_stride, view.head_dim);
    page.resize(row);
    values.resize(view.row_stride);
    void* pages[1] = {page.data()};
    view.page_tokens = 1;
    for (size_t i = 0; i < 2 * n_tokens; ++i, data += row) {
      KvWriteRow(view, pages, 0, data);
      KvRowToF32(view, pages, 0, values.data());
      for (float x : values) {
        if (!std::isfinite(x)) {
          return Errorf(StatusCode::kCorruptFile,
                        "KV data: layer %zu %s row of position %zu holds a value that is not "
                        "finite",
                        l, i < n_tokens ? "K" : "V", i % n_tokens);
        }
      }
    }
  }
  return Status::Ok();
}

void KvCache::Read(size_t n_tokens, const uint8_t* data) {
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].row_elems == 0) continue;
    const KvView view = View(static_cast<int>(l));
    const size_t row = KvRowBytes(type_, view.row_stride, view.head_dim);
    for (void* const* pages : {view.k_pages, view.v_pages}) {
      for (size_t t = 0; t < n_tokens; ++t, data += row) KvWriteRow(view, pages, t, data);
    }
  }
}

void KvCache::FreeFrom(size_t first_page) {
  for (Layer& layer : layers_) {
    while (layer.k.size() > first_page) {
      if (arena_ == nullptr) {
        std::free(layer.k.back());
        std::free(layer.v.back());
      }
      layer.k.pop_back();
      layer.v.pop_back();
    }
  }
  if (pages_ > first_page) {
    bytes_ -= (pages_ - first_page) * page_bytes_;
    pages_ = first_page;
  }
}

KvView KvCache::View(int layer) const {
  const Layer& l = layers_[static_cast<size_t>(layer)];
  KvView view;
  view.type = type_;
  view.k_pages = l.k.data();
  view.v_pages = l.v.data();
  view.page_tokens = page_tokens_;
  view.row_stride = l.row_elems;
  view.head_dim = l.head_dim;
  return view;
}

}  // namespace pocket::cpu
