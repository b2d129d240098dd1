// libFuzzer target for the .pocket reader and the parsers behind it: any
// byte string must either be refused with a Status or yield a file whose
// every tensor lies inside the buffer, and a config and graph the planner
// either refuses or plans. ASan catches a read past the end; UBSan catches
// overflow.
//
// Two kinds of input:
//  - a whole file (anything not starting with byte 0, 1 or 2): opened as
//    given and with every CRC recomputed, so mutations reach the structural
//    checks behind the checksums; what opens goes on to the config parser
//    and the planner.
//  - byte 0, 1 or 2, then JSON: the config section (0), the graph section
//    (1), or both split at the first NUL (2) of a real model (stories260K,
//    converted from $POCKET_TEST_DATA at start) are replaced by it, with the
//    section table and checksums rewritten, and the model is loaded through
//    the planner. Mutations of the JSON reach ParseModelConfig,
//    ValidateModelConfig and BuildPlan.
//
// Seeds: format_tests writes valid files to <build>/fuzz_corpus/reader and
// runtime_tests the stories260K config and graph in the second form
// (docs/format.md, "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "format/model_config.h"
#include "format/reader.h"
#include "graph/plan.h"
#include "stories_model.h"
#include "util/crc32c.h"

namespace {

using pocket::FileHeader;
using pocket::SectionEntry;
using pocket::SectionKind;

// Rewrites every CRC the table describes so that mutated inputs get past the
// checksum checks and exercise the structural checks behind them.
void FixChecksums(std::vector<uint8_t>* b) {
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

// What Model::Load does with an open file's config and graph, short of the
// tokenizer (tokenizer_fuzz covers it) and the thread pool.
void Plan(const pocket::PocketFile& f) {
  auto config = pocket::ParseModelConfig(std::string(f.config_json()));
  if (!config.ok() || !pocket::ValidateModelConfig(*config).ok()) return;
  (void)pocket::BuildPlan(f.graph_json(), f, *config);
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
  Plan(f);
}

// The stories260K model's bytes, read once.
const std::vector<uint8_t>& SeedModel() {
  static const std::vector<uint8_t> bytes = [] {
    const std::string path = pocket::fuzz::ConvertStoriesModel();
    auto f = pocket::PocketFile::Open(path);
    std::remove(path.c_str());
    if (!f.ok()) __builtin_trap();
    return std::vector<uint8_t>((*f)->bytes(), (*f)->bytes() + (*f)->size());
  }();
  return bytes;
}

void AlignTo8(std::vector<uint8_t>* b) { b->resize((b->size() + 7) / 8 * 8, 0); }

// The seed model with the config and/or graph sections replaced: the new
// bytes go after the seed's sections (which stay as unreferenced bytes), the
// section table after them, and every checksum is recomputed.
std::vector<uint8_t> WithSections(const std::string_view* config, const std::string_view* graph) {
  const std::vector<uint8_t>& seed = SeedModel();
  FileHeader h;
  std::memcpy(&h, seed.data(), sizeof(h));
  std::vector<SectionEntry> table(h.section_count);
  std::memcpy(table.data(), seed.data() + h.table_offset, table.size() * sizeof(SectionEntry));
  std::vector<uint8_t> out(seed.begin(), seed.begin() + static_cast<ptrdiff_t>(h.table_offset));
  for (SectionEntry& e : table) {
    const std::string_view* text = nullptr;
    if (e.kind == static_cast<uint32_t>(SectionKind::kConfig)) text = config;
    if (e.kind == static_cast<uint32_t>(SectionKind::kGraph)) text = graph;
    if (text == nullptr) continue;
    AlignTo8(&out);
    e.offset = out.size();
    e.size = text->size();
    out.insert(out.end(), text->begin(), text->end());
  }
  AlignTo8(&out);
  h.table_offset = out.size();
  const auto* t = reinterpret_cast<const uint8_t*>(table.data());
  out.insert(out.end(), t, t + table.size() * sizeof(SectionEntry));
  h.file_size = out.size();
  std::memcpy(out.data(), &h, sizeof(h));
  FixChecksums(&out);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 1 && data[0] <= 2) {
    const std::string_view json(reinterpret_cast<const char*>(data) + 1, size - 1);
    std::string_view config = json, graph = json;
    if (data[0] == 2) {
      const size_t nul = json.find('\0');
      config = json.substr(0, nul);
      graph = nul == std::string_view::npos ? std::string_view() : json.substr(nul + 1);
    }
    const std::vector<uint8_t> file =
        WithSections(data[0] != 1 ? &config : nullptr, data[0] != 0 ? &graph : nullptr);
    Exercise(std::vector<uint8_t>(file));  // an exact-size copy, as below
    return 0;
  }
  // Exact-size heap copies so ASan sees any read past the end.
  std::vector<uint8_t> bytes(data, data + size);
  Exercise(bytes);
  FixChecksums(&bytes);
  Exercise(bytes);
  return 0;
}
