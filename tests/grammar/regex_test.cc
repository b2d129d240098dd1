// The regex subset: each construct against hand-written strings, and the
// constructs outside the subset as errors naming them.
#include "grammar/regex.h"

#include <gtest/gtest.h>

#include "grammar_testing.h"

namespace pocket {
namespace {

using grammar::CompileRegex;
using testing::Matches;
using testing::MustCompile;

TEST(Regex, Basics) {
  auto g = MustCompile(CompileRegex("^(cat|dog)s?[0-9]{2,3}\\.x*$"));
  EXPECT_TRUE(Matches(g, "cat12."));
  EXPECT_TRUE(Matches(g, "dogs123.xxx"));
  EXPECT_FALSE(Matches(g, "cat1."));
  EXPECT_FALSE(Matches(g, "cat12x"));
  EXPECT_FALSE(Matches(g, "bird12."));
}

TEST(Regex, ClassesAndEscapes) {
  auto g = MustCompile(CompileRegex(R"re(\d\w\s[^a-c\d][\w-]\x41é.)re"));
  EXPECT_TRUE(Matches(g, "7_ d-Aéz"));
  EXPECT_TRUE(Matches(g, "0a\tzqAé日"));
  EXPECT_FALSE(Matches(g, "7_ b-Aéz"));
  EXPECT_FALSE(Matches(g, "7_ 5-Aéz"));
  EXPECT_FALSE(Matches(g, "7_ d-Aé\n"));  // '.' is not a newline
  auto neg = MustCompile(CompileRegex(R"re(\D\W\S)re"));
  EXPECT_TRUE(Matches(neg, "a-x"));
  EXPECT_FALSE(Matches(neg, "1-x"));
  EXPECT_FALSE(Matches(neg, "aax"));
  EXPECT_FALSE(Matches(neg, "a- "));
}

TEST(Regex, GroupsAndQuantifiers) {
  auto g = MustCompile(CompileRegex("(?:ab)+(?<n>c|d)*?e{2}f{1,}g?"));
  EXPECT_TRUE(Matches(g, "abeef"));
  EXPECT_TRUE(Matches(g, "ababcdceefffg"));
  EXPECT_FALSE(Matches(g, "aeef"));
  EXPECT_FALSE(Matches(g, "abef"));
  auto brace = MustCompile(CompileRegex("a{b}"));  // not a quantifier: literal braces
  EXPECT_TRUE(Matches(brace, "a{b}"));
}

TEST(Regex, UnsupportedConstructsAreErrors) {
  const auto error = [](const char* pattern) {
    auto g = CompileRegex(pattern);
    EXPECT_FALSE(g.ok()) << pattern;
    return g.ok() ? std::string() : g.status().message();
  };
  EXPECT_NE(error("(a)\\1").find("backreferences"), std::string::npos);
  EXPECT_NE(error("a(?=b)").find("lookaround"), std::string::npos);
  EXPECT_NE(error("\\bword").find("word boundaries"), std::string::npos);
  EXPECT_NE(error("a++").find("possessive"), std::string::npos);
  EXPECT_NE(error("a^b").find("anchors"), std::string::npos);
  EXPECT_NE(error("[[:alpha:]]").find("POSIX"), std::string::npos);
  EXPECT_NE(error("(ab").find("expected ')'"), std::string::npos);
  EXPECT_NE(error("ab)").find("unbalanced"), std::string::npos);
  EXPECT_NE(error("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(error("[b-a]").find("backwards"), std::string::npos);
  EXPECT_EQ(error("a{3,2}"), "regex 'a{3,2}': at offset 6: {m,n} with n < m");
}

}  // namespace
}  // namespace pocket
