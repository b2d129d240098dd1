// Context-free grammars over bytes, the common target of the GBNF, regex
// and JSON-schema front ends. A GrammarBuilder collects rules as expression
// trees (literals, Unicode character classes, sequences, alternatives,
// bounded or unbounded repetition, rule references); Build() lowers them to a
// flat Grammar whose terminals are sets of bytes: a class of code points
// becomes the alternatives of its UTF-8 encodings, so the matcher
// (matcher.h) advances one byte at a time and a token that ends inside a
// multi-byte character is matched like any other.
//
// Build() drops the alternatives that can never finish (no finite string
// matches them), so the matcher never enters a dead end, and refuses what
// the matcher cannot run: a reference to an undefined rule, a start rule
// that can never finish, and left recursion (a rule that reaches itself
// before consuming a byte, which includes repeating something that can
// match the empty string). Every error names the rule.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace pocket {
namespace grammar {

// An inclusive range of Unicode code points.
struct CodeRange {
  uint32_t lo;
  uint32_t hi;
};

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// The lowered grammar. Each rule is a list of alternatives; an alternative
// is a run of elements in `elements`, ended by a kEnd element. A position
// is an index into `elements`.
class Grammar {
 public:
  enum class Kind : uint8_t { kBytes, kRule, kEnd };
  struct Element {
    Kind kind;
    int32_t arg;  // kBytes: index into byte_sets; kRule: rule id
  };
  using ByteSet = std::array<uint64_t, 4>;

  int32_t root() const { return root_; }
  const std::vector<Element>& elements() const { return elements_; }
  const std::vector<int32_t>& alternatives(int32_t rule) const { return rules_[rule]; }
  const std::string& rule_name(int32_t rule) const { return names_[rule]; }
  int32_t num_rules() const { return static_cast<int32_t>(rules_.size()); }
  bool ByteIn(int32_t set, uint8_t b) const { return (byte_sets_[set][b >> 6] >> (b & 63)) & 1; }

 private:
  friend class GrammarBuilder;
  int32_t root_ = 0;
  std::vector<Element> elements_;
  std::vector<std::vector<int32_t>> rules_;  // start positions of each alternative
  std::vector<std::string> names_;
  std::vector<ByteSet> byte_sets_;
};

class GrammarBuilder {
 public:
  using Expr = int32_t;
  static constexpr int32_t kUnbounded = -1;

  GrammarBuilder();
  ~GrammarBuilder();

  Expr Empty();
  Expr Literal(std::string_view bytes);
  // Code points in any of `ranges` (or, negated, in none of them). UTF-16
  // surrogates are never matched: they are not characters.
  Expr Chars(std::vector<CodeRange> ranges, bool negated = false);
  Expr Seq(std::vector<Expr> items);
  Expr Alt(std::vector<Expr> items);
  // `item` at least `min` and at most `max` times (kUnbounded: no limit).
  Expr Repeat(Expr item, int32_t min, int32_t max);
  Expr Ref(int32_t rule);

  // The rule called `name`, declared on first use.
  int32_t Rule(std::string_view name);
  // A rule with a fresh name starting with `hint`.
  int32_t NewRule(std::string_view hint);
  // Whether the rule has a body yet.
  bool Defined(int32_t rule) const;
  void Define(int32_t rule, Expr body);
  const std::string& RuleName(int32_t rule) const;

  StatusOr<std::shared_ptr<const Grammar>> Build(int32_t root) const;

 private:
  struct Node;
  class Lowering;
  std::vector<Node> nodes_;
  std::vector<std::string> rule_names_;
  std::vector<Expr> rule_bodies_;  // -1: not defined
};

// Appends the UTF-8 encoding of a code point.
void AppendUtf8(uint32_t code_point, std::string* out);
// Decodes the character at text[pos]: its length in bytes, or 0 when the
// bytes there are not valid UTF-8.
int DecodeUtf8(std::string_view text, size_t pos, uint32_t* code_point);

}  // namespace grammar
}  // namespace pocket
