#include "format/reader.h"

#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "format/tensor_directory.h"
#include "util/crc32c.h"
#include "util/json_util.h"
#include "util/mapped_file.h"

namespace pocket {
namespace {

using ull = unsigned long long;

constexpr int kNumKnownKinds = 5;

bool IsKnownKind(uint32_t kind) { return kind >= 1 && kind <= kNumKnownKinds; }

std::string KindLabel(uint32_t kind) {
  if (IsKnownKind(kind)) return SectionKindName(static_cast<SectionKind>(kind));
  return StringPrintf("kind %u", kind);
}

Status Corrupt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
Status Corrupt(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return Status(StatusCode::kCorruptFile, buf);
}

uint32_t HeaderCrc(const FileHeader& h) {
  return Crc32c(0, &h, offsetof(FileHeader, header_crc32c));
}

Status CheckJsonObject(std::string_view text, const char* what) {
  StatusOr<Json> j = ParseJson(text, what);
  if (!j.ok()) return j.status();
  if (!j->is_object()) return Corrupt("%s must be a JSON object", what);
  return Status::Ok();
}

}  // namespace

PocketFile::~PocketFile() = default;

size_t PocketFile::ReleaseMetadataPages() const { return ReleasePages(0, data_offset()); }

size_t PocketFile::ReleasePages(uint64_t offset, uint64_t size) const {
  return mapping_ == nullptr
             ? 0
             : mapping_->Release(static_cast<size_t>(offset), static_cast<size_t>(size));
}

StatusOr<std::unique_ptr<PocketFile>> PocketFile::Open(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapping,
                          MappedFile::Open(path, "Pocket model (.pocket file)"));
  std::unique_ptr<PocketFile> f(new PocketFile());
  f->base_ = mapping->data();
  f->size_ = mapping->size();
  f->mapping_ = std::move(mapping);
  Status s = f->Parse();
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  return f;
}

StatusOr<std::unique_ptr<PocketFile>> PocketFile::FromMemory(const uint8_t* data, size_t size) {
  std::unique_ptr<PocketFile> f(new PocketFile());
  f->base_ = data;
  f->size_ = size;
  POCKET_RETURN_IF_ERROR(f->Parse());
  return f;
}

const TensorInfo* PocketFile::FindTensor(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Status PocketFile::Parse() {
  // Header.
  if (size_ < sizeof(FileHeader)) {
    return Corrupt("truncated: file is %llu bytes, smaller than the %zu-byte .pocket header",
                   static_cast<ull>(size_), sizeof(FileHeader));
  }
  std::memcpy(&header_, base_, sizeof(FileHeader));
  if (std::memcmp(header_.magic, kPocketMagic, sizeof(kPocketMagic)) != 0) {
    return Corrupt("not a .pocket file (the first 8 bytes are not the magic \"POCKET\\x1a\\0\")");
  }
  if (header_.major > kFormatMajor) {
    return Errorf(StatusCode::kUnsupported,
                  "file format version %u.%u is newer than this build supports (%u.x); upgrade "
                  "Pocket",
                  header_.major, header_.minor, kFormatMajor);
  }
  if (header_.major < 1) {
    return Corrupt("header: format version %u.%u does not exist (expected %u.x)", header_.major,
                   header_.minor, kFormatMajor);
  }
  const uint32_t header_crc = HeaderCrc(header_);
  if (header_crc != header_.header_crc32c) {
    return Corrupt(
        "header checksum mismatch (stored 0x%08x, computed 0x%08x): bytes 0..63 are "
        "corrupt",
        header_.header_crc32c, header_crc);
  }
  if (header_.file_size > size_) {
    return Corrupt("truncated: header says %llu bytes, file has %llu; re-download or re-convert",
                   static_cast<ull>(header_.file_size), static_cast<ull>(size_));
  }
  if (header_.file_size < size_) {
    return Corrupt("header says %llu bytes but the file has %llu: %llu unexpected trailing bytes",
                   static_cast<ull>(header_.file_size), static_cast<ull>(size_),
                   static_cast<ull>(size_ - header_.file_size));
  }

  // Section table.
  const uint64_t table_off = header_.table_offset;
  uint64_t table_bytes = 0, table_end = 0;
  if (table_off < sizeof(FileHeader) ||
      __builtin_mul_overflow(static_cast<uint64_t>(header_.section_count), sizeof(SectionEntry),
                             &table_bytes) ||
      __builtin_add_overflow(table_off, table_bytes, &table_end) || table_end > size_) {
    return Corrupt(
        "section table (offset %llu, %u entries of %zu bytes) lies outside the "
        "%llu-byte file",
        static_cast<ull>(table_off), header_.section_count, sizeof(SectionEntry),
        static_cast<ull>(size_));
  }
  const uint32_t table_crc = Crc32c(0, base_ + table_off, table_bytes);
  if (table_crc != header_.table_crc32c) {
    return Corrupt(
        "section table checksum mismatch at byte %llu (stored 0x%08x, computed "
        "0x%08x)",
        static_cast<ull>(table_off), header_.table_crc32c, table_crc);
  }
  sections_.resize(header_.section_count);
  if (table_bytes > 0) std::memcpy(sections_.data(), base_ + table_off, table_bytes);

  // Every section (known or not) inside the file, clear of the header, the
  // table and each other.
  const SectionEntry* known[kNumKnownKinds + 1] = {};
  std::vector<const SectionEntry*> by_offset;
  for (size_t i = 0; i < sections_.size(); ++i) {
    const SectionEntry& e = sections_[i];
    const std::string label = KindLabel(e.kind);
    uint64_t end;
    if (e.offset < sizeof(FileHeader) || __builtin_add_overflow(e.offset, e.size, &end) ||
        end > size_) {
      return Corrupt(
          "section %zu (%s) at offset %llu, size %llu lies outside the file (%llu "
          "bytes)",
          i, label.c_str(), static_cast<ull>(e.offset), static_cast<ull>(e.size),
          static_cast<ull>(size_));
    }
    if (e.size > 0 && e.offset < table_end && table_off < end) {
      return Corrupt("section %zu (%s) at offset %llu overlaps the section table", i, label.c_str(),
                     static_cast<ull>(e.offset));
    }
    if (e.size > 0) by_offset.push_back(&e);
    if (!IsKnownKind(e.kind)) continue;  // a later minor version's addition
    if (known[e.kind] != nullptr) {
      return Corrupt("section table lists the %s section twice", label.c_str());
    }
    known[e.kind] = &e;
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SectionEntry* a, const SectionEntry* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const SectionEntry& a = *by_offset[k - 1];
    const SectionEntry& b = *by_offset[k];
    if (a.offset + a.size > b.offset) {
      return Corrupt("sections %s (offset %llu, size %llu) and %s (offset %llu) overlap",
                     KindLabel(a.kind).c_str(), static_cast<ull>(a.offset),
                     static_cast<ull>(a.size), KindLabel(b.kind).c_str(),
                     static_cast<ull>(b.offset));
    }
  }
  for (uint32_t kind = 1; kind <= kNumKnownKinds; ++kind) {
    if (known[kind] == nullptr) {
      return Corrupt("the file has no %s section", KindLabel(kind).c_str());
    }
  }

  // Checksums of the small sections; the data section is only checked by
  // VerifyChecksums() so that opening a model never reads its weights.
  for (const SectionEntry& e : sections_) {
    if (e.kind == static_cast<uint32_t>(SectionKind::kData)) continue;
    const uint32_t crc = Crc32c(0, base_ + e.offset, e.size);
    if (crc != e.crc32c) {
      return Corrupt(
          "%s section checksum mismatch (offset %llu, size %llu, stored 0x%08x, "
          "computed 0x%08x)",
          KindLabel(e.kind).c_str(), static_cast<ull>(e.offset), static_cast<ull>(e.size), e.crc32c,
          crc);
    }
  }

  auto view = [&](SectionKind k) {
    const SectionEntry& e = *known[static_cast<uint32_t>(k)];
    return std::string_view(reinterpret_cast<const char*>(base_ + e.offset), e.size);
  };
  const SectionEntry& data = *known[static_cast<uint32_t>(SectionKind::kData)];
  if (data.offset % kDataAlignment != 0) {
    return Corrupt("data section offset %llu is not a multiple of %llu bytes",
                   static_cast<ull>(data.offset), static_cast<ull>(kDataAlignment));
  }
  data_ = base_ + data.offset;
  data_size_ = data.size;

  const SectionEntry& dir = *known[static_cast<uint32_t>(SectionKind::kTensors)];
  POCKET_ASSIGN_OR_RETURN(
      tensors_, DecodeTensorDirectory(base_ + dir.offset, dir.size, dir.offset, data_size_));
  by_name_.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) by_name_.emplace(tensors_[i].name, i);

  config_ = view(SectionKind::kConfig);
  graph_ = view(SectionKind::kGraph);
  tokenizer_ = view(SectionKind::kTokenizer);
  POCKET_RETURN_IF_ERROR(CheckJsonObject(config_, "config section"));
  POCKET_RETURN_IF_ERROR(CheckJsonObject(graph_, "graph section"));
  return Status::Ok();
}

Status PocketFile::VerifyChecksums() const {
  // Re-read the header and table too: the file may have changed on disk
  // since it was opened.
  FileHeader h;
  std::memcpy(&h, base_, sizeof(h));
  std::string bad;
  if (HeaderCrc(h) != h.header_crc32c) bad += "header; ";
  if (Crc32c(0, base_ + header_.table_offset, sections_.size() * sizeof(SectionEntry)) !=
      header_.table_crc32c) {
    bad += "section table; ";
  }
  for (const SectionEntry& e : sections_) {
    const uint32_t crc = Crc32c(0, base_ + e.offset, e.size);
    if (crc != e.crc32c) {
      bad += StringPrintf("%s section (offset %llu, size %llu: stored 0x%08x, computed 0x%08x); ",
                          KindLabel(e.kind).c_str(), static_cast<ull>(e.offset),
                          static_cast<ull>(e.size), e.crc32c, crc);
    }
  }
  if (bad.empty()) return Status::Ok();
  bad.resize(bad.size() - 2);
  return Status(StatusCode::kCorruptFile, "checksum mismatch in: " + bad +
                                              "; the file is corrupt, re-download or re-convert");
}

}  // namespace pocket
