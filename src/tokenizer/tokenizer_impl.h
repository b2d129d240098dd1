// The interface behind Tokenizer: one implementation for the two BPE kinds
// (bpe_tokenizer.h) and one for libsentencepiece models
// (sentencepiece_tokenizer.h). Tokenizer only forwards to it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace pocket {

class TokenizerImpl {
 public:
  virtual ~TokenizerImpl() = default;
  virtual TokenizerKind kind() const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
  virtual bool IsSpecial(int32_t id) const = 0;
  virtual StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                                bool parse_special) const = 0;
  virtual std::string TokenBytes(int32_t id) const = 0;
  virtual std::string Decode(const std::vector<int32_t>& ids) const = 0;
  virtual std::string TokenText(int32_t id) const = 0;
  virtual int32_t TokenId(std::string_view text) const = 0;
  // Whether decoding drops one leading space of the first text token (the
  // SentencePiece dummy prefix); StreamDecoder applies the same rule.
  virtual bool StripsLeadingSpace() const = 0;
  virtual std::string ToBlob() const = 0;
  virtual StatusOr<std::unique_ptr<TokenizerImpl>> Trimmed(int32_t vocab_size) const = 0;
};

}  // namespace pocket
