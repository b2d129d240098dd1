// libFuzzer target for the .pocket reader: any byte string must either be
// refused with a Status or yield a file whose every tensor lies inside the
// buffer. ASan catches a read past the end; UBSan catches overflow.
//
// Seeds: format_tests writes valid files to <build>/fuzz_corpus/reader
// (docs/format.md, "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "format/reader.h"
#include "util/crc32c.h"

namespace {

// Rewrites every CRC the table describes so that mutated inputs get past the
// checksum checks and exercise the structural checks behind them.
void FixChecksums(std::vector<uint8_t>* b) {
  using pocket::FileHeader;
  using pocket::SectionEntry;
  if (b->size() < sizeof(FileHeader)) return;
  FileHeader h;
  std::memcpy(&h, b->data(), sizeof(h));
  const uint64_t n = b->size();
  const uint64_t count = h.section_count;
  if (h.table_offset > n || count > (n - h.table_offset) / sizeof(SectionEntry)) return;
  uint8_t* table = b->data() + h.table_offset;
  for (uint64_t i = 0; i < count; ++i) {
    SectionEntry e;
    std::memcpy(&e, table + i * sizeof(e), sizeof(e));
    if (e.offset > n || e.size > n - e.offset) continue;
    e.crc32c = pocket::Crc32c(0, b->data() + e.offset, e.size);
    std::memcpy(table + i * sizeof(e), &e, sizeof(e));
  }
  h.table_crc32c = pocket::Crc32c(0, table, count * sizeof(SectionEntry));
  h.header_crc32c = pocket::Crc32c(0, &h, offsetof(FileHeader, header_crc32c));
  std::memcpy(b->data(), &h, sizeof(h));
}

void Exercise(const std::vector<uint8_t>& bytes) {
  auto file = pocket::PocketFile::FromMemory(bytes.data(), bytes.size());
  if (!file.ok()) return;
  const pocket::PocketFile& f = **file;
  volatile uint8_t sink = 0;
  for (const pocket::TensorInfo& t : f.tensors()) {
    const uint8_t* p = f.TensorData(t);
    sink = sink ^ p[0] ^ p[t.nbytes - 1];
    if (f.FindTensor(t.name) != &t) __builtin_trap();
  }
  for (char c : f.config_json()) sink = sink ^ static_cast<uint8_t>(c);
  for (char c : f.tokenizer_blob()) sink = sink ^ static_cast<uint8_t>(c);
  (void)f.VerifyChecksums();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Exact-size heap copies so ASan sees any read past the end.
  std::vector<uint8_t> bytes(data, data + size);
  Exercise(bytes);
  FixChecksums(&bytes);
  Exercise(bytes);
  return 0;
}
