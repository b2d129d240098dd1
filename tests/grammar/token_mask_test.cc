// Token masks over the real Qwen3 vocabulary (151,669 tokens) checked
// against brute force: for every token, run a copy of the matcher over its
// bytes. States are taken along JSON texts so they include positions inside
// strings, numbers, keys and between them, where merged tokens such as `"}`,
// `":` and `],` and pieces of UTF-8 characters decide the answer.
#include "grammar/token_mask.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar_testing.h"
#include "tokenizer/tokenizer_testing.h"

namespace pocket {
namespace {

using grammar::Matcher;
using grammar::TokenMasker;
using grammar::TokenTrie;
using testing::MustCompile;

struct Vocab {
  std::vector<std::string> bytes;
  std::vector<bool> usable;
  int32_t eos = -1;
};

const Vocab& Qwen3Vocab() {
  static const Vocab* v = [] {
    auto* out = new Vocab;
    const Tokenizer& t = testing::Qwen3();
    for (int32_t id = 0; id < t.vocab_size(); ++id) {
      out->bytes.push_back(t.TokenBytes(id));
      out->usable.push_back(!t.IsSpecial(id));
    }
    out->eos = t.eos_id();
    return out;
  }();
  return *v;
}

bool Bit(const std::vector<uint64_t>& mask, int32_t id) { return (mask[id >> 6] >> (id & 63)) & 1; }

// Checks the mask at every prefix of `text` against brute force.
void CheckAlong(const std::shared_ptr<const grammar::Grammar>& g, const std::string& text,
                int stride) {
  const Vocab& v = Qwen3Vocab();
  auto trie = std::make_shared<TokenTrie>(v.bytes, v.usable);
  TokenMasker masker(g, trie, {v.eos});
  for (size_t cut = 0; cut <= text.size(); cut += stride) {
    masker.matcher().Reset();
    ASSERT_TRUE(masker.matcher().AcceptBytes(text.substr(0, cut))) << text.substr(0, cut);
    const int32_t state = masker.matcher().state();
    const std::vector<uint64_t> mask = masker.Mask();
    Matcher brute(g);
    size_t allowed = 0;
    for (int32_t id = 0; id < static_cast<int32_t>(v.bytes.size()); ++id) {
      bool expect;
      if (id == v.eos) {
        expect = masker.matcher().Accepting(state);
      } else {
        brute.Reset();
        expect = v.usable[id] && !v.bytes[id].empty() && brute.AcceptBytes(text.substr(0, cut)) &&
                 brute.AcceptBytes(v.bytes[id]);
      }
      allowed += expect;
      ASSERT_EQ(Bit(mask, id), expect)
          << "token " << id << " '" << v.bytes[id] << "' after '" << text.substr(0, cut) << "'";
    }
    EXPECT_GT(allowed, 0u) << text.substr(0, cut);
  }
}

TEST(TokenMask, MatchesBruteForceAlongJson) {
  auto g = MustCompile(grammar::CompileJsonSchema(R"({"type": "object",
    "properties": {"name": {"type": "string"}, "n": {"type": "integer"},
                   "list": {"type": "array", "items": {"type": "number"}}},
    "required": ["name"], "additionalProperties": false})"));
  CheckAlong(g, R"({"list": [1.5, -2], "n": 42, "name": "日本 \"q\""})", 3);
}

// Each character position of a bounded string is its own state, where
// only tokens that fit the characters left may pass.
TEST(TokenMask, MatchesBruteForceInBoundedStrings) {
  auto g = MustCompile(grammar::CompileJsonSchema(R"({"type": "object",
    "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 7}},
    "required": ["s"], "additionalProperties": false})"));
  CheckAlong(g, R"({"s": "ab cd\"e"})", 1);
}

// Multi-byte characters count as one each in a bounded string, and a
// token may end inside one.
TEST(TokenMask, MatchesBruteForceWithUtf8InBoundedStrings) {
  auto g = MustCompile(grammar::CompileJsonSchema(R"({"type": "object",
    "properties": {"s": {"type": "string", "maxLength": 4}, "t": {"type": "string"}},
    "required": ["s", "t"], "additionalProperties": false})"));
  CheckAlong(g, R"({"s": "é日x", "t": "中文 ok"})", 1);
}

// States that loop on a character class (an email's parts, a pattern's
// class) let whole subtrees of the class pass.
TEST(TokenMask, MatchesBruteForceInLoopingClasses) {
  auto g = MustCompile(grammar::CompileJsonSchema(R"({"type": "object",
    "properties": {"e": {"type": "string", "format": "email"},
                   "p": {"type": "string", "pattern": "^[a-z0-9_.-]+$"}},
    "required": ["e", "p"], "additionalProperties": false})"));
  CheckAlong(g, R"({"e": "ada.l@ex-ample.org", "p": "a_b.c-d9"})", 2);
}

TEST(TokenMask, MatchesBruteForceForAnyJson) {
  CheckAlong(grammar::JsonGrammar(), R"([{"é": [true, null]}, "x\u00e9", 0])", 4);
}

TEST(TokenMask, MergedTokensAndUtf8Pieces) {
  const Vocab& v = Qwen3Vocab();
  auto trie = std::make_shared<TokenTrie>(v.bytes, v.usable);
  auto g = MustCompile(grammar::CompileGbnf(R"g(root ::= "{\"a\":" ("1" | "日") "}")g"));
  TokenMasker masker(g, trie, {v.eos});
  const Tokenizer& t = testing::Qwen3();
  const auto id_of = [&](const std::string& bytes) {
    for (int32_t id = 0; id < t.vocab_size(); ++id) {
      if (v.bytes[id] == bytes) return id;
    }
    return -1;
  };
  const int32_t brace_quote = id_of("{\""), quote_colon = id_of("\":"), close = id_of("}");
  ASSERT_GE(brace_quote, 0);
  ASSERT_GE(quote_colon, 0);
  EXPECT_TRUE(Bit(masker.Mask(), brace_quote));
  EXPECT_FALSE(Bit(masker.Mask(), v.eos));
  ASSERT_TRUE(masker.Accept(brace_quote).ok());
  ASSERT_TRUE(masker.Accept(id_of("a")).ok());
  EXPECT_TRUE(Bit(masker.Mask(), quote_colon));
  ASSERT_TRUE(masker.Accept(quote_colon).ok());
  // 日 is E6 97 A5: its first byte alone is a token and is allowed.
  const int32_t first_byte = id_of("\xe6");
  ASSERT_GE(first_byte, 0);
  EXPECT_TRUE(Bit(masker.Mask(), first_byte));
  EXPECT_FALSE(Bit(masker.Mask(), id_of("\xe7")));
  ASSERT_TRUE(masker.Accept(first_byte).ok());
  EXPECT_FALSE(Bit(masker.Mask(), close));
  EXPECT_FALSE(masker.Accept(close).ok());
  ASSERT_TRUE(masker.Accept(id_of("\x97")).ok());
  ASSERT_TRUE(masker.Accept(id_of("\xa5")).ok());
  EXPECT_FALSE(Bit(masker.Mask(), v.eos));
  ASSERT_TRUE(masker.Accept(close).ok());
  EXPECT_TRUE(masker.IsComplete());
  // Complete and nothing may follow: only the end token.
  size_t allowed = 0;
  for (uint64_t w : masker.Mask()) allowed += __builtin_popcountll(w);
  EXPECT_EQ(allowed, 1u);
  EXPECT_TRUE(Bit(masker.Mask(), v.eos));
  EXPECT_TRUE(masker.Accept(v.eos).ok());
}

TEST(TokenMask, ApplySetsForbiddenLogitsToMinusInfinity) {
  const std::vector<std::string> vocab = {"a", "b", "ab", "", "c", "<s>"};
  auto trie = std::make_shared<TokenTrie>(vocab, std::vector<bool>{1, 1, 1, 1, 1, 0});
  auto g = MustCompile(grammar::CompileGbnf(R"g(root ::= "a" "b"?)g"));
  TokenMasker masker(g, trie, {5});
  std::vector<float> logits(8, 1.0f);
  masker.Apply(logits.data(), 8);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(logits, (std::vector<float>{1, -inf, 1, -inf, -inf, -inf, -inf, -inf}));
  ASSERT_TRUE(masker.Accept(0).ok());
  std::fill(logits.begin(), logits.end(), 1.0f);
  masker.Apply(logits.data(), 6);
  EXPECT_EQ(logits, (std::vector<float>{-inf, 1, -inf, -inf, -inf, 1, 1, 1}));
}

}  // namespace
}  // namespace pocket
