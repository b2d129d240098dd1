// The pre-tokenizer of byte-level BPE: PCRE2 regexes (UTF + Unicode
// properties, JIT-compiled) whose matches become words; with HF's
// "Isolated" behaviour the unmatched gaps between matches are words too.
// Several patterns apply in turn, each to every word the one before made
// and seeing only that word, so a lookahead or `$` stops at the word's end
// (HF's Sequence of Split pre-tokenizers; llama.cpp's regex lists).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace pocket::tok {

class RegexSplitter {
 public:
  // One or more patterns; a PCRE2 compile error becomes InvalidArgument
  // naming the pattern and offset.
  static StatusOr<std::unique_ptr<RegexSplitter>> Create(const std::vector<std::string>& patterns);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;
  // `text` must be valid UTF-8 (checked by the caller).
  Status Split(std::string_view text, std::vector<std::string_view>* words) const;

 private:
  RegexSplitter() = default;
  // Appends the words one pattern makes of `text`.
  Status SplitOne(size_t pattern, std::string_view text,
                  std::vector<std::string_view>* words) const;
  std::vector<void*> codes_;  // pcre2_code_8 each, kept opaque to keep pcre2.h private
};

// The GPT-2 pattern that ByteLevel(use_regex=true) stands for.
extern const char kGpt2SplitPattern[];

}  // namespace pocket::tok
