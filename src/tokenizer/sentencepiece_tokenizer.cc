#include "tokenizer/sentencepiece_tokenizer.h"

#include <cstdlib>

#include "tokenizer/blob_io.h"
#include "tokenizer/utf8.h"

#ifdef POCKET_WITH_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace pocket::tok {

#ifdef POCKET_WITH_SENTENCEPIECE
namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";
constexpr char kUnknownSurface[] = " \xE2\x81\x87 ";  // libsentencepiece's " ⁇ "

class SentencePieceTokenizer : public TokenizerImpl {
 public:
  Status Load(std::string_view proto);

  TokenizerKind kind() const override { return TokenizerKind::kSentencePiece; }
  int32_t vocab_size() const override { return sp_.GetPieceSize(); }
  int32_t bos_id() const override { return ValidOrNone(sp_.bos_id()); }
  int32_t eos_id() const override { return ValidOrNone(sp_.eos_id()); }
  bool IsSpecial(int32_t id) const override {
    return InRange(id) && (sp_.IsControl(id) || sp_.IsUnknown(id));
  }
  StatusOr<std::vector<int32_t>> Encode(std::string_view text, bool) const override;
  std::string TokenBytes(int32_t id) const override;
  std::string Decode(const std::vector<int32_t>& ids) const override;
  std::string TokenText(int32_t id) const override {
    return InRange(id) ? sp_.IdToPiece(id) : std::string();
  }
  int32_t TokenId(std::string_view text) const override;
  bool StripsLeadingSpace() const override { return strips_leading_space_; }
  std::string ToBlob() const override;
  StatusOr<std::unique_ptr<TokenizerImpl>> Trimmed(int32_t) const override {
    return Status(StatusCode::kUnsupported, "SentencePiece tokenizers cannot be trimmed");
  }

 private:
  bool InRange(int32_t id) const { return id >= 0 && id < sp_.GetPieceSize(); }
  int32_t ValidOrNone(int id) const { return InRange(id) ? id : -1; }

  std::string proto_;
  sentencepiece::SentencePieceProcessor sp_;
  bool strips_leading_space_ = false;
};

Status SentencePieceTokenizer::Load(std::string_view proto) {
  proto_.assign(proto);
  const auto st = sp_.LoadFromSerializedProto(proto_);
  if (!st.ok()) {
    return Errorf(StatusCode::kCorruptFile, "SentencePiece model does not load: %s",
                  st.ToString().c_str());
  }
  if (sp_.GetPieceSize() <= 0) {
    return Status(StatusCode::kCorruptFile, "SentencePiece model has no pieces");
  }
  // The proto's normalizer spec is not exposed by the public header, so ask
  // the decoder itself: a lone "▁word" piece (not "▁▁") loses its space
  // when the model adds a dummy prefix.
  for (int id = 0; id < sp_.GetPieceSize(); ++id) {
    const std::string& piece = sp_.IdToPiece(id);
    if (sp_.IsControl(id) || sp_.IsUnknown(id) || sp_.IsByte(id) ||
        piece.size() <= kMetaspace.size() || piece.compare(0, kMetaspace.size(), kMetaspace) != 0 ||
        piece.compare(kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0) {
      continue;
    }
    std::string text;
    if (sp_.Decode(std::vector<int>{id}, &text).ok()) {
      strips_leading_space_ = text.empty() || text[0] != ' ';
    }
    break;
  }
  return Status::Ok();
}

StatusOr<std::vector<int32_t>> SentencePieceTokenizer::Encode(std::string_view text, bool) const {
  POCKET_RETURN_IF_ERROR(CheckUtf8(text));
  std::vector<int> ids;
  const auto st = sp_.Encode(text, &ids);
  if (!st.ok()) {
    return Errorf(StatusCode::kInternal, "SentencePiece encode failed: %s", st.ToString().c_str());
  }
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string SentencePieceTokenizer::TokenBytes(int32_t id) const {
  if (!InRange(id) || sp_.IsControl(id)) return std::string();
  if (sp_.IsUnknown(id)) return kUnknownSurface;
  const std::string& piece = sp_.IdToPiece(id);
  if (sp_.IsByte(id) && piece.size() == 6) {
    return std::string(1, static_cast<char>(std::strtol(piece.substr(3, 2).c_str(), nullptr, 16)));
  }
  std::string out;
  size_t i = 0;
  while (i < piece.size()) {
    if (piece.compare(i, kMetaspace.size(), kMetaspace) == 0) {
      out.push_back(' ');
      i += kMetaspace.size();
    } else {
      out.push_back(piece[i++]);
    }
  }
  return out;
}

std::string SentencePieceTokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::vector<int> valid;
  valid.reserve(ids.size());
  for (int32_t id : ids) {
    if (InRange(id)) valid.push_back(id);
  }
  std::string text;
  if (!sp_.Decode(valid, &text).ok()) return std::string();
  return text;
}

int32_t SentencePieceTokenizer::TokenId(std::string_view text) const {
  const int id = sp_.PieceToId(text);
  // PieceToId answers unk for unknown pieces; only the unk piece itself is unk.
  if (!InRange(id) || (sp_.IsUnknown(id) && sp_.IdToPiece(id) != text)) return -1;
  return id;
}

std::string SentencePieceTokenizer::ToBlob() const {
  BlobWriter w;
  w.Header(TokenizerKind::kSentencePiece);
  w.U64(proto_.size());
  w.Bytes(proto_);
  return w.Take();
}

}  // namespace

StatusOr<std::unique_ptr<TokenizerImpl>> LoadSentencePiece(std::string_view model_proto) {
  auto t = std::make_unique<SentencePieceTokenizer>();
  POCKET_RETURN_IF_ERROR(t->Load(model_proto));
  return std::unique_ptr<TokenizerImpl>(std::move(t));
}

#else

StatusOr<std::unique_ptr<TokenizerImpl>> LoadSentencePiece(std::string_view) {
  return Status(StatusCode::kUnsupported,
                "this build of Pocket has no SentencePiece support; rebuild with "
                "-DPOCKET_WITH_SENTENCEPIECE=ON or convert the tokenizer.json instead");
}

#endif  // POCKET_WITH_SENTENCEPIECE

StatusOr<std::unique_ptr<TokenizerImpl>> SentencePieceFromBlob(std::string_view blob) {
  BlobReader r(blob);
  uint8_t kind;
  uint64_t size;
  std::string_view proto;
  POCKET_RETURN_IF_ERROR(ReadBlobHeader(&r, &kind));
  POCKET_RETURN_IF_ERROR(r.U64("model proto size", &size));
  POCKET_RETURN_IF_ERROR(r.Bytes("model proto", size, &proto));
  POCKET_RETURN_IF_ERROR(r.ExpectEnd());
  return LoadSentencePiece(proto);
}

}  // namespace pocket::tok
