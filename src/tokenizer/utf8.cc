#include "tokenizer/utf8.h"

#include <cstdlib>

#include <utf8proc.h>

#include "tokenizer/tokenizer.h"

namespace pocket::tok {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

bool InRange(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

}  // namespace

int Utf8SequenceAt(std::string_view s, size_t i, bool* truncated) {
  *truncated = false;
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  int len;
  // The allowed range of the second byte excludes overlongs (E0, F0),
  // surrogates (ED) and code points above U+10FFFF (F4).
  unsigned char lo = 0x80, hi = 0xBF;
  if (InRange(c, 0xC2, 0xDF)) {
    len = 2;
  } else if (InRange(c, 0xE0, 0xEF)) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (InRange(c, 0xF0, 0xF4)) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k < len; ++k) {
    if (i + k >= s.size()) {
      *truncated = true;
      return 0;
    }
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? !InRange(b, lo, hi) : !InRange(b, 0x80, 0xBF)) return 0;
  }
  return len;
}

Status CheckUtf8(std::string_view s) {
  const int64_t bad = FindInvalidUtf8(s);
  if (bad < 0) return Status::Ok();
  return Errorf(StatusCode::kInvalidArgument,
                "invalid UTF-8 at byte %lld: tokenizers take UTF-8 text",
                static_cast<long long>(bad));
}

void DrainUtf8(std::string* pending, bool final, std::string* out) {
  size_t i = 0;
  const std::string& p = *pending;
  while (i < p.size()) {
    bool truncated;
    const int len = Utf8SequenceAt(p, i, &truncated);
    if (len > 0) {
      out->append(p, i, len);
      i += len;
    } else if (truncated && !final) {
      break;  // wait for the rest of this character
    } else if (truncated) {
      out->append(kReplacement);
      i = p.size();
    } else {
      out->append(kReplacement);
      ++i;
    }
  }
  pending->erase(0, i);
}

StatusOr<std::string> NfcNormalize(std::string_view s) {
  if (s.empty()) return std::string();
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
      &dst, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    return Errorf(StatusCode::kInvalidArgument, "NFC normalization failed: %s", utf8proc_errmsg(n));
  }
  std::string result(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
  return result;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace pocket::tok

namespace pocket {

int64_t FindInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    bool truncated;
    const int len = tok::Utf8SequenceAt(text, i, &truncated);
    if (len == 0) return static_cast<int64_t>(i);
    i += len;
  }
  return -1;
}

}  // namespace pocket
