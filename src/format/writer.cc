#include "format/writer.h"

#include <cstddef>
#include <cstring>

#include "format/tensor_directory.h"
#include "util/crc32c.h"
#include "util/file_io.h"

namespace pocket {
namespace {

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct Blob {
  SectionKind kind;
  const std::string* bytes;
};

void WriteZeros(AtomicFileWriter* out, uint64_t n) {
  static const char kZeros[4096] = {};
  while (n > 0) {
    const size_t k = n < sizeof(kZeros) ? static_cast<size_t>(n) : sizeof(kZeros);
    out->Write(kZeros, k);
    n -= k;
  }
}

// CRC32C of `n` zero bytes appended to `crc`.
uint32_t CrcZeros(uint32_t crc, uint64_t n) {
  static const uint8_t kZeros[4096] = {};
  while (n > 0) {
    const size_t k = n < sizeof(kZeros) ? static_cast<size_t>(n) : sizeof(kZeros);
    crc = Crc32c(crc, kZeros, k);
    n -= k;
  }
  return crc;
}

}  // namespace

Status PocketWriter::AddTensor(TensorInfo info, std::vector<uint8_t> bytes) {
  info.offset = 0;
  Status s = ValidateTensorInfo(info);
  if (!s.ok()) return Status(StatusCode::kInvalidArgument, s.message());
  if (bytes.size() != info.nbytes) {
    return Errorf(StatusCode::kInvalidArgument, "tensor '%s': %zu data bytes given, nbytes is %llu",
                  info.name.c_str(), bytes.size(), static_cast<unsigned long long>(info.nbytes));
  }
  for (const TensorInfo& t : infos_) {
    if (t.name == info.name) {
      return Errorf(StatusCode::kInvalidArgument, "tensor '%s' was already added",
                    info.name.c_str());
    }
  }
  infos_.push_back(std::move(info));
  data_.push_back(std::move(bytes));
  return Status::Ok();
}

Status PocketWriter::Finish(const std::string& path) {
  // Lay out the data section: each tensor on a kTensorAlignment boundary.
  uint64_t data_size = 0;
  for (TensorInfo& t : infos_) {
    t.offset = AlignUp(data_size, kTensorAlignment);
    data_size = t.offset + t.nbytes;
  }
  const std::string directory = EncodeTensorDirectory(infos_);
  const Blob blobs[] = {{SectionKind::kConfig, &config_},
                        {SectionKind::kTokenizer, &tokenizer_},
                        {SectionKind::kGraph, &graph_},
                        {SectionKind::kTensors, &directory}};

  // Metadata sections follow the header, each on an 8-byte boundary.
  std::vector<SectionEntry> table;
  uint64_t pos = sizeof(FileHeader);
  for (const Blob& b : blobs) {
    SectionEntry e{};
    e.kind = static_cast<uint32_t>(b.kind);
    e.offset = AlignUp(pos, 8);
    e.size = b.bytes->size();
    e.crc32c = Crc32c(0, b.bytes->data(), b.bytes->size());
    table.push_back(e);
    pos = e.offset + e.size;
  }
  SectionEntry data{};
  data.kind = static_cast<uint32_t>(SectionKind::kData);
  data.offset = AlignUp(pos, kDataAlignment);
  data.size = data_size;
  uint32_t crc = 0;
  for (size_t i = 0; i < infos_.size(); ++i) {
    const uint64_t gap_end = infos_[i].offset;
    const uint64_t prev_end = i == 0 ? 0 : infos_[i - 1].offset + infos_[i - 1].nbytes;
    crc = CrcZeros(crc, gap_end - prev_end);
    crc = Crc32c(crc, data_[i].data(), data_[i].size());
  }
  data.crc32c = crc;
  table.push_back(data);

  FileHeader h{};
  std::memcpy(h.magic, kPocketMagic, sizeof(h.magic));
  h.major = kFormatMajor;
  h.minor = kFormatMinor;
  h.table_offset = AlignUp(data.offset + data.size, 8);
  h.section_count = static_cast<uint32_t>(table.size());
  h.file_size = h.table_offset + table.size() * sizeof(SectionEntry);
  h.table_crc32c = Crc32c(0, table.data(), table.size() * sizeof(SectionEntry));
  h.header_crc32c = Crc32c(0, &h, offsetof(FileHeader, header_crc32c));

  AtomicFileWriter out;
  POCKET_RETURN_IF_ERROR(out.Open(path, "Pocket model (.pocket file)"));
  out.Write(&h, sizeof(h));
  pos = sizeof(h);
  for (size_t i = 0; i < 4; ++i) {
    WriteZeros(&out, table[i].offset - pos);
    out.Write(blobs[i].bytes->data(), blobs[i].bytes->size());
    pos = table[i].offset + table[i].size;
  }
  WriteZeros(&out, data.offset - pos);
  pos = 0;  // now relative to the data section
  for (size_t i = 0; i < infos_.size(); ++i) {
    WriteZeros(&out, infos_[i].offset - pos);
    out.Write(data_[i].data(), data_[i].size());
    pos = infos_[i].offset + infos_[i].nbytes;
  }
  WriteZeros(&out, h.table_offset - (data.offset + data.size));
  out.Write(table.data(), table.size() * sizeof(SectionEntry));
  return out.Commit();
}

}  // namespace pocket
