// GBNF: each construct against hand-written strings it must accept and
// reject, the llama.cpp JSON grammar, and errors that name the place.
#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include "grammar/matcher.h"
#include "grammar_testing.h"

namespace pocket {
namespace {

using grammar::CompileGbnf;
using testing::IsPrefix;
using testing::Matches;
using testing::MustCompile;

TEST(Gbnf, LiteralsAndEscapes) {
  auto g = MustCompile(CompileGbnf(R"g(root ::= "a\"b\\c\n\t\x41\u00e9\U0001F600")g"));
  EXPECT_TRUE(Matches(g, "a\"b\\c\n\tA\xc3\xa9\xf0\x9f\x98\x80"));
  EXPECT_FALSE(Matches(g, "a\"b\\c\n\tA\xc3\xa9"));
  EXPECT_TRUE(IsPrefix(g, "a\"b\\c\n\tA\xc3"));  // inside a character
  EXPECT_FALSE(IsPrefix(g, "a\"b\\c\n\tA\xc4"));
}

TEST(Gbnf, Utf8Literal) {
  auto g = MustCompile(CompileGbnf("root ::= \"日本\""));
  EXPECT_TRUE(Matches(g, "日本"));
  EXPECT_FALSE(Matches(g, "日"));
}

TEST(Gbnf, Alternatives) {
  auto g = MustCompile(CompileGbnf(R"g(root ::= "cat" | "dog" | "")g"));
  EXPECT_TRUE(Matches(g, "cat"));
  EXPECT_TRUE(Matches(g, "dog"));
  EXPECT_TRUE(Matches(g, ""));
  EXPECT_FALSE(Matches(g, "ca"));
  EXPECT_FALSE(Matches(g, "cow"));
}

TEST(Gbnf, CharClasses) {
  auto g = MustCompile(CompileGbnf(R"g(root ::= [a-c] [xyz0-9] [\]\-] [é-ë])g"));
  EXPECT_TRUE(Matches(g, "ax]é"));
  EXPECT_TRUE(Matches(g, "c9-ë"));
  EXPECT_FALSE(Matches(g, "dx]é"));
  EXPECT_FALSE(Matches(g, "ax]ì"));
  EXPECT_FALSE(Matches(g, "axaé"));
}

TEST(Gbnf, NegatedClassCoversUnicode) {
  auto g = MustCompile(CompileGbnf(R"g(root ::= [^"\\]+)g"));
  EXPECT_TRUE(Matches(g, "hello"));
  EXPECT_TRUE(Matches(g, "日本語 \xf0\x9f\x98\x80 \x7f"));
  EXPECT_FALSE(Matches(g, "a\"b"));
  EXPECT_FALSE(Matches(g, "a\\b"));
  EXPECT_FALSE(Matches(g, ""));
  // Invalid UTF-8 never matches: surrogates, overlongs, stray continuations.
  EXPECT_FALSE(IsPrefix(g, "\xed\xa0\x80"));
  EXPECT_FALSE(IsPrefix(g, "\xc0\x80"));
  EXPECT_FALSE(IsPrefix(g, "\x80"));
  EXPECT_FALSE(IsPrefix(g, "\xf4\x90"));
}

TEST(Gbnf, AnyChar) {
  auto g = MustCompile(CompileGbnf("root ::= \"<\" . \">\""));
  EXPECT_TRUE(Matches(g, "<x>"));
  EXPECT_TRUE(Matches(g, "<\n>"));
  EXPECT_TRUE(Matches(g, "<日>"));
  EXPECT_FALSE(Matches(g, "<>"));
  EXPECT_FALSE(Matches(g, "<ab>"));
}

TEST(Gbnf, GroupsAndRepetition) {
  auto g = MustCompile(CompileGbnf(R"g(root ::= ("ab" | "c")* "!" "x"+ "y"?)g"));
  EXPECT_TRUE(Matches(g, "!x"));
  EXPECT_TRUE(Matches(g, "abcab!xxxy"));
  EXPECT_FALSE(Matches(g, "a!x"));
  EXPECT_FALSE(Matches(g, "!"));
  EXPECT_FALSE(Matches(g, "!xyy"));
}

TEST(Gbnf, CountedRepetition) {
  auto g = MustCompile(CompileGbnf(R"g(root ::= [0-9]{2,4} "-" "a"{3} "-" "b"{2,} "-" "c"{,2})g"));
  EXPECT_TRUE(Matches(g, "12-aaa-bb-"));
  EXPECT_TRUE(Matches(g, "1234-aaa-bbbbb-cc"));
  EXPECT_FALSE(Matches(g, "1-aaa-bb-"));
  EXPECT_FALSE(Matches(g, "12345-aaa-bb-"));
  EXPECT_FALSE(Matches(g, "12-aa-bb-"));
  EXPECT_FALSE(Matches(g, "12-aaa-b-"));
  EXPECT_FALSE(Matches(g, "12-aaa-bb-ccc"));
}

TEST(Gbnf, RulesCommentsAndLines) {
  auto g = MustCompile(CompileGbnf(R"g(
# a list of greetings
root ::= greeting ("," ws greeting)*   # trailing comment
greeting ::=
    "hi"
  | "hello" name?
name ::= " " [A-Z] [a-z]*
ws ::= [ \t\n]*
)g"));
  EXPECT_TRUE(Matches(g, "hi"));
  EXPECT_TRUE(Matches(g, "hi,hello Bob, \n hi"));
  EXPECT_FALSE(Matches(g, "hi,"));
  EXPECT_FALSE(Matches(g, "hello bob"));
}

TEST(Gbnf, RecursionNestsDeeply) {
  auto g = MustCompile(CompileGbnf(R"g(root ::= "(" root ")" | "x")g"));
  EXPECT_TRUE(Matches(g, "x"));
  std::string deep = std::string(200, '(') + "x" + std::string(200, ')');
  EXPECT_TRUE(Matches(g, deep));
  EXPECT_FALSE(Matches(g, deep + ")"));
  EXPECT_FALSE(Matches(g, deep.substr(0, deep.size() - 1)));
}

TEST(Gbnf, LlamaCppJsonGrammar) {
  // grammars/json.gbnf as llama.cpp ships it (written out here).
  auto g = MustCompile(CompileGbnf(R"g(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)g"));
  EXPECT_TRUE(Matches(g, R"g({"a": [1, 2.5, -3e4, "x\n\u00e9"], "b": {"c": null}} )g"));
  EXPECT_TRUE(Matches(g, "{}"));
  EXPECT_FALSE(Matches(g, R"g({"a": [1, 2,]})g"));
  EXPECT_FALSE(Matches(g, R"g({"a" 1})g"));
  EXPECT_TRUE(IsPrefix(g, R"g({"a": [1, 2)g"));
}

TEST(Gbnf, Errors) {
  const auto error = [](const char* text) {
    auto g = CompileGbnf(text);
    EXPECT_FALSE(g.ok()) << text;
    return g.ok() ? std::string() : g.status().message();
  };
  EXPECT_EQ(error("root ::= \"abc"), "gbnf: line 1, column 14: unterminated string literal");
  EXPECT_EQ(error("root ::= [a-"), "gbnf: line 1, column 13: unterminated character class");
  EXPECT_EQ(error("root ::= \"a\"\nroot ::= \"b\""),
            "gbnf: line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(error("root ::= (\"a\""), "gbnf: line 1, column 14: expected ')'");
  EXPECT_EQ(error("root ::= \"a\" }"), "gbnf: line 1, column 14: unexpected character '}'");
  EXPECT_EQ(error("start ::= \"a\""), "gbnf: no rule named 'root' (the start rule)");
  EXPECT_EQ(error("root ::= item\n"), "grammar: rule 'item' is used but not defined");
  EXPECT_EQ(error("root ::= \"\\q\""), "gbnf: line 1, column 12: unknown escape '\\q'");
  EXPECT_EQ(error("root ::= [z-a]"), "gbnf: line 1, column 14: character range is backwards");
  EXPECT_EQ(error("root ::= \"a\"{3,2}"), "gbnf: line 1, column 18: {m,n} with n < m");
  EXPECT_NE(error("root ::= root \"a\" | \"b\"").find("rule 'root' is left-recursive"),
            std::string::npos);
  EXPECT_NE(error("root ::= (\"a\"?)*").find("repeats something that can match the empty"),
            std::string::npos);
  EXPECT_NE(error("root ::= (\"a\"?){2,300}").find("repeats something that can match the empty"),
            std::string::npos);
  EXPECT_NE(error("root ::= \"a\" root").find("rule 'root' can never finish"), std::string::npos);
}

}  // namespace
}  // namespace pocket
