#include "grammar/regex.h"

#include <algorithm>
#include <string>
#include <vector>

namespace pocket {
namespace grammar {

using Expr = GrammarBuilder::Expr;

namespace {

// Repetition counts above this would expand into that many rules.
constexpr int64_t kMaxRepeat = 10000;

bool IsJsonSpecial(uint32_t c) { return c < 0x20 || c == '"' || c == '\\'; }

std::string JsonEscape(uint32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default: {
      static const char kHex[] = "0123456789abcdef";
      return std::string("\\u00") + kHex[c >> 4] + kHex[c & 15];
    }
  }
}

const std::vector<CodeRange> kDigit = {{'0', '9'}};
const std::vector<CodeRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodeRange> kSpace = {{'\t', '\r'}, {' ', ' '}};

class RegexParser {
 public:
  RegexParser(std::string_view pattern, RegexMode mode, GrammarBuilder* b)
      : s_(pattern), mode_(mode), b_(b) {}

  StatusOr<Expr> Parse() {
    bool start_anchor = false, end_anchor = false;
    if (!s_.empty() && s_[0] == '^') {
      start_anchor = true;
      pos_ = 1;
    }
    if (s_.size() > pos_ && s_.back() == '$') {
      size_t backslashes = 0;
      for (size_t i = s_.size() - 1; i > pos_ && s_[i - 1] == '\\'; --i) ++backslashes;
      if (backslashes % 2 == 0) {
        end_anchor = true;
        end_ = s_.size() - 1;
      }
    }
    Expr body = -1;
    bool top_alternation = false;
    POCKET_RETURN_IF_ERROR(Alternatives(&body, &top_alternation));
    if (pos_ < end_) return Error("unbalanced ')'");
    if (mode_ == RegexMode::kWhole) return body;
    if (top_alternation && (start_anchor || end_anchor)) {
      return Error(
          "an anchor beside a top-level '|' is not supported; group the alternatives, "
          "as in ^(a|b)$");
    }
    // A search: anything may come before an unanchored start and after an
    // unanchored end.
    std::vector<Expr> seq;
    if (!start_anchor) seq.push_back(AnyString());
    seq.push_back(body);
    if (!end_anchor) seq.push_back(AnyString());
    return b_->Seq(std::move(seq));
  }

 private:
  Status Error(const std::string& what) const {
    return Errorf(StatusCode::kInvalidArgument, "regex '%.*s': at offset %zu: %s",
                  static_cast<int>(std::min<size_t>(s_.size(), 200)), s_.data(), pos_,
                  what.c_str());
  }

  bool AtEnd() const { return pos_ >= end_; }

  Expr CharsExpr(const std::vector<CodeRange>& ranges, bool negated) {
    if (mode_ == RegexMode::kJsonSearch) return JsonStringChars(ranges, negated, b_);
    return b_->Chars(ranges, negated);
  }

  Expr AnyString() { return b_->Repeat(CharsExpr({}, true), 0, GrammarBuilder::kUnbounded); }

  Status Alternatives(Expr* out, bool* had_alternation) {
    std::vector<Expr> alts;
    for (;;) {
      Expr seq = -1;
      POCKET_RETURN_IF_ERROR(Sequence(&seq));
      alts.push_back(seq);
      if (AtEnd() || s_[pos_] != '|') break;
      ++pos_;
    }
    if (had_alternation != nullptr) *had_alternation = alts.size() > 1;
    *out = b_->Alt(std::move(alts));
    return Status::Ok();
  }

  Status Sequence(Expr* out) {
    std::vector<Expr> items;
    while (!AtEnd() && s_[pos_] != '|' && s_[pos_] != ')') {
      Expr item = -1;
      POCKET_RETURN_IF_ERROR(Atom(&item));
      POCKET_RETURN_IF_ERROR(Quantifiers(&item));
      items.push_back(item);
    }
    *out = items.empty() ? b_->Empty() : b_->Seq(std::move(items));
    return Status::Ok();
  }

  Status Atom(Expr* out) {
    const char c = s_[pos_];
    switch (c) {
      case '(': {
        ++pos_;
        if (s_.compare(pos_, 2, "?:") == 0) {
          pos_ += 2;
        } else if (s_.compare(pos_, 2, "?<") == 0 && s_.compare(pos_, 3, "?<=") != 0 &&
                   s_.compare(pos_, 3, "?<!") != 0) {
          const size_t close = s_.find('>', pos_);
          if (close == std::string_view::npos) return Error("unterminated group name");
          pos_ = close + 1;
        } else if (s_.compare(pos_, 3, "?P<") == 0) {
          const size_t close = s_.find('>', pos_);
          if (close == std::string_view::npos) return Error("unterminated group name");
          pos_ = close + 1;
        } else if (pos_ < s_.size() && s_[pos_] == '?') {
          return Error("lookaround and inline flags ((?=, (?!, (?<=, (?<!, (?i) are not supported");
        }
        POCKET_RETURN_IF_ERROR(Alternatives(out, nullptr));
        if (AtEnd() || s_[pos_] != ')') return Error("expected ')'");
        ++pos_;
        return Status::Ok();
      }
      case '[':
        return Class(out);
      case '.':
        ++pos_;
        *out = CharsExpr({{'\n', '\n'}, {'\r', '\r'}}, true);
        return Status::Ok();
      case '^':
      case '$':
        return Error("anchors are supported only at the start (^) and end ($) of the pattern");
      case '*':
      case '+':
      case '?':
        return Error(std::string("nothing to repeat before '") + c + "'");
      case '\\': {
        std::vector<CodeRange> ranges;
        bool negated = false;
        POCKET_RETURN_IF_ERROR(Escape(&ranges, &negated));
        *out = CharsExpr(ranges, negated);
        return Status::Ok();
      }
      default: {
        uint32_t cp;
        const int n = DecodeUtf8(s_, pos_, &cp);
        if (n == 0) return Error("invalid UTF-8");
        pos_ += n;
        *out = CharsExpr({{cp, cp}}, false);
        return Status::Ok();
      }
    }
  }

  // An escape after '\\' (pos_ at the backslash): a class (\d) or one
  // character.
  Status Escape(std::vector<CodeRange>* ranges, bool* negated) {
    if (++pos_ >= end_) return Error("escape at the end of the pattern");
    const char e = s_[pos_++];
    *negated = false;
    uint32_t cp;
    switch (e) {
      case 'd':
        *ranges = kDigit;
        return Status::Ok();
      case 'D':
        *ranges = kDigit, *negated = true;
        return Status::Ok();
      case 'w':
        *ranges = kWord;
        return Status::Ok();
      case 'W':
        *ranges = kWord, *negated = true;
        return Status::Ok();
      case 's':
        *ranges = kSpace;
        return Status::Ok();
      case 'S':
        *ranges = kSpace, *negated = true;
        return Status::Ok();
      case 'n':
        cp = '\n';
        break;
      case 'r':
        cp = '\r';
        break;
      case 't':
        cp = '\t';
        break;
      case 'f':
        cp = '\f';
        break;
      case 'v':
        cp = '\v';
        break;
      case '0':
        cp = 0;
        break;
      case 'x':
      case 'u': {
        const int digits = e == 'x' ? 2 : 4;
        cp = 0;
        for (int i = 0; i < digits; ++i, ++pos_) {
          const char h = pos_ < end_ ? s_[pos_] : '\0';
          int d;
          if (h >= '0' && h <= '9') {
            d = h - '0';
          } else if (h >= 'a' && h <= 'f') {
            d = h - 'a' + 10;
          } else if (h >= 'A' && h <= 'F') {
            d = h - 'A' + 10;
          } else {
            return Error("expected a hex digit");
          }
          cp = cp * 16 + static_cast<uint32_t>(d);
        }
        break;
      }
      case 'b':
      case 'B':
        return Error("word boundaries (\\b, \\B) are not supported");
      default:
        if (e >= '1' && e <= '9') return Error("backreferences are not supported");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
          return Error(std::string("unknown escape '\\") + e + "'");
        }
        if (static_cast<uint8_t>(e) >= 0x80) {
          --pos_;
          const int n = DecodeUtf8(s_, pos_, &cp);
          if (n == 0) return Error("invalid UTF-8");
          pos_ += n;
          break;
        }
        cp = static_cast<uint8_t>(e);
    }
    *ranges = {{cp, cp}};
    return Status::Ok();
  }

  Status Class(Expr* out) {
    ++pos_;  // '['
    bool negated = false;
    if (!AtEnd() && s_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CodeRange> ranges;
    bool first = true;
    while (!AtEnd() && (s_[pos_] != ']' || first)) {
      first = false;
      if (s_.compare(pos_, 2, "[:") == 0)
        return Error("POSIX classes ([:alpha:]) are not supported");
      uint32_t lo;
      bool single;
      POCKET_RETURN_IF_ERROR(ClassItem(&ranges, &lo, &single));
      if (!single || AtEnd() || s_[pos_] != '-' || pos_ + 1 >= end_ || s_[pos_ + 1] == ']') {
        continue;
      }
      ++pos_;  // '-'
      uint32_t hi;
      std::vector<CodeRange> unused;
      POCKET_RETURN_IF_ERROR(ClassItem(&unused, &hi, &single));
      if (!single) return Error("a class escape cannot end a range");
      if (hi < lo) return Error("character range is backwards");
      ranges.back().hi = hi;
    }
    if (AtEnd()) return Error("unterminated character class");
    ++pos_;
    *out = CharsExpr(ranges, negated);
    return Status::Ok();
  }

  // One item of a class: a character (appended as a one-point range, *cp
  // set, *single true) or a class escape such as \d (appended).
  Status ClassItem(std::vector<CodeRange>* ranges, uint32_t* cp, bool* single) {
    *single = true;
    if (s_[pos_] == '\\') {
      std::vector<CodeRange> escaped;
      bool negated;
      if (pos_ + 1 < end_ && s_[pos_ + 1] == 'b') {
        pos_ += 2;
        escaped = {{'\b', '\b'}};
      } else {
        POCKET_RETURN_IF_ERROR(Escape(&escaped, &negated));
        if (negated) {
          return Error("negated class escapes (\\D \\W \\S) inside [] are not supported");
        }
      }
      if (escaped.size() != 1 || escaped[0].lo != escaped[0].hi) {
        *single = false;
        ranges->insert(ranges->end(), escaped.begin(), escaped.end());
        return Status::Ok();
      }
      *cp = escaped[0].lo;
    } else {
      const int n = DecodeUtf8(s_, pos_, cp);
      if (n == 0) return Error("invalid UTF-8");
      pos_ += n;
    }
    ranges->push_back({*cp, *cp});
    return Status::Ok();
  }

  bool Number(int64_t* out) {
    const size_t start = pos_;
    int64_t v = 0;
    while (!AtEnd() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = std::min<int64_t>(v * 10 + (s_[pos_] - '0'), kMaxRepeat + 1);
      ++pos_;
    }
    *out = v;
    return pos_ > start;
  }

  Status Quantifiers(Expr* item) {
    while (!AtEnd()) {
      const char c = s_[pos_];
      int64_t min, max = GrammarBuilder::kUnbounded;
      if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        min = c == '+' ? 1 : 0;
        if (c == '?') max = 1;
      } else if (c == '{') {
        const size_t save = pos_++;
        if (!Number(&min)) {
          // Not a quantifier: a literal '{', as most engines read it.
          pos_ = save;
          return Status::Ok();
        }
        if (!AtEnd() && s_[pos_] == ',') {
          ++pos_;
          if (!Number(&max)) max = GrammarBuilder::kUnbounded;
        } else {
          max = min;
        }
        if (AtEnd() || s_[pos_] != '}') return Error("expected '}'");
        ++pos_;
        if (min > kMaxRepeat || max > kMaxRepeat) {
          return Error("repetition count above " + std::to_string(kMaxRepeat));
        }
        if (max != GrammarBuilder::kUnbounded && max < min) return Error("{m,n} with n < m");
      } else {
        return Status::Ok();
      }
      if (!AtEnd() && s_[pos_] == '+') return Error("possessive quantifiers are not supported");
      if (!AtEnd() && s_[pos_] == '?') ++pos_;  // lazy: the same strings
      *item = b_->Repeat(*item, static_cast<int32_t>(min), static_cast<int32_t>(max));
    }
    return Status::Ok();
  }

  std::string_view s_;
  RegexMode mode_;
  GrammarBuilder* b_;
  size_t pos_ = 0;
  size_t end_ = s_.size();
};

}  // namespace

Expr JsonStringChars(const std::vector<CodeRange>& ranges, bool negated, GrammarBuilder* b) {
  const auto member = [&](uint32_t c) {
    bool in = false;
    for (const CodeRange& r : ranges) in = in || (c >= r.lo && c <= r.hi);
    return in != negated;
  };
  std::vector<Expr> alts;
  if (negated) {
    // Everything outside `ranges` and outside the characters JSON escapes.
    std::vector<CodeRange> excluded = ranges;
    excluded.push_back({0, 0x1F});
    excluded.push_back({'"', '"'});
    excluded.push_back({'\\', '\\'});
    alts.push_back(b->Chars(std::move(excluded), true));
  } else {
    const std::vector<CodeRange> plain = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodePoint}};
    std::vector<CodeRange> kept;
    for (const CodeRange& r : ranges) {
      for (const CodeRange& p : plain) {
        const uint32_t lo = std::max(r.lo, p.lo), hi = std::min(r.hi, p.hi);
        if (lo <= hi) kept.push_back({lo, hi});
      }
    }
    if (!kept.empty()) alts.push_back(b->Chars(std::move(kept)));
  }
  for (uint32_t c = 0; c <= '\\'; ++c) {
    if (IsJsonSpecial(c) && member(c)) alts.push_back(b->Literal(JsonEscape(c)));
  }
  if (alts.empty()) return b->Chars({});  // matches nothing
  return b->Alt(std::move(alts));
}

StatusOr<Expr> ParseRegex(std::string_view pattern, RegexMode mode, GrammarBuilder* builder) {
  RegexParser parser(pattern, mode, builder);
  return parser.Parse();
}

StatusOr<std::shared_ptr<const Grammar>> CompileRegex(std::string_view pattern) {
  GrammarBuilder b;
  POCKET_ASSIGN_OR_RETURN(Expr body, ParseRegex(pattern, RegexMode::kWhole, &b));
  const int32_t root = b.Rule("root");
  b.Define(root, body);
  return b.Build(root);
}

}  // namespace grammar
}  // namespace pocket
