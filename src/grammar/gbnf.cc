#include "grammar/gbnf.h"

#include <string>
#include <vector>

namespace pocket {
namespace grammar {
namespace {

using Expr = GrammarBuilder::Expr;

// Repetition counts above this would expand into that many rules.
constexpr int64_t kMaxRepeat = 10000;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, GrammarBuilder* b) : s_(text), b_(b) {}

  Status Parse() {
    SkipSpace();
    while (pos_ < s_.size()) {
      const size_t at = pos_;
      const std::string name = Name();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace();
      if (s_.compare(pos_, 3, "::=") != 0) return Error("expected '::=' after the rule name");
      pos_ += 3;
      Expr body = -1;
      POCKET_RETURN_IF_ERROR(Alternatives(&body));
      const int32_t rule = b_->Rule(name);
      if (b_->Defined(rule)) {
        pos_ = at;
        return Error("rule '" + name + "' is defined twice");
      }
      b_->Define(rule, body);
      if (pos_ < s_.size() && s_[pos_] == ')') return Error("unbalanced ')'");
    }
    return Status::Ok();
  }

 private:
  Status Error(const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return Errorf(StatusCode::kInvalidArgument, "gbnf: line %d, column %d: %s", line, column,
                  what.c_str());
  }

  void SkipSpace() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string Name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  // Whether a new rule (`name ::=`) starts here, which ends the body before.
  bool AtRuleStart() const {
    size_t p = pos_;
    while (p < s_.size() && IsNameChar(s_[p])) ++p;
    if (p == pos_) return false;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\n' || s_[p] == '\r')) {
      ++p;
    }
    return s_.compare(p, 3, "::=") == 0;
  }

  Status Alternatives(Expr* out) {
    std::vector<Expr> alts;
    for (;;) {
      Expr seq = -1;
      POCKET_RETURN_IF_ERROR(Sequence(&seq));
      alts.push_back(seq);
      if (pos_ >= s_.size() || s_[pos_] != '|') break;
      ++pos_;
    }
    *out = b_->Alt(std::move(alts));
    return Status::Ok();
  }

  Status Sequence(Expr* out) {
    std::vector<Expr> items;
    for (;;) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] == '|' || s_[pos_] == ')' || AtRuleStart()) break;
      Expr item = -1;
      POCKET_RETURN_IF_ERROR(Primary(&item));
      POCKET_RETURN_IF_ERROR(Postfix(&item));
      items.push_back(item);
    }
    *out = items.empty() ? b_->Empty() : b_->Seq(std::move(items));
    return Status::Ok();
  }

  Status Primary(Expr* out) {
    const char c = s_[pos_];
    if (c == '"') {
      ++pos_;
      std::string bytes;
      while (pos_ < s_.size() && s_[pos_] != '"') {
        uint32_t cp;
        POCKET_RETURN_IF_ERROR(Char(&cp));
        AppendUtf8(cp, &bytes);
      }
      if (pos_ >= s_.size()) return Error("unterminated string literal");
      ++pos_;
      *out = b_->Literal(bytes);
      return Status::Ok();
    }
    if (c == '[') return Class(out);
    if (c == '.') {
      ++pos_;
      *out = b_->Chars({}, true);
      return Status::Ok();
    }
    if (c == '(') {
      ++pos_;
      POCKET_RETURN_IF_ERROR(Alternatives(out));
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ')') return Error("expected ')'");
      ++pos_;
      return Status::Ok();
    }
    if (IsNameChar(c)) {
      *out = b_->Ref(b_->Rule(Name()));
      return Status::Ok();
    }
    if (c == '<') return Error("token references (<...>) are not supported");
    return Error(std::string("unexpected character '") + c + "'");
  }

  Status Class(Expr* out) {
    ++pos_;  // '['
    const bool negated = pos_ < s_.size() && s_[pos_] == '^';
    if (negated) ++pos_;
    std::vector<CodeRange> ranges;
    while (pos_ < s_.size() && s_[pos_] != ']') {
      uint32_t lo, hi;
      POCKET_RETURN_IF_ERROR(Char(&lo));
      hi = lo;
      if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
        ++pos_;
        POCKET_RETURN_IF_ERROR(Char(&hi));
        if (hi < lo) return Error("character range is backwards");
      }
      ranges.push_back({lo, hi});
    }
    if (pos_ >= s_.size()) return Error("unterminated character class");
    ++pos_;
    *out = b_->Chars(std::move(ranges), negated);
    return Status::Ok();
  }

  // One character of a literal or class: UTF-8 text or an escape.
  Status Char(uint32_t* cp) {
    if (s_[pos_] != '\\') {
      const int n = DecodeUtf8(s_, pos_, cp);
      if (n == 0) return Error("invalid UTF-8");
      pos_ += n;
      return Status::Ok();
    }
    if (++pos_ >= s_.size()) return Error("escape at the end of the grammar");
    const char e = s_[pos_++];
    int digits = 0;
    switch (e) {
      case 'n':
        *cp = '\n';
        return Status::Ok();
      case 'r':
        *cp = '\r';
        return Status::Ok();
      case 't':
        *cp = '\t';
        return Status::Ok();
      case 'x':
        digits = 2;
        break;
      case 'u':
        digits = 4;
        break;
      case 'U':
        digits = 8;
        break;
      case '\\':
      case '"':
      case '\'':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
        *cp = static_cast<uint8_t>(e);
        return Status::Ok();
      default:
        --pos_;
        return Error(std::string("unknown escape '\\") + e + "'");
    }
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      const char h = pos_ < s_.size() ? s_[pos_] : '\0';
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
      v = v * 16 + static_cast<uint32_t>(d);
    }
    if (v > kMaxCodePoint) return Error("code point above U+10FFFF");
    *cp = v;
    return Status::Ok();
  }

  bool Number(int64_t* out) {
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = std::min<int64_t>(v * 10 + (s_[pos_] - '0'), kMaxRepeat + 1);
      ++pos_;
    }
    *out = v;
    return pos_ > start;
  }

  Status Postfix(Expr* item) {
    for (;;) {
      const size_t save = pos_;
      SkipSpace();
      if (pos_ >= s_.size()) return Status::Ok();
      const char c = s_[pos_];
      if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        *item = b_->Repeat(*item, c == '+' ? 1 : 0, c == '?' ? 1 : GrammarBuilder::kUnbounded);
        continue;
      }
      if (c != '{') {
        pos_ = save;
        return Status::Ok();
      }
      ++pos_;
      int64_t min = 0, max = GrammarBuilder::kUnbounded;
      SkipSpace();
      const bool has_min = Number(&min);
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        SkipSpace();
        if (!Number(&max)) max = GrammarBuilder::kUnbounded;
        SkipSpace();
      } else {
        if (!has_min) return Error("expected a count in {}");
        max = min;
      }
      if (pos_ >= s_.size() || s_[pos_] != '}') return Error("expected '}'");
      ++pos_;
      if (min > kMaxRepeat || max > kMaxRepeat) {
        return Error("repetition count above " + std::to_string(kMaxRepeat));
      }
      if (max != GrammarBuilder::kUnbounded && max < min) return Error("{m,n} with n < m");
      *item = b_->Repeat(*item, static_cast<int32_t>(min), static_cast<int32_t>(max));
    }
  }

  std::string_view s_;
  GrammarBuilder* b_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> CompileGbnf(std::string_view text, std::string_view root) {
  GrammarBuilder b;
  GbnfParser parser(text, &b);
  POCKET_RETURN_IF_ERROR(parser.Parse());
  const int32_t r = b.Rule(root);
  if (!b.Defined(r)) {
    return Errorf(StatusCode::kInvalidArgument, "gbnf: no rule named '%.*s' (the start rule)",
                  static_cast<int>(root.size()), root.data());
  }
  return b.Build(r);
}

}  // namespace grammar
}  // namespace pocket
