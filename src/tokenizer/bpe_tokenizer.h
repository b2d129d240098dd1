// Byte-level BPE (GPT-2 / Qwen / Llama-3) and SentencePiece-style BPE
// (Llama / Mistral tokenizer.json) over one validated BpeData.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_data.h"
#include "tokenizer/flat_hash.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/tokenizer_impl.h"

namespace pocket::tok {

class BpeTokenizer : public TokenizerImpl {
 public:
  // Checks every id, offset, flag and the regex; errors are CorruptFile
  // (InvalidArgument for a bad regex) naming what is wrong.
  static StatusOr<std::unique_ptr<TokenizerImpl>> Create(BpeData data);

  TokenizerKind kind() const override { return d_.kind; }
  int32_t vocab_size() const override { return d_.size(); }
  int32_t bos_id() const override { return d_.bos; }
  int32_t eos_id() const override { return d_.eos; }
  bool IsSpecial(int32_t id) const override;
  StatusOr<std::vector<int32_t>> Encode(std::string_view text, bool parse_special) const override;
  std::string TokenBytes(int32_t id) const override;
  std::string Decode(const std::vector<int32_t>& ids) const override;
  std::string TokenText(int32_t id) const override;
  int32_t TokenId(std::string_view text) const override;
  bool StripsLeadingSpace() const override { return d_.flags & kFlagStripLeadingSpace; }
  std::string ToBlob() const override { return SerializeBpe(d_); }
  StatusOr<std::unique_ptr<TokenizerImpl>> Trimmed(int32_t vocab_size) const override;

 private:
  explicit BpeTokenizer(BpeData data) : d_(std::move(data)) {}
  Status Validate() const;
  Status BuildIndexes();
  bool InRange(int32_t id) const { return id >= 0 && id < d_.size(); }
  // Tokenizes text between added tokens; `at_start`: it begins the input.
  Status EncodeText(std::string_view text, bool at_start, std::vector<int32_t>* ids) const;
  void EncodeWord(std::string_view word, std::vector<int32_t>* ids) const;
  void InitialSymbols(std::string_view word, std::vector<int32_t>* symbols) const;

  BpeData d_;
  StringTable by_text_;
  MergeTable merges_;
  AddedTokenMatcher added_;
  std::unique_ptr<RegexSplitter> splitter_;
  std::array<int32_t, 256> byte_token_;  // id of each single byte (or <0xNN>)
  std::vector<int16_t> token_byte_;      // spm-bpe: byte of a <0xNN> token, else -1

  // Words seen recently -> ids (prompts repeat words a lot).
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace pocket::tok
