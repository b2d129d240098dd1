#include "runtime/memory.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "util/status.h"

namespace pocket {

size_t PagesCovering(std::vector<std::pair<uint64_t, uint64_t>> ranges, size_t page_size) {
  std::vector<std::pair<uint64_t, uint64_t>> pages;  // [first, end) page numbers
  pages.reserve(ranges.size());
  for (const auto& [offset, size] : ranges) {
    if (size == 0) continue;
    pages.emplace_back(offset / page_size, (offset + size + page_size - 1) / page_size);
  }
  std::sort(pages.begin(), pages.end());
  uint64_t total = 0, covered_end = 0;
  for (const auto& [first, end] : pages) {
    const uint64_t from = std::max(first, covered_end);
    if (end > from) total += end - from;
    covered_end = std::max(covered_end, end);
  }
  return static_cast<size_t>(total * page_size);
}

size_t OsPageSize() {
  const long size = sysconf(_SC_PAGESIZE);
  return size > 0 ? static_cast<size_t>(size) : 4096;
}

size_t ResidentBytes(const void* data, size_t size) {
  const size_t page = OsPageSize();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + size;
  const size_t n_pages = (end - begin + page - 1) / page;
  std::vector<unsigned char> resident(n_pages);
  if (size == 0 || mincore(reinterpret_cast<void*>(begin), end - begin, resident.data()) != 0) {
    return 0;
  }
  size_t count = 0;
  for (unsigned char r : resident) count += r & 1;
  return count * page;
}

size_t HeapBytesInUse() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
#else
  return 0;
#endif
}

std::string BudgetText(size_t bytes) {
  if (bytes % kMiB == 0) return StringPrintf("%zu MiB", bytes / kMiB);
  if (bytes < kMiB / 100) return StringPrintf("%zu byte%s", bytes, bytes == 1 ? "" : "s");
  return StringPrintf("%zu bytes (%.2f MiB)", bytes,
                      static_cast<double>(bytes) / static_cast<double>(kMiB));
}

}  // namespace pocket
