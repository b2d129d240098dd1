// Truncated, bit-flipped and hand-crafted hostile files: every one must be
// refused with a message naming what is wrong and where, never a crash.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

#include "format/pocket_test_util.h"
#include "format/reader.h"
#include "format/small_model.h"

namespace pocket {
namespace {

using testing::Bytes;
using testing::RawTensor;

Bytes SmallModelBytes() {
  const std::string path = testing::TempPath("corrupt_base.pocket");
  Status s = testing::WriteSmallModel(path);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return testing::ReadFileBytes(path);
}

Status OpenBytes(const Bytes& b) { return PocketFile::FromMemory(b.data(), b.size()).status(); }

void ExpectError(const Status& s, StatusCode code, const std::vector<std::string>& parts) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
  }
}

void ExpectCorrupt(const Bytes& b, const std::vector<std::string>& parts) {
  ExpectError(OpenBytes(b), StatusCode::kCorruptFile, parts);
}

// Two f32 [16] tensors (64 bytes each) back to back: the base every crafted
// directory below modifies one field of.
std::vector<RawTensor> TwoTensors() {
  return {{"a.weight", 0, 0, 0, {16}, 0, 64}, {"b.weight", 0, 0, 0, {16}, 64, 64}};
}
const Bytes kData(128, 7);

TEST(ReaderCorruption, AssembledBaseOpens) {
  // The crafted files below differ from this one in a single field.
  const Bytes b = testing::AssembleWith(TwoTensors(), kData);
  EXPECT_TRUE(OpenBytes(b).ok()) << OpenBytes(b).ToString();
}

TEST(ReaderCorruption, TruncationAtSectionBoundariesAndRandomPoints) {
  const Bytes full = SmallModelBytes();
  std::vector<size_t> cuts = {0, 1, 8, 63, 64};
  for (const SectionEntry& e : testing::TableOf(full)) {
    cuts.push_back(e.offset);
    cuts.push_back(e.offset + e.size);
    if (e.size > 0) cuts.push_back(e.offset + e.size / 2);
  }
  const FileHeader h = testing::HeaderOf(full);
  cuts.push_back(h.table_offset);
  cuts.push_back(full.size() - 1);
  std::mt19937 rng(99);
  for (int i = 0; i < 200; ++i) cuts.push_back(rng() % full.size());
  for (size_t cut : cuts) {
    ASSERT_LT(cut, full.size());
    const Bytes part(full.begin(), full.begin() + cut);
    Status s = OpenBytes(part);
    EXPECT_EQ(s.code(), StatusCode::kCorruptFile) << "cut at " << cut;
    EXPECT_NE(s.message().find("truncated"), std::string::npos)
        << "cut at " << cut << ": " << s.message();
  }
  // The exact message for a file cut after its header.
  const Bytes part(full.begin(), full.begin() + 100);
  ExpectCorrupt(part, {"truncated: header says " + std::to_string(full.size()) +
                       " bytes, file has 100; re-download or re-convert"});
}

TEST(ReaderCorruption, TruncatedFileOnDiskNamesThePath) {
  const Bytes full = SmallModelBytes();
  const std::string path = testing::TempPath("truncated.pocket");
  testing::WriteFileBytes(path, Bytes(full.begin(), full.begin() + 20000));
  Status s = PocketFile::Open(path).status();
  ExpectError(s, StatusCode::kCorruptFile, {path, "truncated"});
}

TEST(ReaderCorruption, FlipsInCheckedBytesFailOpen) {
  const Bytes full = SmallModelBytes();
  const FileHeader h = testing::HeaderOf(full);
  // Every byte the header, the table and the metadata sections cover.
  std::vector<size_t> covered;
  for (size_t i = 0; i < 64; ++i) covered.push_back(i);
  for (size_t i = h.table_offset; i < full.size(); ++i) covered.push_back(i);
  for (const SectionEntry& e : testing::TableOf(full)) {
    if (e.kind == static_cast<uint32_t>(SectionKind::kData)) continue;
    for (size_t i = e.offset; i < e.offset + e.size; ++i) covered.push_back(i);
  }
  std::mt19937 rng(7);
  for (size_t pos : covered) {
    Bytes b = full;
    b[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    Status s = OpenBytes(b);
    EXPECT_FALSE(s.ok()) << "flip at byte " << pos;
  }
}

TEST(ReaderCorruption, FlipsInDataOpenButFailVerify) {
  const Bytes full = SmallModelBytes();
  SectionEntry data{};
  for (const SectionEntry& e : testing::TableOf(full)) {
    if (e.kind == static_cast<uint32_t>(SectionKind::kData)) data = e;
  }
  ASSERT_GT(data.size, 0u);
  std::mt19937 rng(3);
  for (int i = 0; i < 50; ++i) {
    Bytes b = full;
    const size_t pos = data.offset + rng() % data.size;
    b[pos] ^= static_cast<uint8_t>(1 + rng() % 255);
    StatusOr<std::unique_ptr<PocketFile>> f = PocketFile::FromMemory(b.data(), b.size());
    ASSERT_TRUE(f.ok()) << "flip at " << pos << ": " << f.status().ToString();
    Status s = (*f)->VerifyChecksums();
    ExpectError(s, StatusCode::kCorruptFile, {"data section (offset 16384"});
    EXPECT_EQ(s.message().find("config"), std::string::npos) << s.message();
  }
}

TEST(ReaderCorruption, VerifyNamesEverySectionThatChanged) {
  // Mimics a file modified on disk after it was opened.
  Bytes b = SmallModelBytes();
  StatusOr<std::unique_ptr<PocketFile>> f = PocketFile::FromMemory(b.data(), b.size());
  ASSERT_TRUE(f.ok());
  const std::vector<SectionEntry> table = testing::TableOf(b);
  b[table[0].offset] ^= 1;  // config
  b[table[4].offset] ^= 1;  // data
  Status s = (*f)->VerifyChecksums();
  ExpectError(s, StatusCode::kCorruptFile, {"config section", "data section"});
  EXPECT_EQ(s.message().find("graph"), std::string::npos);
}

TEST(ReaderCorruption, NotAPocketFile) {
  Bytes b = SmallModelBytes();
  b[0] = 'G';
  ExpectCorrupt(b, {"not a .pocket file"});
  ExpectCorrupt(Bytes(64, 0), {"not a .pocket file"});
}

TEST(ReaderCorruption, NewerMajorVersionAsksToUpgrade) {
  Bytes b = SmallModelBytes();
  FileHeader h = testing::HeaderOf(b);
  h.major = 2;
  h.minor = 3;
  testing::SetHeader(&b, h);
  ExpectError(OpenBytes(b), StatusCode::kUnsupported,
              {"file format version 2.3 is newer than this build supports (1.x); upgrade Pocket"});
}

TEST(ReaderCorruption, NewerMinorVersionAndUnknownSectionsAreAccepted) {
  Bytes b = testing::Assemble({{1, testing::ToBytes("{}")},
                               {77, testing::ToBytes("from the future")},
                               {2, {}},
                               {3, testing::ToBytes("{}")},
                               {4, testing::EncodeDirectory(TwoTensors())},
                               {5, kData, kDataAlignment}});
  FileHeader h = testing::HeaderOf(b);
  h.minor = 9;
  testing::SetHeader(&b, h);
  StatusOr<std::unique_ptr<PocketFile>> f = PocketFile::FromMemory(b.data(), b.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->minor(), 9);
  EXPECT_EQ((*f)->tensors().size(), 2u);
  EXPECT_TRUE((*f)->VerifyChecksums().ok());
}

TEST(ReaderCorruption, HeaderAndTableChecks) {
  const Bytes base = SmallModelBytes();
  {
    Bytes b = base;
    b[20] ^= 1;  // file_size, CRC left stale
    ExpectCorrupt(b, {"header checksum mismatch"});
  }
  {
    Bytes b = base;
    b.push_back(0);
    ExpectCorrupt(b, {"1 unexpected trailing bytes"});
  }
  {
    Bytes b = base;
    FileHeader h = testing::HeaderOf(b);
    h.table_offset = std::numeric_limits<uint64_t>::max() - 8;
    testing::SetHeader(&b, h);
    ExpectCorrupt(b, {"section table", "outside"});
  }
  {
    Bytes b = base;
    FileHeader h = testing::HeaderOf(b);
    h.section_count = 0x40000000u;
    testing::SetHeader(&b, h);
    ExpectCorrupt(b, {"section table", "outside"});
  }
  {
    Bytes b = base;
    b[testing::HeaderOf(b).table_offset + 3] ^= 0x10;
    ExpectCorrupt(b, {"section table checksum mismatch"});
  }
}

TEST(ReaderCorruption, SectionTableChecks) {
  const Bytes base = SmallModelBytes();
  const std::vector<SectionEntry> table = testing::TableOf(base);
  auto with = [&](auto edit) {
    Bytes b = base;
    std::vector<SectionEntry> t = table;
    edit(&t);
    testing::SetTable(&b, t);
    return b;
  };
  ExpectCorrupt(with([](auto* t) { (*t)[2].offset = std::numeric_limits<uint64_t>::max() - 4; }),
                {"section 2 (graph)", "outside the file"});
  ExpectCorrupt(with([](auto* t) { (*t)[1].offset = 10; }), {"section 1 (tokenizer)", "outside"});
  ExpectCorrupt(with([](auto* t) { (*t)[1].offset = (*t)[0].offset; }),
                {"sections config", "tokenizer", "overlap"});
  ExpectCorrupt(with([&](auto* t) { (*t)[2].offset = testing::HeaderOf(base).table_offset; }),
                {"graph", "overlaps the section table"});
  ExpectCorrupt(with([](auto* t) { (*t)[1].kind = 1; }), {"config section twice"});
  ExpectCorrupt(with([](auto* t) { (*t)[1].kind = 42; }), {"no tokenizer section"});
  ExpectCorrupt(with([](auto* t) { (*t)[3].crc32c ^= 1; }), {"tensors section checksum mismatch"});
}

TEST(ReaderCorruption, DataSectionMustBe16KiBAligned) {
  const Bytes b = testing::AssembleWith(TwoTensors(), kData, "{}", 4096);
  ExpectCorrupt(b, {"data section offset 4096 is not a multiple of 16384"});
}

TEST(ReaderCorruption, BadJsonInConfigAndGraph) {
  ExpectCorrupt(testing::AssembleWith(TwoTensors(), kData, "{\"a\":"), {"config section"});
  ExpectCorrupt(testing::AssembleWith(TwoTensors(), kData, "[1,2]"),
                {"config section must be a JSON object"});
  const Bytes b = testing::Assemble({{1, testing::ToBytes("{}")},
                                     {2, {}},
                                     {3, testing::ToBytes("nodes")},
                                     {4, testing::EncodeDirectory(TwoTensors())},
                                     {5, kData, kDataAlignment}});
  ExpectCorrupt(b, {"graph section"});
}

struct HostileCase {
  const char* what;
  void (*edit)(std::vector<RawTensor>*);
  std::vector<std::string> expect;
};

// rows16 holds q4 and q8 tensors of 16 k rows (counting the leading dims);
// the cases above refuse the others.
TEST(ReaderCorruption, Rows16HoldsQ4AndQ8WithRowsAMultipleOf16) {
  const std::vector<RawTensor> dir = {
      {"q8.weight", 3, 1, 32, {16, 32}, 0, 16 * 32 + 16 * 2},          // 544 bytes
      {"q8_3d.weight", 3, 1, 32, {2, 16, 64}, 576, 32 * 64 + 32 * 4},  // 2176
      {"q4.weight", 4, 1, 32, {32, 64}, 2752, 32 * 32 + 32 * 2 * 4},   // 1280
  };
  const Bytes b = testing::AssembleWith(dir, Bytes(4096, 7));
  auto file = PocketFile::FromMemory(b.data(), b.size());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  for (const RawTensor& t : dir) {
    const TensorInfo* info = (*file)->FindTensor(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->layout, TensorLayout::kRows16) << t.name;
  }
}

TEST(ReaderCorruption, HostileTensorDirectories) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const HostileCase cases[] = {
      {"overlap", [](auto* t) { (*t)[1].offset = 0; }, {"'a.weight' and 'b.weight' overlap"}},
      {"out of range",
       [](auto* t) { (*t)[1].offset = 1024; },
       {"tensor 'b.weight'", "outside the 128-byte data section"}},
      {"offset overflow",
       [](auto* t) { (*t)[1].offset = kMax - 63; },
       {"tensor 'b.weight'", "outside"}},
      {"unaligned", [](auto* t) { (*t)[1].offset = 32; }, {"'b.weight'", "not a multiple of 64"}},
      {"absurd dims",
       [](auto* t) {
         (*t)[0].dims = {1ull << 32, 1ull << 32, 2};
       },
       {"'a.weight'", "element count overflows"}},
      {"zero dim",
       [](auto* t) {
         (*t)[0].dims = {16, 0};
       },
       {"'a.weight'", "dim 1 is zero"}},
      {"too many dims",
       [](auto* t) {
         (*t)[0].dims = {1, 1, 1, 1, 16};
       },
       {"'a.weight'", "5 dims"}},
      {"no dims", [](auto* t) { (*t)[0].dims = {}; }, {"'a.weight'", "0 dims"}},
      {"wrong nbytes",
       [](auto* t) { (*t)[0].nbytes = 32; },
       {"'a.weight'", "nbytes is 32 but a f32 tensor of this shape takes 64"}},
      {"wrong nbytes for dtype",
       [](auto* t) { (*t)[0].dtype = 1; },
       {"'a.weight'", "nbytes is 64 but a f16 tensor of this shape takes 32"}},
      {"unknown dtype", [](auto* t) { (*t)[1].dtype = 9; }, {"'b.weight'", "unknown dtype 9"}},
      {"unknown layout", [](auto* t) { (*t)[1].layout = 3; }, {"'b.weight'", "unknown layout 3"}},
      {"rows16 on f32",
       [](auto* t) { (*t)[1].layout = 1; },
       {"'b.weight'", "layout rows16 does not hold a f32 tensor"}},
      {"rows16 on 8 rows",
       [](auto* t) {
         (*t)[0] = {"q.weight", 4, 1, 32, {8, 32}, 0, 160};
       },
       {"'q.weight'", "rows16 is for q4 and q8 with rows a multiple of 16"}},
      {"q8 rows16 on 8 rows",
       [](auto* t) {
         (*t)[0] = {"q.weight", 3, 1, 32, {8, 32}, 0, 272};
       },
       {"'q.weight'", "layout rows16 does not hold a q8 tensor of 8 rows"}},
      {"q8 rows16 on 24 rows",
       [](auto* t) {
         (*t)[0] = {"q.weight", 3, 1, 32, {3, 8, 32}, 0, 816};
       },
       {"'q.weight'", "layout rows16 does not hold a q8 tensor of 24 rows"}},
      {"bad q4 group",
       [](auto* t) {
         (*t)[0] = {"q.weight", 4, 0, 48, {1, 96}, 0, 60};
       },
       {"'q.weight'", "group 48 is not valid for dtype q4"}},
      {"group on plain dtype",
       [](auto* t) { (*t)[0].group = 32; },
       {"'a.weight'", "group 32 is not valid for dtype f32"}},
      {"group does not divide",
       [](auto* t) {
         (*t)[0] = {"q.weight", 3, 0, 32, {1, 48}, 0, 51};
       },
       {"'q.weight'", "does not divide 48 columns"}},
      {"duplicate names",
       [](auto* t) { (*t)[1].name = "a.weight"; },
       {"'a.weight' (entry 1): duplicate name"}},
      {"empty name", [](auto* t) { (*t)[1].name = ""; }, {"entry 1", "empty name"}},
      {"long name",
       [](auto* t) { (*t)[1].name = std::string(300, 'x'); },
       {"entry 1", "name is 300 bytes, the limit is 256"}},
  };
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<RawTensor> dir = TwoTensors();
    c.edit(&dir);
    ExpectCorrupt(testing::AssembleWith(dir, kData), c.expect);
  }
}

TEST(ReaderCorruption, TensorDirectoryFraming) {
  // A count far beyond what the section holds, and trailing garbage.
  Bytes dir = testing::EncodeDirectory(TwoTensors());
  Bytes huge = dir;
  huge[3] = 0x7F;
  const Bytes b = testing::Assemble({{1, testing::ToBytes("{}")},
                                     {2, {}},
                                     {3, testing::ToBytes("{}")},
                                     {4, huge},
                                     {5, kData, kDataAlignment}});
  ExpectCorrupt(b, {"tensors section", "claims 2130706434 tensors"});

  Bytes trailing = dir;
  trailing.push_back(0);
  const Bytes t = testing::Assemble({{1, testing::ToBytes("{}")},
                                     {2, {}},
                                     {3, testing::ToBytes("{}")},
                                     {4, trailing},
                                     {5, kData, kDataAlignment}});
  ExpectCorrupt(t, {"1 unexpected bytes after the last entry"});

  Bytes cut(dir.begin(), dir.end() - 4);
  const Bytes c = testing::Assemble({{1, testing::ToBytes("{}")},
                                     {2, {}},
                                     {3, testing::ToBytes("{}")},
                                     {4, cut},
                                     {5, kData, kDataAlignment}});
  ExpectCorrupt(c, {"entry 1", "runs past the end of the section"});
}

}  // namespace
}  // namespace pocket
