#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace pocket::tok {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// A byte that belongs to a word for single_word purposes: ASCII
// alphanumerics, '_' and any non-ASCII byte (letters of other scripts).
bool IsWordByte(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') ||
         u == '_';
}

}  // namespace

void AddedTokenMatcher::Build(std::vector<AddedToken> tokens) {
  tokens.erase(std::remove_if(tokens.begin(), tokens.end(),
                              [](const AddedToken& t) { return t.content.empty(); }),
               tokens.end());
  std::stable_sort(tokens.begin(), tokens.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.content.size() > b.content.size();
  });
  tokens_ = std::move(tokens);
  for (auto& v : by_first_byte_) v.clear();
  for (size_t i = 0; i < tokens_.size(); ++i) {
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(
        static_cast<int>(i));
  }
}

int AddedTokenMatcher::Match(std::string_view text, size_t pos, bool parse_special) const {
  for (int i : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
    const AddedToken& t = tokens_[i];
    if ((t.attrs & kAttrSpecial) && !parse_special) continue;
    if (text.compare(pos, t.content.size(), t.content) != 0) continue;
    if (t.attrs & kAttrSingleWord) {
      const size_t end = pos + t.content.size();
      if (pos > 0 && IsWordByte(text[pos - 1])) continue;
      if (end < text.size() && IsWordByte(text[end])) continue;
    }
    return i;
  }
  return -1;
}

void AddedTokenMatcher::Split(std::string_view text, bool parse_special,
                              std::vector<Segment>* out) const {
  out->clear();
  size_t text_begin = 0;  // start of the pending text segment
  size_t pos = 0;
  while (pos < text.size()) {
    const int m = tokens_.empty() ? -1 : Match(text, pos, parse_special);
    if (m < 0) {
      ++pos;
      continue;
    }
    const AddedToken& t = tokens_[m];
    size_t text_end = pos;
    if (t.attrs & kAttrLstrip) {
      while (text_end > text_begin && IsSpace(text[text_end - 1])) --text_end;
    }
    if (text_end > text_begin) out->push_back(Segment{text_begin, text_end, -1});
    out->push_back(Segment{pos, pos + t.content.size(), t.id});
    pos += t.content.size();
    if (t.attrs & kAttrRstrip) {
      while (pos < text.size() && IsSpace(text[pos])) ++pos;
    }
    text_begin = pos;
  }
  if (text.size() > text_begin) out->push_back(Segment{text_begin, text.size(), -1});
}

}  // namespace pocket::tok
