// Zero-copy reader of .pocket files. Open() maps the file read-only and
// validates the header, the section table, the CRCs of every section except
// data, and every tensor directory entry (dtype, shape, size, alignment,
// bounds, overlaps) with overflow-safe arithmetic. Tensor bytes are then read
// straight from the mapping; nothing is copied. Every error names what is
// wrong and where (section, tensor, byte offset).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/pocket_file.h"
#include "util/status.h"

namespace pocket {

class MappedFile;

class PocketFile {
 public:
  // Maps and validates `path`.
  static StatusOr<std::unique_ptr<PocketFile>> Open(const std::string& path);
  // Validates bytes already in memory (not copied; must outlive the
  // result). Used by tests and the fuzzer.
  static StatusOr<std::unique_ptr<PocketFile>> FromMemory(const uint8_t* data, size_t size);
  ~PocketFile();

  uint16_t major() const { return header_.major; }
  uint16_t minor() const { return header_.minor; }
  const uint8_t* bytes() const { return base_; }
  uint64_t size() const { return size_; }

  std::string_view config_json() const { return config_; }
  std::string_view graph_json() const { return graph_; }
  std::string_view tokenizer_blob() const { return tokenizer_; }
  const std::vector<SectionEntry>& sections() const { return sections_; }

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;
  // Pointer into the mapping; the entry was bounds-checked at open.
  const uint8_t* TensorData(const TensorInfo& t) const { return data_ + t.offset; }
  uint64_t data_offset() const { return static_cast<uint64_t>(data_ - base_); }
  uint64_t data_size() const { return data_size_; }

  // Drops the resident pages before the data section (header, config,
  // tokenizer, graph, directory) once the loader has parsed them into its own
  // structures; reading them again faults them back in. Returns the bytes
  // released; 0 for FromMemory files.
  size_t ReleaseMetadataPages() const;
  // Drops the resident pages wholly inside [offset, offset + size) of the
  // file the same way (the loader copied them elsewhere); 0 for FromMemory
  // files.
  size_t ReleasePages(uint64_t offset, uint64_t size) const;

  // Checks every section's CRC32C including the tensor data (reads the whole
  // file). The error lists each mismatching section.
  Status VerifyChecksums() const;

 private:
  PocketFile() = default;
  Status Parse();

  std::unique_ptr<MappedFile> mapping_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  FileHeader header_{};
  std::vector<SectionEntry> sections_;
  std::string_view config_, graph_, tokenizer_;
  const uint8_t* data_ = nullptr;
  uint64_t data_size_ = 0;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> by_name_;
};

}  // namespace pocket
