// The CPU backend's KV cache of one session: for every layer, K and V rows stored in
// fixed-size pages that are allocated as positions grow (never the whole
// context up front) and given back on Truncate/Clear. All byte accounting is
// here (bytes(), BytesFor(), commit_slack()), so the session's memory budget
// sits on top of it. Rows are f32, f16, bf16 or q8 (backends/kv_pages.h gives
// the page layout).
//
// Pages are carved in order from one address range reserved for the whole
// context, in transparent huge pages where the OS has them (see
// util/huge_page_buffer.h): page p of every layer, K then V, lies at p times
// the bytes of one page of all layers. Decode reads every layer's pages once
// per token, and in 4 KiB pages (one malloc per page before) those reads
// missed the TLB and restarted the hardware prefetchers at every 4 KiB: in
// huge pages, attention over a 512-token prompt's decoded tokens took 18%
// less time (docs/performance.md). The OS commits the range as it is first
// touched, a huge page at a time, and it stays committed: freed pages are
// reused, not returned (returning them on every reset made the next prompt
// fault and zero them again), so the process holds the most the session
// has used, which the budget bounds. Builds with AddressSanitizer, and hosts
// where the range cannot be reserved, allocate each page on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "graph/kv_type.h"
#include "util/huge_page_buffer.h"
#include "util/status.h"

namespace pocket::cpu {

class KvCache {
 public:
  static constexpr size_t kDefaultPageTokens = 64;

  // `row_elems[l]` is layer l's K (and V) row width, n_kv_heads * head_dim,
  // and `head_dims[l]` its head_dim; layers with row width 0 get no pages.
  // `max_tokens` is the context length.
  KvCache(std::vector<size_t> row_elems, std::vector<size_t> head_dims, KvType type,
          size_t page_tokens, size_t max_tokens);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Makes positions [0, n_tokens) addressable, allocating pages as needed.
  // On failure nothing new stays allocated.
  Status Reserve(size_t n_tokens);
  // Keeps the pages holding positions [0, n_tokens) and frees the rest (for
  // undoing a failed call and prefix reuse).
  void Truncate(size_t n_tokens);
  // Frees every page.
  void Clear() { Truncate(0); }
  // Of the n_tokens held, forgets positions [begin, begin + count): the rows
  // after them move down by `count` positions (K re-encoded with each
  // layer's `rope`, see KvShift) and the pages no longer needed are
  // freed.
  void Drop(size_t begin, size_t count, size_t n_tokens, const std::vector<KvRope>& rope);

  // Positions [0, n_tokens) as bytes, layer by layer (K rows, then V rows,
  // each KvRowBytes long), and back. Write hands the bytes to `sink` a
  // row at a time, so a saved state never needs a copy of the whole cache.
  // Validate checks bytes from an untrusted source (size, every value
  // finite) without touching the cache; Read needs them validated and
  // Reserve(n_tokens) done.
  using ByteSink = std::function<void(const uint8_t* data, size_t size)>;
  void Write(size_t n_tokens, const ByteSink& sink) const;
  Status Validate(size_t n_tokens, const uint8_t* data, size_t size) const;
  void Read(size_t n_tokens, const uint8_t* data);
  // Bytes Write produces for n_tokens.
  size_t SerializedBytes(size_t n_tokens) const { return n_tokens * row_bytes_; }

  KvView View(int layer) const;
  KvType type() const { return type_; }
  size_t page_tokens() const { return page_tokens_; }
  // Positions the allocated pages can hold.
  size_t capacity() const { return pages_ * page_tokens_; }
  // Bytes of K and V pages currently held.
  size_t bytes() const { return bytes_; }
  // Bytes of the pages that hold n_tokens positions.
  size_t BytesFor(size_t n_tokens) const {
    return (n_tokens + page_tokens_ - 1) / page_tokens_ * page_bytes_;
  }
  // Bytes one more page (for every layer, K and V) costs.
  size_t page_bytes() const { return page_bytes_; }
  // Bytes the OS may hold beyond the most pages held so far: it commits the
  // pages' range a huge page at a time, so the last one may be partly unused.
  size_t commit_slack() const { return arena_ != nullptr ? HugePageBuffer::kPageBytes : 0; }

 private:
  struct Layer {
    size_t row_elems = 0;
    size_t head_dim = 0;
    size_t page_bytes = 0;    // one K (or V) page
    size_t arena_offset = 0;  // of its K page within one page of all layers; V follows
    std::vector<void*> k, v;
  };
  void FreeFrom(size_t first_page);

  std::vector<Layer> layers_;
  KvType type_;
  size_t page_tokens_;
  size_t max_pages_;
  size_t pages_ = 0;  // pages per layer (same for all used layers)
  size_t page_bytes_ = 0;
  size_t row_bytes_ = 0;  // one position, every layer, K and V
  size_t bytes_ = 0;
  std::unique_ptr<HugePageBuffer> arena_;  // null: pages allocated one by one
  size_t arena_stride_ = 0;                // bytes of one page of all layers in arena_
};

}  // namespace pocket::cpu
