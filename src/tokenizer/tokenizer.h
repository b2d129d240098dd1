// Tokenizers: byte-level BPE (GPT-2 / Qwen2 / Qwen3 / Llama-3 family),
// SentencePiece models (through libsentencepiece), and the SentencePiece-style
// BPE of Hugging Face tokenizer.json files (Llama / Mistral: Metaspace or
// Prepend "▁" normalizer, byte fallback). One class, one serialized blob (the
// .pocket `tokenizer` section), so the runtime never cares which kind it has.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace pocket {

enum class TokenizerKind : uint8_t {
  kByteLevelBpe = 0,    // tokenizer.json, ByteLevel pre-tokenizer
  kSentencePiece = 1,   // a tokenizer.model proto, run by libsentencepiece
  kSpmBpe = 2,          // tokenizer.json, Metaspace/Prepend("▁") + byte fallback
};

class TokenizerImpl;

class Tokenizer {
 public:
  // Importers used by `pocket convert` / `pocket synth`.
  // tokenizer.json text (+ optional tokenizer_config.json text for added
  // tokens' "special" flags and bos/eos names).
  static StatusOr<std::unique_ptr<Tokenizer>> FromHfJson(std::string_view tokenizer_json,
                                                         std::string_view tokenizer_config_json);
  // The bytes of a sentencepiece .model file.
  static StatusOr<std::unique_ptr<Tokenizer>> FromSentencePiece(std::string_view model_proto);
  // The .pocket `tokenizer` section.
  static StatusOr<std::unique_ptr<Tokenizer>> FromBlob(std::string_view blob);
  ~Tokenizer();

  // Serializes to the `tokenizer` section format (deterministic bytes).
  std::string ToBlob() const;

  // A byte-level BPE tokenizer restricted to its first `vocab_size` ids
  // (special/added tokens are kept and renumbered after the regular ones;
  // merges whose parts or result fall outside are dropped). Used to derive
  // the 65,536-token pocket-0.3b tokenizer from Qwen3's 151K one.
  StatusOr<std::unique_ptr<Tokenizer>> Trimmed(int32_t vocab_size) const;

  // Encodes text to ids (no BOS is added; the caller does that from the
  // model config). With parse_special, added/special tokens written in the
  // text (e.g. "<|im_start|>") become their ids. Invalid UTF-8 is an
  // InvalidArgument error naming the byte offset.
  StatusOr<std::vector<int32_t>> Encode(std::string_view text, bool parse_special = true) const;

  // The raw bytes of one token (byte-level tokens decoded to bytes,
  // SentencePiece "▁" turned into spaces, byte-fallback tokens to their byte).
  // May be an incomplete UTF-8 sequence. Empty for out-of-range ids.
  std::string TokenBytes(int32_t id) const;
  // Concatenated bytes of ids, with the tokenizer's decoder rules (e.g. the
  // SentencePiece leading-space strip of the first token).
  std::string Decode(const std::vector<int32_t>& ids) const;
  // The token's vocabulary string as stored (for inspect / debugging).
  std::string TokenText(int32_t id) const;
  // Looks up a token's id by its vocabulary string; -1 when absent.
  int32_t TokenId(std::string_view text) const;

  TokenizerKind kind() const;
  int32_t vocab_size() const;
  int32_t bos_id() const;  // -1 when none
  int32_t eos_id() const;  // -1 when none
  bool IsSpecial(int32_t id) const;  // control / added special tokens
  // Whether Decode drops one leading space of the first text token (the
  // SentencePiece dummy prefix); StreamDecoder applies the same rule.
  bool StripsLeadingSpace() const;

 private:
  explicit Tokenizer(std::unique_ptr<TokenizerImpl> impl);
  std::unique_ptr<TokenizerImpl> impl_;
};

// Streams decoded text in whole UTF-8 characters: Push() returns the text
// that became complete with this token (possibly empty); Flush() returns
// whatever is left (an incomplete tail is replaced by U+FFFD).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer* tokenizer) : tok_(tokenizer) {}
  std::string Push(int32_t id);
  std::string Flush();
  void Reset();

 private:
  const Tokenizer* tok_;
  std::string pending_;
  bool first_ = true;
};

// Returns the byte offset of the first invalid UTF-8 sequence, or -1.
int64_t FindInvalidUtf8(std::string_view text);

}  // namespace pocket
