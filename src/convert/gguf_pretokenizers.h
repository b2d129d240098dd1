// Byte-level BPE pre-tokenizers by GGUF `tokenizer.ggml.pre`: the regex
// patterns (applied in turn, each splitting the words of the one before),
// tokenizer flags and add_bos default that each name llama.cpp's converter
// writes stands for. Which names are supported and which refused, and why,
// is in docs/convert.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace pocket {

struct GgufPreTokenizer {
  std::vector<std::string> patterns;
  uint32_t flags = 0;    // tok::BpeFlag bits: NFC, ignore_merges
  bool add_bos = false;  // when tokenizer.ggml.add_bos_token is absent
};

// `name` empty (the key missing or empty) means "default", as in llama.cpp.
// An unknown name is Unsupported, naming it and the supported ones.
StatusOr<GgufPreTokenizer> FindGgufPreTokenizer(const std::string& name);

}  // namespace pocket
