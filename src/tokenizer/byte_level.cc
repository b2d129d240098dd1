#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace pocket::tok {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_char;
  std::array<int16_t, 512> char_to_byte;  // every code point used is < 0x144
};

bool IsPrintableByte(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

const Tables& GetTables() {
  static const Tables* tables = [] {
    auto* t = new Tables();
    t->char_to_byte.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = IsPrintableByte(b) ? b : 256 + next++;
      AppendUtf8(cp, &t->byte_to_char[b]);
      t->char_to_byte[cp] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return *tables;
}

}  // namespace

const std::string& ByteLevelChar(unsigned char b) { return GetTables().byte_to_char[b]; }

std::string ToByteLevel(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += ByteLevelChar(b);
  return out;
}

bool FromByteLevel(std::string_view text, std::string* bytes) {
  const Tables& t = GetTables();
  bytes->clear();
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    uint32_t cp;
    if (c < 0x80) {
      cp = c;
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < text.size()) {
      cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      return false;  // every alphabet character is 1 or 2 UTF-8 bytes
    }
    if (cp >= t.char_to_byte.size() || t.char_to_byte[cp] < 0) return false;
    bytes->push_back(static_cast<char>(t.char_to_byte[cp]));
  }
  return true;
}

}  // namespace pocket::tok
