#include "tokenizer/blob_io.h"

#include <cstring>

namespace pocket::tok {

void BlobWriter::U32(uint32_t v) {
  for (int i = 0; i < 4; ++i) U8(static_cast<uint8_t>(v >> (8 * i)));
}

void BlobWriter::U64(uint64_t v) {
  for (int i = 0; i < 8; ++i) U8(static_cast<uint8_t>(v >> (8 * i)));
}

void BlobWriter::Header(TokenizerKind kind) {
  Bytes(std::string_view(kBlobMagic, sizeof(kBlobMagic)));
  U32(kBlobVersion);
  U8(static_cast<uint8_t>(kind));
  U8(0);
  U8(0);
  U8(0);
}

Status BlobReader::Need(const char* what, uint64_t n) const {
  if (n > data_.size() - pos_) {
    return Errorf(StatusCode::kCorruptFile,
                  "tokenizer blob truncated: %s needs %llu bytes at offset %zu but only %zu "
                  "remain; re-create the file with `pocket convert`",
                  what, static_cast<unsigned long long>(n), pos_, data_.size() - pos_);
  }
  return Status::Ok();
}

Status BlobReader::U8(const char* what, uint8_t* v) {
  POCKET_RETURN_IF_ERROR(Need(what, 1));
  *v = static_cast<uint8_t>(data_[pos_++]);
  return Status::Ok();
}

Status BlobReader::U32(const char* what, uint32_t* v) {
  POCKET_RETURN_IF_ERROR(Need(what, 4));
  uint32_t x = 0;
  for (int i = 0; i < 4; ++i)
    x |= static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
  pos_ += 4;
  *v = x;
  return Status::Ok();
}

Status BlobReader::I32(const char* what, int32_t* v) {
  uint32_t x;
  POCKET_RETURN_IF_ERROR(U32(what, &x));
  *v = static_cast<int32_t>(x);
  return Status::Ok();
}

Status BlobReader::U64(const char* what, uint64_t* v) {
  uint32_t lo, hi;
  POCKET_RETURN_IF_ERROR(Need(what, 8));
  POCKET_RETURN_IF_ERROR(U32(what, &lo));
  POCKET_RETURN_IF_ERROR(U32(what, &hi));
  *v = (static_cast<uint64_t>(hi) << 32) | lo;
  return Status::Ok();
}

Status BlobReader::Bytes(const char* what, uint64_t n, std::string_view* v) {
  POCKET_RETURN_IF_ERROR(Need(what, n));
  *v = data_.substr(pos_, n);
  pos_ += n;
  return Status::Ok();
}

Status BlobReader::U32Array(const char* what, uint64_t count, std::vector<uint32_t>* v) {
  if (count > (data_.size() - pos_) / 4) return Need(what, count * 4 + 4);
  v->resize(count);
  const auto* p = reinterpret_cast<const uint8_t*>(data_.data() + pos_);
  for (uint64_t i = 0; i < count; ++i, p += 4) {
    (*v)[i] = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
              (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
  }
  pos_ += count * 4;
  return Status::Ok();
}

Status BlobReader::I32Array(const char* what, uint64_t count, std::vector<int32_t>* v) {
  std::vector<uint32_t> u;
  POCKET_RETURN_IF_ERROR(U32Array(what, count, &u));
  v->resize(u.size());
  if (!u.empty()) std::memcpy(v->data(), u.data(), u.size() * 4);
  return Status::Ok();
}

Status BlobReader::ExpectEnd() const {
  if (pos_ == data_.size()) return Status::Ok();
  return Errorf(StatusCode::kCorruptFile,
                "tokenizer blob has %zu unexpected trailing bytes at offset %zu",
                data_.size() - pos_, pos_);
}

Status ReadBlobHeader(BlobReader* r, uint8_t* kind) {
  std::string_view magic;
  POCKET_RETURN_IF_ERROR(r->Bytes("magic", 4, &magic));
  if (magic != std::string_view(kBlobMagic, 4)) {
    return Status(StatusCode::kCorruptFile,
                  "tokenizer blob has a bad magic (expected \"PKTK\"): not a Pocket tokenizer");
  }
  uint32_t version;
  POCKET_RETURN_IF_ERROR(r->U32("version", &version));
  if (version != kBlobVersion) {
    return Errorf(StatusCode::kUnsupported,
                  "tokenizer blob version %u is not supported (this build reads version %u); "
                  "update Pocket or re-convert the model",
                  version, kBlobVersion);
  }
  uint8_t pad[3];
  POCKET_RETURN_IF_ERROR(r->U8("kind", kind));
  for (uint8_t& p : pad) POCKET_RETURN_IF_ERROR(r->U8("header padding", &p));
  if (*kind > static_cast<uint8_t>(TokenizerKind::kSpmBpe)) {
    return Errorf(StatusCode::kCorruptFile, "tokenizer blob has unknown kind %u at offset 8",
                  *kind);
  }
  if (pad[0] | pad[1] | pad[2]) {
    return Status(StatusCode::kCorruptFile, "tokenizer blob header padding (offset 9) is not zero");
  }
  return Status::Ok();
}

}  // namespace pocket::tok
