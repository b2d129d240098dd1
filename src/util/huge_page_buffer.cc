#include "util/huge_page_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace pocket {

StatusOr<std::unique_ptr<HugePageBuffer>> HugePageBuffer::Allocate(size_t bytes) {
  if (bytes == 0) {
    return Errorf(StatusCode::kInvalidArgument, "a huge-page buffer needs at least 1 byte");
  }
  if (bytes > SIZE_MAX - 2 * kPageBytes) {
    return Errorf(StatusCode::kBudgetExceeded, "a huge-page buffer of %zu bytes is too large",
                  bytes);
  }
  const size_t size = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
  // mmap aligns to the OS page only: map one huge page more and start at
  // the first 2 MiB boundary inside.
  const size_t mapping_size = size + kPageBytes;
  void* mapping =
      ::mmap(nullptr, mapping_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    return Errorf(StatusCode::kBudgetExceeded, "cannot map %zu bytes of memory: %s", mapping_size,
                  std::strerror(errno));
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(mapping);
  uint8_t* data = reinterpret_cast<uint8_t*>((start + kPageBytes - 1) / kPageBytes * kPageBytes);
#if defined(MADV_HUGEPAGE)
  // Advice only: where the kernel has no transparent huge pages this fails
  // and the buffer stays in ordinary pages.
  (void)::madvise(data, size, MADV_HUGEPAGE);
#endif
  return std::unique_ptr<HugePageBuffer>(new HugePageBuffer(mapping, mapping_size, data, size));
}

HugePageBuffer::~HugePageBuffer() { ::munmap(mapping_, mapping_size_); }

}  // namespace pocket
