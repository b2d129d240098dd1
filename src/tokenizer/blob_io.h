// Little-endian, bounds-checked reading and writing of the tokenizer blob
// (docs/tokenizers.md has the layout). The reader never reads past the end:
// every failure is a CorruptFile status naming the field and byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace pocket::tok {

constexpr char kBlobMagic[4] = {'P', 'K', 'T', 'K'};
constexpr uint32_t kBlobVersion = 1;

class BlobWriter {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v);
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void U64(uint64_t v);
  void Bytes(std::string_view b) { out_.append(b); }
  void Header(TokenizerKind kind);
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class BlobReader {
 public:
  explicit BlobReader(std::string_view data) : data_(data) {}
  Status U8(const char* what, uint8_t* v);
  Status U32(const char* what, uint32_t* v);
  Status I32(const char* what, int32_t* v);
  Status U64(const char* what, uint64_t* v);
  Status Bytes(const char* what, uint64_t n, std::string_view* v);
  // `count` little-endian 32-bit values (count checked against what is left
  // before anything is allocated).
  Status U32Array(const char* what, uint64_t count, std::vector<uint32_t>* v);
  Status I32Array(const char* what, uint64_t count, std::vector<int32_t>* v);
  // Fails unless every byte was consumed.
  Status ExpectEnd() const;
  size_t offset() const { return pos_; }

 private:
  Status Need(const char* what, uint64_t n) const;
  std::string_view data_;
  size_t pos_ = 0;
};

// Validates magic and version and returns the kind byte.
Status ReadBlobHeader(BlobReader* r, uint8_t* kind);

}  // namespace pocket::tok
