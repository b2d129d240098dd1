// The pre-tokenizer of byte-level BPE: a PCRE2 regex (UTF + Unicode
// properties, JIT-compiled) whose matches become words; with HF's
// "Isolated" behaviour the unmatched gaps between matches are words too.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace pocket::tok {

class RegexSplitter {
 public:
  // A PCRE2 compile error becomes InvalidArgument naming the offset.
  static StatusOr<std::unique_ptr<RegexSplitter>> Create(const std::string& pattern);
  ~RegexSplitter();
  // `text` must be valid UTF-8 (checked by the caller).
  Status Split(std::string_view text, std::vector<std::string_view>* words) const;

 private:
  RegexSplitter() = default;
  void* code_ = nullptr;  // pcre2_code_8, kept opaque to keep pcre2.h private
};

// The GPT-2 pattern that ByteLevel(use_regex=true) stands for.
extern const char kGpt2SplitPattern[];

}  // namespace pocket::tok
