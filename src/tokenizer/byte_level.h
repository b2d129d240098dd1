// The GPT-2 byte-level alphabet: every byte maps to one printable code point
// (printable Latin-1 bytes to themselves, the rest to U+0100 + n), so BPE
// vocabularies can be stored as text. Pocket keeps vocabularies as raw bytes
// and uses this map only at the tokenizer.json boundary (import, TokenText,
// TokenId).
#pragma once

#include <string>
#include <string_view>

namespace pocket::tok {

// UTF-8 of the code point standing for byte `b`.
const std::string& ByteLevelChar(unsigned char b);
// Byte-level text of raw bytes.
std::string ToByteLevel(std::string_view bytes);
// Raw bytes of byte-level text; false when a character is outside the
// alphabet (e.g. an added token's literal content).
bool FromByteLevel(std::string_view text, std::string* bytes);

}  // namespace pocket::tok
