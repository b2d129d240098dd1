#include "util/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace pocket {
namespace {

Status OsError(const char* what, const std::string& path, int err) {
  const StatusCode code = err == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError;
  return Errorf(code, "cannot %s '%s': %s", what, path.c_str(), std::strerror(err));
}

// What a file that is not regular is, for messages.
const char* FileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// OK for a regular file; otherwise the error that says what `path` is.
Status CheckRegular(const std::string& path, mode_t mode, const char* what) {
  if (S_ISREG(mode)) return Status::Ok();
  if (S_ISDIR(mode)) {
    return Errorf(StatusCode::kInvalidArgument, "'%s' is a directory; give the path of a %s",
                  path.c_str(), what);
  }
  return Errorf(StatusCode::kInvalidArgument,
                "'%s' is %s, not a regular file; give the path of a %s", path.c_str(),
                FileKind(mode), what);
}

}  // namespace

StatusOr<RegularFile> RegularFile::Open(const std::string& path, const char* what,
                                        uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return OsError("open", path, errno);
  RegularFile file(path, fd, 0);
  struct stat st;
  if (::fstat(fd, &st) != 0) return OsError("stat", path, errno);
  POCKET_RETURN_IF_ERROR(CheckRegular(path, st.st_mode, what));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return Errorf(StatusCode::kInvalidArgument,
                  "'%s' is %llu bytes, larger than any %s (at most %llu bytes); check the path",
                  path.c_str(), static_cast<unsigned long long>(size), what,
                  static_cast<unsigned long long>(max_bytes));
  }
  // Reads of a regular file block whatever the flag says, except on file
  // systems with mandatory locks, where they would fail with EAGAIN.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  file.size_ = size;
  return file;
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    size_ = other.size_;
    other.fd_ = -1;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<size_t> RegularFile::Read(void* buf, size_t n) {
  for (;;) {
    const ssize_t got = ::read(fd_, buf, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return OsError("read", path_, errno);
  }
}

StatusOr<std::string> ReadRegularFile(const std::string& path, const char* what,
                                      uint64_t max_bytes) {
  POCKET_ASSIGN_OR_RETURN(RegularFile file, RegularFile::Open(path, what, max_bytes));
  // The size at open bounds the read: a file that grows meanwhile is read
  // as it was.
  std::string out(static_cast<size_t>(file.size()), '\0');
  size_t at = 0;
  while (at < out.size()) {
    POCKET_ASSIGN_OR_RETURN(size_t got, file.Read(&out[at], out.size() - at));
    if (got == 0) break;
    at += got;
  }
  out.resize(at);
  return out;
}

Status CheckWriteDestination(const std::string& path, const char* what) {
  struct stat st;
  // A destination that cannot be looked at (missing, or in a missing
  // directory) is left to the write, which reports why.
  if (::stat(path.c_str(), &st) != 0) return Status::Ok();
  if (S_ISREG(st.st_mode)) return Status::Ok();
  return Errorf(StatusCode::kInvalidArgument,
                "'%s' exists and is %s; Pocket writes a %s only to a new path or over a regular "
                "file, so give another path",
                path.c_str(), S_ISDIR(st.st_mode) ? "a directory" : FileKind(st.st_mode), what);
}

AtomicFileWriter::~AtomicFileWriter() { Discard(); }

void AtomicFileWriter::Discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

Status AtomicFileWriter::Open(const std::string& path, const char* what) {
  Discard();
  path_ = path;
  what_ = what;
  err_ = 0;
  POCKET_RETURN_IF_ERROR(CheckWriteDestination(path, what));
  const std::string tmp = path + ".tmp";
  // O_NONBLOCK and O_NOFOLLOW: a FIFO left at the temporary path must not
  // block the open, and a link there must not redirect the write.
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Errorf(StatusCode::kIoError, "cannot create '%s', the temporary file for '%s': %s",
                  tmp.c_str(), path.c_str(), std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Errorf(StatusCode::kInvalidArgument,
                  "'%s' (the temporary file for '%s') exists and is not a regular file; remove "
                  "it or give another path",
                  tmp.c_str(), path.c_str());
  }
  fd_ = fd;
  tmp_ = tmp;
  return Status::Ok();
}

void AtomicFileWriter::Write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (err_ == 0 && size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno != EINTR) err_ = errno;
      continue;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

Status AtomicFileWriter::Commit() {
  if (fd_ < 0) {
    return Errorf(StatusCode::kInternal, "AtomicFileWriter::Commit of '%s' without Open",
                  path_.c_str());
  }
  // Flushed to disk before the rename, so a crash never leaves a renamed
  // but incomplete file.
  if (err_ == 0 && ::fsync(fd_) != 0) err_ = errno;
  if (::close(fd_) != 0 && err_ == 0) err_ = errno;
  fd_ = -1;
  if (err_ != 0) {
    const int err = err_;
    Discard();
    return Errorf(StatusCode::kIoError, "cannot write '%s': %s", path_.c_str(), std::strerror(err));
  }
  // Checked again: the destination may have been replaced while writing.
  Status dest = CheckWriteDestination(path_, what_);
  if (!dest.ok()) {
    Discard();
    return dest;
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    Discard();
    return Errorf(StatusCode::kIoError, "cannot write '%s': %s", path_.c_str(), std::strerror(err));
  }
  tmp_.clear();
  return Status::Ok();
}

}  // namespace pocket
