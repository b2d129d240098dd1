// Regular expressions compiled to grammars. The subset (the same for
// `pocket run --regex` and a JSON schema's "pattern"):
//
//   literals, `.` (any character but \n and \r), [classes], [^negated]
//   classes with ranges, the escapes \d \D \w \W \s \S \n \r \t \f \v \0
//   \xHH \uHHHH and escaped punctuation, alternation `|`, groups `( )`,
//   `(?: )` and named `(?<name> )` / `(?P<name> )`, the quantifiers * + ?
//   {m} {m,} {m,n} (lazy `*?` etc. match the same strings), `^` at the very
//   start and `$` at the very end.
//
// Not supported (an error naming the construct): backreferences,
// lookaround, \b \B, possessive quantifiers, inline flags, POSIX classes
// and anchors anywhere else. \d \w \s are ASCII ([0-9], [A-Za-z0-9_],
// [ \t\n\r\f\v]).
#pragma once

#include <memory>
#include <string_view>

#include "grammar/grammar.h"
#include "util/status.h"

namespace pocket {
namespace grammar {

enum class RegexMode {
  kWhole,       // the whole input must match; ^ and $ are optional
  kJsonSearch,  // inside a JSON string: the content contains a match (as
                // JSON Schema's "pattern"), unless ^ / $ anchor it; characters
                // that JSON must escape are matched as their escapes
};

StatusOr<GrammarBuilder::Expr> ParseRegex(std::string_view pattern, RegexMode mode,
                                          GrammarBuilder* builder);

// A grammar matching exactly the strings of `pattern` (kWhole).
StatusOr<std::shared_ptr<const Grammar>> CompileRegex(std::string_view pattern);

// The characters of `ranges` as they appear inside a JSON string: plain
// where JSON allows it, as an escape (\" \\ \n, \u00XX) where it must.
GrammarBuilder::Expr JsonStringChars(const std::vector<CodeRange>& ranges, bool negated,
                                     GrammarBuilder* builder);

}  // namespace grammar
}  // namespace pocket
