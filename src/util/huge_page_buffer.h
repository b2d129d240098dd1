// Anonymous memory for data that is read in long sequential streams (the
// weights, which decode reads end to end for every token), asking the OS for
// transparent huge pages. With 2 MiB pages a stream crosses a page boundary
// 512 times less often, so the TLB misses and the restarts of the hardware
// prefetchers at 4 KiB boundaries go away (docs/performance.md measures what
// that is worth against the file mapping's 4 KiB pages).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "util/status.h"

namespace pocket {

class HugePageBuffer {
 public:
  // At least `bytes` zeroed, writable bytes starting on a 2 MiB boundary,
  // rounded up to whole 2 MiB pages. On Linux the range is marked
  // MADV_HUGEPAGE, so the kernel backs it with huge pages where transparent
  // huge pages are enabled ("always" or "madvise"); elsewhere, or when none
  // are free, it is ordinary memory and everything still works. Errors:
  // InvalidArgument for 0 bytes, BudgetExceeded when the OS refuses the
  // memory.
  static StatusOr<std::unique_ptr<HugePageBuffer>> Allocate(size_t bytes);
  ~HugePageBuffer();

  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  static constexpr size_t kPageBytes = size_t{2} << 20;

 private:
  HugePageBuffer(void* mapping, size_t mapping_size, uint8_t* data, size_t size)
      : mapping_(mapping), mapping_size_(mapping_size), data_(data), size_(size) {}

  void* mapping_;  // what mmap returned: data_ rounded down, plus slack
  size_t mapping_size_;
  uint8_t* data_;
  size_t size_;
};

}  // namespace pocket
