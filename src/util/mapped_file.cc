#include "util/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/file_io.h"

namespace pocket {

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path, const char* what,
                                                       uint64_t max_bytes) {
  POCKET_ASSIGN_OR_RETURN(RegularFile file, RegularFile::Open(path, what, max_bytes));
  if (file.size() == 0) {
    return Errorf(StatusCode::kCorruptFile, "'%s' is empty (0 bytes)", path.c_str());
  }
  const size_t size = static_cast<size_t>(file.size());
  // The mapping keeps the file alive; the descriptor closes on return.
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (p == MAP_FAILED) {
    return Errorf(StatusCode::kIoError, "cannot mmap '%s': %s", path.c_str(), std::strerror(errno));
  }
  return std::unique_ptr<MappedFile>(new MappedFile(path, static_cast<const uint8_t*>(p), size));
}

size_t MappedFile::Release(size_t offset, size_t size) const {
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (page_size <= 0 || offset >= size_) return 0;
  const size_t page = static_cast<size_t>(page_size);
  const size_t end = std::min(size_, size_ - offset < size ? size_ : offset + size) / page * page;
  const size_t begin = (offset + page - 1) / page * page;
  if (end <= begin) return 0;
  // MADV_DONTNEED on a private read-only file mapping only discards the
  // process's view of clean pages (posix_madvise's variant is a no-op on
  // glibc, hence madvise).
  if (::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED) != 0) return 0;
  return end - begin;
}

MappedFile::~MappedFile() { ::munmap(const_cast<uint8_t*>(data_), size_); }

}  // namespace pocket
