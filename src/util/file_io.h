// Reading and writing the files Pocket opens by path. A path may name
// anything: open() of a FIFO blocks until a writer appears, a FIFO or
// /dev/zero then reads without end, a directory fails with an error that
// says nothing useful, and renaming a finished file over a device node or
// FIFO replaces it with a regular file. Every file Pocket reads or writes
// by path goes through here, so each of those is refused with a message
// that names the path, what it is and what to give instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "util/status.h"

namespace pocket {

// A regular file open for reading; the descriptor is closed when destroyed.
class RegularFile {
 public:
  // Opens `path` without blocking (O_NONBLOCK: open() of a FIFO would
  // otherwise wait for a writer) and refuses anything but a regular file
  // (symbolic links are followed), and one larger than `max_bytes`, the
  // most a `what` can be. `what` names the file in messages, as in "give
  // the path of a <what>": "session state file".
  static StatusOr<RegularFile> Open(const std::string& path, const char* what,
                                    uint64_t max_bytes = UINT64_MAX);

  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }  // at Open

  // Reads up to `n` bytes at the current position; 0 at the end of the file.
  StatusOr<size_t> Read(void* buf, size_t n);

 private:
  RegularFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole of the regular file at `path` (RegularFile::Open), refused
// before anything is read when it is larger than `max_bytes`.
StatusOr<std::string> ReadRegularFile(const std::string& path, const char* what,
                                      uint64_t max_bytes);

// The most a text file read whole is allowed to be (a model's tokenizer.json,
// config.json, a SentencePiece model, a text to score): far above any real
// one (a 150K-token tokenizer.json is 11 MiB), and bounded so that a wrong
// path cannot fill memory.
constexpr uint64_t kMaxTextFileBytes = uint64_t{1} << 30;

// Refuses a destination `path` that exists and is not a regular file (a
// directory, FIFO, device node or socket, or a symbolic link to one), which
// writing a file and renaming it over `path` would replace.
Status CheckWriteDestination(const std::string& path, const char* what);

// Writes a file as a whole: the bytes go to "<path>.tmp", which Commit()
// flushes to disk and renames over <path>, so a failed or interrupted write
// never leaves a half-written file at <path>. Open() and Commit() refuse a
// destination that is not a regular file (CheckWriteDestination).
class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  // Removes the temporary file unless Commit() succeeded.
  ~AtomicFileWriter();

  Status Open(const std::string& path, const char* what);
  // The first failure is kept and reported by Commit(); later writes do
  // nothing.
  void Write(const void* data, size_t size);
  Status Commit();

 private:
  void Discard();

  std::string path_, tmp_;
  const char* what_ = "";
  int fd_ = -1;
  int err_ = 0;
};

}  // namespace pocket
