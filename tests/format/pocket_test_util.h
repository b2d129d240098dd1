// Test-side tools for .pocket files: an independent assembler that follows
// docs/format.md byte by byte (so the writer's output can be compared with
// it and hostile files can be built field by field), and helpers that patch
// a file and recompute its CRCs so corruption reaches the deeper checks.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/pocket_file.h"
#include "util/crc32c.h"

namespace pocket::testing {

using Bytes = std::vector<uint8_t>;

inline Bytes ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteFileBytes(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// The TempPath files of this process, removed when it exits.
inline std::vector<std::string>& TempPaths() {
  static std::vector<std::string>* paths = [] {
    std::atexit([] {
      for (const std::string& p : TempPaths()) std::remove(p.c_str());
    });
    return new std::vector<std::string>();
  }();
  return *paths;
}

// Unique per process: ctest runs tests of one binary in parallel processes.
inline std::string TempPath(const std::string& name) {
  std::string path =
      std::string(POCKET_BINARY_DIR) + "/format_test_" + std::to_string(::getpid()) + "_" + name;
  TempPaths().push_back(path);
  return path;
}

template <typename T>
void Append(Bytes* b, T v) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&v);
  b->insert(b->end(), p, p + sizeof(T));
}

inline uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// One tensor directory entry with every field under the test's control.
struct RawTensor {
  std::string name;
  uint8_t dtype = 0;
  uint8_t layout = 0;
  uint32_t group = 0;
  std::vector<uint64_t> dims;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
};

inline Bytes EncodeDirectory(const std::vector<RawTensor>& ts) {
  Bytes b;
  Append<uint32_t>(&b, static_cast<uint32_t>(ts.size()));
  for (const RawTensor& t : ts) {
    Append<uint16_t>(&b, static_cast<uint16_t>(t.name.size()));
    b.insert(b.end(), t.name.begin(), t.name.end());
    Append<uint8_t>(&b, t.dtype);
    Append<uint8_t>(&b, t.layout);
    Append<uint8_t>(&b, static_cast<uint8_t>(t.dims.size()));
    Append<uint8_t>(&b, 0);
    Append<uint32_t>(&b, t.group);
    for (uint64_t d : t.dims) Append<uint64_t>(&b, d);
    Append<uint64_t>(&b, t.offset);
    Append<uint64_t>(&b, t.nbytes);
  }
  return b;
}

struct RawSection {
  uint32_t kind;
  Bytes bytes;
  uint64_t align = 8;  // the data section uses kDataAlignment
};

inline Bytes ToBytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

inline FileHeader HeaderOf(const Bytes& file) {
  FileHeader h;
  std::memcpy(&h, file.data(), sizeof(h));
  return h;
}

inline void SetHeader(Bytes* file, FileHeader h) {
  h.header_crc32c = Crc32c(0, &h, 60);
  std::memcpy(file->data(), &h, sizeof(h));
}

inline std::vector<SectionEntry> TableOf(const Bytes& file) {
  const FileHeader h = HeaderOf(file);
  std::vector<SectionEntry> t(h.section_count);
  std::memcpy(t.data(), file.data() + h.table_offset, t.size() * sizeof(SectionEntry));
  return t;
}

// Writes `table` over the file's table and fixes the table and header CRCs.
inline void SetTable(Bytes* file, const std::vector<SectionEntry>& table) {
  FileHeader h = HeaderOf(*file);
  std::memcpy(file->data() + h.table_offset, table.data(), table.size() * sizeof(SectionEntry));
  h.table_crc32c = Crc32c(0, table.data(), table.size() * sizeof(SectionEntry));
  SetHeader(file, h);
}

// Recomputes every section CRC from the bytes, then the table and header.
inline void FixAllCrcs(Bytes* file) {
  std::vector<SectionEntry> table = TableOf(*file);
  for (SectionEntry& e : table) e.crc32c = Crc32c(0, file->data() + e.offset, e.size);
  SetTable(file, table);
}

// Lays out header, sections (each at its alignment) and the table as
// docs/format.md specifies, with correct CRCs.
inline Bytes Assemble(const std::vector<RawSection>& sections) {
  Bytes file(sizeof(FileHeader), 0);
  std::vector<SectionEntry> table;
  for (const RawSection& s : sections) {
    file.resize(AlignUp(file.size(), s.align), 0);
    SectionEntry e{};
    e.kind = s.kind;
    e.offset = file.size();
    e.size = s.bytes.size();
    e.crc32c = Crc32c(0, s.bytes.data(), s.bytes.size());
    table.push_back(e);
    file.insert(file.end(), s.bytes.begin(), s.bytes.end());
  }
  file.resize(AlignUp(file.size(), 8), 0);
  FileHeader h{};
  std::memcpy(h.magic, kPocketMagic, 8);
  h.major = kFormatMajor;
  h.minor = kFormatMinor;
  h.table_offset = file.size();
  h.section_count = static_cast<uint32_t>(table.size());
  h.file_size = file.size() + table.size() * sizeof(SectionEntry);
  const uint8_t* tp = reinterpret_cast<const uint8_t*>(table.data());
  file.insert(file.end(), tp, tp + table.size() * sizeof(SectionEntry));
  SetHeader(&file, h);
  FixAllCrcs(&file);
  return file;
}

// A standard file around a custom directory and data section.
inline Bytes AssembleWith(const std::vector<RawTensor>& dir, const Bytes& data,
                          const std::string& config = "{\"architecture\":\"llama\"}",
                          uint64_t data_align = kDataAlignment) {
  return Assemble({{1, ToBytes(config)},
                   {2, ToBytes("tok")},
                   {3, ToBytes("{\"nodes\":[]}")},
                   {4, EncodeDirectory(dir)},
                   {5, data, data_align}});
}

}  // namespace pocket::testing
