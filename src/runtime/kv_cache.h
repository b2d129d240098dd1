// The KV cache of one session: for every layer, K and V rows stored in
// fixed-size pages that are allocated as positions grow (never the whole
// context up front) and returned on Truncate/Clear. All byte accounting is
// here (bytes()), so a memory budget can sit on top of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/ops.h"
#include "util/status.h"

namespace pocket {

class KvCache {
 public:
  static constexpr size_t kDefaultPageTokens = 64;

  // `row_elems[l]` is layer l's K (and V) row width, n_kv_heads * head_dim;
  // layers with 0 get no pages. `max_tokens` is the context length.
  KvCache(std::vector<size_t> row_elems, cpu::KvType type, size_t page_tokens, size_t max_tokens);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Makes positions [0, n_tokens) addressable, allocating pages as needed.
  // On failure nothing new stays allocated.
  Status Reserve(size_t n_tokens);
  // Keeps the pages holding positions [0, n_tokens) and frees the rest (for
  // undoing a failed call and, later, prefix reuse).
  void Truncate(size_t n_tokens);
  // Frees every page.
  void Clear() { Truncate(0); }

  cpu::KvView View(int layer) const;
  cpu::KvType type() const { return type_; }
  size_t page_tokens() const { return page_tokens_; }
  // Positions the allocated pages can hold.
  size_t capacity() const { return pages_ * page_tokens_; }
  // Bytes of K and V pages currently held.
  size_t bytes() const { return bytes_; }
  // Bytes one more page (for every layer, K and V) costs.
  size_t page_bytes() const { return page_bytes_; }

 private:
  struct Layer {
    size_t row_elems = 0;
    std::vector<void*> k, v;
  };
  void FreeFrom(size_t first_page);

  std::vector<Layer> layers_;
  cpu::KvType type_;
  size_t page_tokens_;
  size_t max_pages_;
  size_t elem_bytes_;
  size_t pages_ = 0;  // pages per layer (same for all used layers)
  size_t page_bytes_ = 0;
  size_t bytes_ = 0;
};

}  // namespace pocket
