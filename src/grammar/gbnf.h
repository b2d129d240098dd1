// GBNF, the grammar format of llama.cpp (its grammars/README.md), compiled
// to a Grammar:
//
//   root   ::= "{" ws pair ("," ws pair)* "}"   # a comment
//   pair   ::= [a-z]+ ":" ws [0-9]{1,3}
//   ws     ::= [ \t\n]*
//
// Rules are `name ::= alternatives`; names are letters, digits, `-` and
// `_`. A rule's body runs until the next `name ::=`, so it may span lines.
// Elements: "literals" and [classes] with the escapes \n \r \t \\ \" \' \[
// \] \- \^ \/ \xHH \uHHHH \UHHHHHHHH, [^negated] classes, `.` (any
// character), rule names, ( groups ), and the postfix operators * + ? {m}
// {m,} {,n} {m,n}. The grammar starts at `root`. Errors name the line and
// column.
#pragma once

#include <memory>
#include <string_view>

#include "grammar/grammar.h"
#include "util/status.h"

namespace pocket {
namespace grammar {

StatusOr<std::shared_ptr<const Grammar>> CompileGbnf(std::string_view text,
                                                     std::string_view root = "root");

}  // namespace grammar
}  // namespace pocket
