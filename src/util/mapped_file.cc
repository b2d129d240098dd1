#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

MappedFile::~MappedFile() { ::munmap(const_cast<uint8_t*>(data_), size_); }

}  // namespace pocket
