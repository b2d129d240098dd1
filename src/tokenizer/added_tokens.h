// Added tokens (special tokens such as <|im_start|>, and non-special ones
// such as Qwen's <think>) are found in the raw text before any normalizer or
// BPE runs, as Hugging Face does: leftmost match first, the longest token
// when several start at the same byte.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pocket::tok {

// Per-token attribute bits, stored as they are in the blob.
enum TokenAttr : uint8_t {
  kAttrSpecial = 1,      // control token; only parsed with parse_special
  kAttrAdded = 2,        // matched in raw text before BPE
  kAttrLstrip = 4,       // swallows whitespace on its left
  kAttrRstrip = 8,       // swallows whitespace on its right
  kAttrNormalized = 16,  // HF matches it on normalized text (kept as info)
  kAttrSingleWord = 32,  // only matched when not inside a word
  kAttrAllBits = 63,
};

struct AddedToken {
  std::string_view content;
  int32_t id;
  uint8_t attrs;
};

// A piece of the input: either text to tokenize (id < 0) or one added token.
struct Segment {
  size_t begin, end;
  int32_t id;
};

class AddedTokenMatcher {
 public:
  void Build(std::vector<AddedToken> tokens);
  bool empty() const { return tokens_.empty(); }
  // Splits `text` into segments covering it in order (whitespace swallowed by
  // lstrip/rstrip tokens belongs to no segment).
  void Split(std::string_view text, bool parse_special, std::vector<Segment>* out) const;

 private:
  // Index of the added token matching at `pos`, or -1.
  int Match(std::string_view text, size_t pos, bool parse_special) const;
  std::vector<AddedToken> tokens_;  // sorted by length, longest first
  std::array<std::vector<int>, 256> by_first_byte_;
};

}  // namespace pocket::tok
