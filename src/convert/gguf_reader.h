// Bounds-checked reader of GGUF files (versions 2 and 3), the format
// llama.cpp writes: a header (magic "GGUF", version, tensor count, metadata
// count), metadata key/value pairs, tensor infos (name, dims, ggml type,
// offset), padding to `general.alignment` (default 32), then the tensor
// data. Every count, string length, dimension, type and offset is checked
// against the bytes that are there before it is used, and every error is
// CorruptFile (Unsupported for a valid file Pocket cannot read) naming what
// is wrong. Nothing is copied: strings and tensor bytes point into the
// mapping, which the GgufFile keeps alive.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace pocket {

class MappedFile;

// Metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
const char* GgufTypeName(GgufType t);  // "uint32", "string", "array", ...

// ggml tensor types that Pocket converts or names in its errors, numbered
// as in the file.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kBF16 = 30,
};
// "Q4_1", or "type 99" for a number ggml does not define.
std::string GgmlTypeName(uint32_t type);
// Weights per block and bytes per block; false for a type number ggml does
// not define (or no longer defines).
bool GgmlBlockSize(uint32_t type, uint32_t* block, uint32_t* bytes);

struct GgufValue {
  GgufType type = GgufType::kU8;
  // Scalars: the value widened (signed integers in `i`, unsigned ones and
  // bools in `u`, floats in `f`), strings in `str`.
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0.0;
  std::string_view str;
  // Arrays (nested arrays are refused): the element type, count and first
  // element's bytes; string arrays also as views.
  GgufType elem = GgufType::kU8;
  uint64_t count = 0;
  const uint8_t* elems = nullptr;
  std::vector<std::string_view> strings;

  bool IsInteger() const;  // any integer type (not bool)
  // An integer scalar as int64; false for other types and a uint64 above
  // INT64_MAX.
  bool AsInt(int64_t* out) const;
  bool IsFloat() const { return type == GgufType::kF32 || type == GgufType::kF64; }
  // Element `index` of a numeric array, widened (caller checks the range).
  double ArrayNumber(uint64_t index) const;
};

struct GgufTensor {
  std::string name;
  std::vector<uint64_t> dims;  // as in the file: dims[0] varies fastest
  uint32_t type = 0;           // ggml type number
  uint64_t offset = 0;         // absolute byte offset in the file
  uint64_t nbytes = 0;
  // The row-major shape ({dims[n-1], ..., dims[0]}), as .pocket stores it.
  std::vector<uint64_t> Shape() const;
  uint64_t Elements() const;
};

class GgufFile {
 public:
  // Maps and parses `path`; errors start with the path.
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses bytes the caller keeps alive for the GgufFile's lifetime.
  static StatusOr<std::unique_ptr<GgufFile>> FromMemory(const uint8_t* data, size_t size);
  // Whether `path` starts with the GGUF magic (false when unreadable).
  static bool HasMagic(const std::string& path);
  ~GgufFile();

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const uint8_t* data() const { return base_; }
  uint64_t size() const { return size_; }

  // Keys in file order, and lookup by key (nullptr when absent).
  const std::vector<std::string>& keys() const { return keys_; }
  const GgufValue* Find(const std::string& key) const;
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* FindTensor(const std::string& name) const;
  const uint8_t* TensorData(const GgufTensor& t) const { return base_ + t.offset; }

 private:
  GgufFile() = default;
  Status Parse();

  std::unique_ptr<MappedFile> mapping_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::string> keys_;
  std::map<std::string, GgufValue, std::less<>> values_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace pocket
