#include "runtime/kv_cache.h"

#include <cstdlib>
#include <utility>

namespace pocket {

namespace {
// Pages start on a cache line so SIMD loads of a row never straddle two.
constexpr size_t kPageAlignment = 64;

void* AllocPage(size_t bytes) {
  const size_t rounded = (bytes + kPageAlignment - 1) / kPageAlignment * kPageAlignment;
  return std::aligned_alloc(kPageAlignment, rounded);
}
}  // namespace

KvCache::KvCache(std::vector<size_t> row_elems, cpu::KvType type, size_t page_tokens,
                 size_t max_tokens)
    : type_(type),
      page_tokens_(page_tokens == 0 ? kDefaultPageTokens : page_tokens),
      elem_bytes_(type == cpu::KvType::kF32 ? 4 : 2) {
  max_pages_ = (max_tokens + page_tokens_ - 1) / page_tokens_;
  layers_.resize(row_elems.size());
  for (size_t l = 0; l < row_elems.size(); ++l) {
    layers_[l].row_elems = row_elems[l];
    page_bytes_ += 2 * row_elems[l] * page_tokens_ * elem_bytes_;
  }
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
      const size_t bytes = layer.row_elems * page_tokens_ * elem_bytes_;
      void* k = AllocPage(bytes);
      void* v = AllocPage(bytes);
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

void KvCache::FreeFrom(size_t first_page) {
  for (Layer& layer : layers_) {
    while (layer.k.size() > first_page) {
      std::free(layer.k.back());
      std::free(layer.v.back());
      layer.k.pop_back();
      layer.v.pop_back();
    }
  }
  if (pages_ > first_page) {
    bytes_ -= (pages_ - first_page) * page_bytes_;
    pages_ = first_page;
  }
}

cpu::KvView KvCache::View(int layer) const {
  const Layer& l = layers_[static_cast<size_t>(layer)];
  cpu::KvView view;
  view.type = type_;
  view.k_pages = l.k.data();
  view.v_pages = l.v.data();
  view.page_tokens = page_tokens_;
  view.row_stride = l.row_elems;
  return view;
}

}  // namespace pocket
