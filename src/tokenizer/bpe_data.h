// Everything a BPE tokenizer (byte-level or SentencePiece-style) is made of,
// in the flat form the blob stores. Importers fill it, BpeTokenizer::Create
// validates it; nothing else builds a BPE tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pocket::tok {

enum BpeFlag : uint32_t {
  kFlagNfc = 1,                 // NFC-normalize text pieces
  kFlagByteFallback = 2,        // unknown characters become <0xNN> tokens
  kFlagFuseUnk = 4,             // consecutive unknowns become one unk
  kFlagIgnoreMerges = 8,        // a word that is a token is used as is
  kFlagAddPrefixSpace = 16,     // byte-level: prepend ' ' to each text piece
  kFlagMetaspaceSplit = 32,     // spm-bpe: words start at each "▁"
  kFlagStripLeadingSpace = 64,  // decoder drops one leading space
  kFlagPrependIfMissing = 128,  // spm-bpe: Metaspace-style, prepend only if no "▁" yet
  kFlagRegexSequence = 256,     // regex holds NUL-separated patterns, applied in turn
  kFlagAll = 511,
};

// When the SentencePiece-style normalizer puts "▁" in front of a text piece.
enum PrependScheme : uint8_t {
  kPrependNever = 0,
  kPrependFirst = 1,   // only the piece at the start of the input
  kPrependAlways = 2,  // every piece between added tokens (HF Prepend)
};

struct BpeData {
  TokenizerKind kind = TokenizerKind::kByteLevelBpe;
  uint32_t flags = 0;
  uint8_t prepend = kPrependNever;
  int32_t bos = -1, eos = -1, unk = -1;
  // Token i is pool[offsets[i], offsets[i+1]): raw bytes for byte-level BPE,
  // the vocabulary piece (with "▁", "<0x0A>") for SentencePiece-style BPE,
  // the literal content for added tokens. Unused ids are empty.
  std::string pool;
  std::vector<uint32_t> offsets;
  std::vector<uint8_t> attrs;   // TokenAttr bits per id
  std::vector<int32_t> merges;  // (left, right, result) per rank
  std::string regex;            // pre-tokenizer pattern(s); empty: no split

  int32_t size() const { return static_cast<int32_t>(attrs.size()); }
  std::string_view token(int32_t id) const {
    return std::string_view(pool).substr(offsets[id], offsets[id + 1] - offsets[id]);
  }
  void AddToken(std::string_view bytes, uint8_t attr) {
    if (offsets.empty()) offsets.push_back(0);
    pool.append(bytes);
    offsets.push_back(static_cast<uint32_t>(pool.size()));
    attrs.push_back(attr);
  }
};

// The pre-tokenizer patterns `d` holds (none, one, or the parts of a
// kFlagRegexSequence regex), and the setter importers use: several
// patterns are stored as one NUL-separated regex with kFlagRegexSequence
// (a flag, so that a reader without sequences refuses the blob).
std::vector<std::string> RegexPatterns(const BpeData& d);
void SetRegexPatterns(const std::vector<std::string>& patterns, BpeData* d);

// The .pocket tokenizer blob of a BPE tokenizer, and its parser (structure
// only; BpeTokenizer::Create checks the contents).
std::string SerializeBpe(const BpeData& d);
Status ParseBpeBlob(std::string_view blob, BpeData* d);

}  // namespace pocket::tok
