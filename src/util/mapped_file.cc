#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pocket {
namespace {

Status OsError(const char* what, const std::string& path, int err) {
  const StatusCode code = err == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError;
  return Errorf(code, "cannot %s '%s': %s", what, path.c_str(), std::strerror(err));
}

}  // namespace

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OsError("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return OsError("stat", path, err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Errorf(StatusCode::kInvalidArgument, "'%s' is a directory, not a file", path.c_str());
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Errorf(StatusCode::kInvalidArgument, "'%s' is not a regular file", path.c_str());
  }
  if (st.st_size == 0) {
    ::close(fd);
    return Errorf(StatusCode::kCorruptFile, "'%s' is empty (0 bytes)", path.c_str());
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  // The mapping keeps the file alive; the descriptor is no longer needed.
  ::close(fd);
  if (p == MAP_FAILED) return OsError("mmap", path, err);
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
