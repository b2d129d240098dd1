#include "tokenizer/chat_text.h"

#include <cstdint>

namespace pocket {
namespace chat_text {
namespace {

// The code points for which Python's str.isspace() is true.
bool IsPyWhitespace(uint32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  if (cp >= 0x1C && cp <= 0x20) return true;
  if (cp == 0x85 || cp == 0xA0 || cp == 0x1680) return true;
  if (cp >= 0x2000 && cp <= 0x200A) return true;
  return cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Decodes the UTF-8 sequence starting at s[i]; returns its length, or 0 when
// it is not a well-formed sequence (such bytes are never whitespace).
size_t DecodeAt(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t lead = b(i);
  size_t len;
  uint32_t value;
  if (lead < 0x80) {
    *cp = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    len = 2;
    value = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3;
    value = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4;
    value = lead & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    value = (value << 6) | (b(i + k) & 0x3F);
  }
  *cp = value;
  return len;
}

// Start of the UTF-8 sequence that ends at s[end - 1] (continuation bytes
// are skipped backwards, at most three).
size_t SequenceStartBefore(std::string_view s, size_t end) {
  size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) {
    --start;
  }
  return start;
}

}  // namespace

std::string_view StripWhitespace(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    uint32_t cp = 0;
    const size_t len = DecodeAt(s, begin, &cp);
    if (len == 0 || !IsPyWhitespace(cp)) break;
    begin += len;
  }
  size_t end = s.size();
  while (end > begin) {
    const size_t start = SequenceStartBefore(s, end);
    uint32_t cp = 0;
    const size_t len = DecodeAt(s, start, &cp);
    if (len == 0 || start + len != end || start < begin || !IsPyWhitespace(cp)) break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

std::string_view LstripChar(std::string_view s, char c) {
  const size_t begin = s.find_first_not_of(c);
  return begin == std::string_view::npos ? std::string_view() : s.substr(begin);
}

std::string_view RstripChar(std::string_view s, char c) {
  const size_t last = s.find_last_not_of(c);
  return last == std::string_view::npos ? std::string_view() : s.substr(0, last + 1);
}

std::string_view StripChar(std::string_view s, char c) { return RstripChar(LstripChar(s, c), c); }

std::string_view BeforeFirst(std::string_view s, std::string_view sep) {
  const size_t pos = s.find(sep);
  return pos == std::string_view::npos ? s : s.substr(0, pos);
}

std::string_view AfterLast(std::string_view s, std::string_view sep) {
  const size_t pos = s.rfind(sep);
  return pos == std::string_view::npos ? s : s.substr(pos + sep.size());
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace chat_text
}  // namespace pocket
