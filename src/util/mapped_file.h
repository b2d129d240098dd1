// A read-only memory mapping of a whole file (PROT_READ, MAP_PRIVATE). The
// .pocket reader and the CPU backend read weights straight from it, so model
// loading copies nothing (unless ModelOptions::huge_pages asks for a copy).
// Unmapped when destroyed; not copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "util/status.h"

namespace pocket {

class MappedFile {
 public:
  // Errors (IoError / NotFound / InvalidArgument) name the path and the OS
  // reason: a missing file, a directory or other file that is not regular
  // or one larger than `max_bytes` (RegularFile::Open, which `what` and
  // `max_bytes` are passed to), an empty file, a failed mmap (an address
  // space limit reached fails here, as a status).
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path,
                                                    const char* what = "file",
                                                    uint64_t max_bytes = UINT64_MAX);
  ~MappedFile();

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Drops the resident pages wholly inside [offset, offset + size) from this
  // process's memory; a later read faults them back in from the file, so
  // nothing is lost. For ranges that were parsed into other structures at
  // load (tokenizer, graph) and would otherwise count against the memory
  // budget until unloaded. Returns the bytes released (0 where the OS
  // declines).
  size_t Release(size_t offset, size_t size) const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace pocket
