// The .pocket file, version 1: constants and the parsed views a reader hands
// out. Byte layout (little-endian; docs/format.md is the full spec):
//
//   [FileHeader, 64 bytes]
//   [sections ...]            config (JSON), tokenizer (blob), graph (JSON),
//                             tensors (binary directory), data (16 KiB aligned)
//   [section table]           SectionEntry x section_count
//
// The header's CRC32C covers its first 60 bytes; the table has its own CRC in
// the header; each section has a CRC32C of its bytes in its table entry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/dtype.h"

namespace pocket {

constexpr char kPocketMagic[8] = {'P', 'O', 'C', 'K', 'E', 'T', 0x1A, 0};
constexpr uint16_t kFormatMajor = 1;
constexpr uint16_t kFormatMinor = 0;
constexpr uint64_t kDataAlignment = 16384;  // Apple's page size
constexpr uint64_t kTensorAlignment = 64;   // a cache line / SIMD load
constexpr uint32_t kMaxTensorDims = 4;
constexpr uint32_t kMaxTensorNameLength = 256;

enum class SectionKind : uint32_t {
  kConfig = 1,
  kTokenizer = 2,
  kGraph = 3,
  kTensors = 4,
  kData = 5,
};
const char* SectionKindName(SectionKind kind);

#pragma pack(push, 1)
struct FileHeader {
  char magic[8];
  uint16_t major;
  uint16_t minor;
  uint32_t flags;         // 0 in version 1.0
  uint64_t file_size;     // total bytes; a shorter file is truncated
  uint64_t table_offset;  // section table
  uint32_t section_count;
  uint32_t table_crc32c;   // CRC32C of the section table bytes
  uint8_t reserved[20];    // zero
  uint32_t header_crc32c;  // CRC32C of the 60 bytes above
};
static_assert(sizeof(FileHeader) == 64, "header is 64 bytes");

struct SectionEntry {
  uint32_t kind;   // SectionKind; unknown kinds are skipped
  uint32_t flags;  // 0
  uint64_t offset;
  uint64_t size;
  uint32_t crc32c;
  uint32_t reserved;  // 0
};
static_assert(sizeof(SectionEntry) == 32, "entry is 32 bytes");
#pragma pack(pop)

// One entry of the tensor directory, validated by the reader.
struct TensorInfo {
  std::string name;  // GGUF-style, e.g. "blk.3.attn_q.weight"
  DType dtype = DType::kF32;
  TensorLayout layout = TensorLayout::kRowMajor;  // dtype.h; the converter picks it
  uint32_t group = 0;                             // quantization group (0 if none)
  std::vector<uint64_t> shape;                    // row-major, outermost first: [rows, cols]
  uint64_t offset = 0;                            // from the start of the data section
  uint64_t nbytes = 0;

  uint64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  uint64_t rows() const;  // product of all but the last dim
  uint64_t elements() const;
};

}  // namespace pocket
