// Tokenizer: picks the implementation for each source and forwards to it.
#include "tokenizer/tokenizer.h"

#include "tokenizer/blob_io.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace pocket {

Tokenizer::Tokenizer(std::unique_ptr<TokenizerImpl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromHfJson(std::string_view tokenizer_json,
                                                           std::string_view tokenizer_config_json) {
  tok::BpeData data;
  POCKET_RETURN_IF_ERROR(tok::ImportHfJson(tokenizer_json, tokenizer_config_json, &data));
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<TokenizerImpl> impl,
                          tok::BpeTokenizer::Create(std::move(data)));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromSentencePiece(std::string_view model_proto) {
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<TokenizerImpl> impl, tok::LoadSentencePiece(model_proto));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromBlob(std::string_view blob) {
  tok::BlobReader header(blob);
  uint8_t kind;
  POCKET_RETURN_IF_ERROR(tok::ReadBlobHeader(&header, &kind));
  std::unique_ptr<TokenizerImpl> impl;
  if (static_cast<TokenizerKind>(kind) == TokenizerKind::kSentencePiece) {
    POCKET_ASSIGN_OR_RETURN(impl, tok::SentencePieceFromBlob(blob));
  } else {
    tok::BpeData data;
    POCKET_RETURN_IF_ERROR(tok::ParseBpeBlob(blob, &data));
    POCKET_ASSIGN_OR_RETURN(impl, tok::BpeTokenizer::Create(std::move(data)));
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

std::string Tokenizer::ToBlob() const { return impl_->ToBlob(); }

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Trimmed(int32_t vocab_size) const {
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<TokenizerImpl> impl, impl_->Trimmed(vocab_size));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text, bool parse_special) const {
  return impl_->Encode(text, parse_special);
}

std::string Tokenizer::TokenBytes(int32_t id) const { return impl_->TokenBytes(id); }
std::string Tokenizer::Decode(const std::vector<int32_t>& ids) const { return impl_->Decode(ids); }
std::string Tokenizer::TokenText(int32_t id) const { return impl_->TokenText(id); }
int32_t Tokenizer::TokenId(std::string_view text) const { return impl_->TokenId(text); }
TokenizerKind Tokenizer::kind() const { return impl_->kind(); }
int32_t Tokenizer::vocab_size() const { return impl_->vocab_size(); }
int32_t Tokenizer::bos_id() const { return impl_->bos_id(); }
int32_t Tokenizer::eos_id() const { return impl_->eos_id(); }
bool Tokenizer::IsSpecial(int32_t id) const { return impl_->IsSpecial(id); }
bool Tokenizer::StripsLeadingSpace() const { return impl_->StripsLeadingSpace(); }

}  // namespace pocket
