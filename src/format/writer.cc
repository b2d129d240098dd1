#include "format/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "format/tensor_directory.h"
#include "util/crc32c.h"

namespace pocket {
namespace {

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct Blob {
  SectionKind kind;
  const std::string* bytes;
};

// Writes the whole file through one descriptor; the first failure is kept
// (with its errno) and later writes become no-ops.
class FileSink {
 public:
  explicit FileSink(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
    if (fd_ < 0) err_ = errno;
  }
  ~FileSink() { Close(); }

  void Write(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (err_ == 0 && size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        err_ = errno;
        return;
      }
      p += n;
      size -= static_cast<size_t>(n);
    }
  }
  void Zeros(uint64_t n) {
    static const char kZeros[4096] = {};
    while (n > 0) {
      const size_t k = n < sizeof(kZeros) ? static_cast<size_t>(n) : sizeof(kZeros);
      Write(kZeros, k);
      n -= k;
    }
  }
  // Flushes to disk before the rename so a crash never leaves a renamed but
  // incomplete model.
  void Close() {
    if (fd_ < 0) return;
    if (err_ == 0 && ::fsync(fd_) != 0) err_ = errno;
    if (::close(fd_) != 0 && err_ == 0) err_ = errno;
    fd_ = -1;
  }
  int error() const { return err_; }

 private:
  int fd_;
  int err_ = 0;
};

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

  const std::string tmp = path + ".tmp";
  int err;
  {
    FileSink out(tmp);
    out.Write(&h, sizeof(h));
    pos = sizeof(h);
    for (size_t i = 0; i < 4; ++i) {
      out.Zeros(table[i].offset - pos);
      out.Write(blobs[i].bytes->data(), blobs[i].bytes->size());
      pos = table[i].offset + table[i].size;
    }
    out.Zeros(data.offset - pos);
    pos = 0;  // now relative to the data section
    for (size_t i = 0; i < infos_.size(); ++i) {
      out.Zeros(infos_[i].offset - pos);
      out.Write(data_[i].data(), data_[i].size());
      pos = infos_[i].offset + infos_[i].nbytes;
    }
    out.Zeros(h.table_offset - (data.offset + data.size));
    out.Write(table.data(), table.size() * sizeof(SectionEntry));
    out.Close();
    err = out.error();
  }
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    std::remove(tmp.c_str());
    return Errorf(StatusCode::kIoError, "cannot write '%s': %s", path.c_str(), std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace pocket
