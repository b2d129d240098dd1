// The tokenizer blob: determinism and validation of hostile bytes (its load
// speed is bench/tokenizer_bench.cc's).
#include <random>

#include <gtest/gtest.h>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_data.h"
#include "tokenizer/tokenizer_testing.h"

namespace pocket {
namespace {

using testing::EncodeOk;
using testing::Must;

// A tiny byte-level tokenizer: the 256 bytes, "ab" (256), "abc" (257), and
// a special "<|x|>" (258).
tok::BpeData TinyByteLevel() {
  tok::BpeData d;
  for (int b = 0; b < 256; ++b) d.AddToken(std::string(1, static_cast<char>(b)), 0);
  d.AddToken("ab", 0);
  d.AddToken("abc", 0);
  d.AddToken("<|x|>", tok::kAttrAdded | tok::kAttrSpecial);
  d.merges = {'a', 'b', 256, 256, 'c', 257};
  d.regex = "\\S+|\\s+";
  d.eos = 258;
  return d;
}

StatusCode LoadError(const tok::BpeData& d) {
  auto t = Tokenizer::FromBlob(tok::SerializeBpe(d));
  return t.ok() ? StatusCode::kOk : t.status().code();
}

TEST(BlobTest, TinyTokenizerRoundTrips) {
  auto t = Must(Tokenizer::FromBlob(tok::SerializeBpe(TinyByteLevel())));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(EncodeOk(*t, "abc ab<|x|>"), (std::vector<int32_t>{257, ' ', 256, 258}));
  EXPECT_EQ(t->eos_id(), 258);
  EXPECT_EQ(t->Decode({257, ' ', 256, 258}), "abc ab<|x|>");
}

TEST(BlobTest, ValidationNamesTheProblem) {
  tok::BpeData d = TinyByteLevel();
  d.merges[2] = 9999;  // result id out of range
  EXPECT_EQ(LoadError(d), StatusCode::kCorruptFile);

  d = TinyByteLevel();
  d.merges[2] = 'x';  // "x" is not "a" + "b"
  EXPECT_EQ(LoadError(d), StatusCode::kCorruptFile);

  d = TinyByteLevel();
  d.eos = 259;
  EXPECT_EQ(LoadError(d), StatusCode::kCorruptFile);

  d = TinyByteLevel();
  d.attrs[3] = 0x80;
  EXPECT_EQ(LoadError(d), StatusCode::kCorruptFile);

  d = TinyByteLevel();
  d.offsets[5] = d.offsets[4] - 1;
  EXPECT_EQ(LoadError(d), StatusCode::kCorruptFile);

  d = TinyByteLevel();
  d.flags = 1u << 20;
  EXPECT_EQ(LoadError(d), StatusCode::kCorruptFile);

  // A missing byte token: byte-level BPE could not encode that byte.
  d = TinyByteLevel();
  d.pool[d.offsets['q']] = 'r';
  EXPECT_EQ(LoadError(d), StatusCode::kCorruptFile);

  d = TinyByteLevel();
  d.regex = "(unclosed";
  auto t = Tokenizer::FromBlob(tok::SerializeBpe(d));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("regex"), std::string::npos) << t.status().message();
}

// Several patterns apply in turn, each to every word of the one before and
// seeing only that word: `c$` ends each "abc", not only the last.
TEST(BlobTest, RegexSequenceSplitsEachWordOfTheStepBefore) {
  tok::BpeData d = TinyByteLevel();
  tok::SetRegexPatterns({"\\S+|\\s+", "c$"}, &d);
  EXPECT_EQ(tok::RegexPatterns(d), (std::vector<std::string>{"\\S+|\\s+", "c$"}));
  auto t = Must(Tokenizer::FromBlob(tok::SerializeBpe(d)));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(EncodeOk(*t, "abc abc"), (std::vector<int32_t>{256, 'c', ' ', 256, 'c'}));
  auto round = Must(Tokenizer::FromBlob(t->ToBlob()));
  ASSERT_NE(round, nullptr);
  EXPECT_EQ(EncodeOk(*round, "abc abc"), (std::vector<int32_t>{256, 'c', ' ', 256, 'c'}));

  tok::SetRegexPatterns({"\\S+"}, &d);
  EXPECT_EQ(d.flags & tok::kFlagRegexSequence, 0u);
  d.flags |= tok::kFlagRegexSequence;  // a sequence of one
  EXPECT_EQ(LoadError(d), StatusCode::kCorruptFile);
  tok::SetRegexPatterns({"a", ""}, &d);
  EXPECT_EQ(LoadError(d), StatusCode::kCorruptFile);
}

TEST(BlobTest, HeaderErrors) {
  const std::string good = tok::SerializeBpe(TinyByteLevel());
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_EQ(Tokenizer::FromBlob(bad).status().code(), StatusCode::kCorruptFile);
  bad = good;
  bad[4] = 2;  // version 2
  EXPECT_EQ(Tokenizer::FromBlob(bad).status().code(), StatusCode::kUnsupported);
  bad = good;
  bad[8] = 7;  // kind
  EXPECT_EQ(Tokenizer::FromBlob(bad).status().code(), StatusCode::kCorruptFile);
  EXPECT_EQ(Tokenizer::FromBlob(good + "x").status().code(), StatusCode::kCorruptFile);
  EXPECT_EQ(Tokenizer::FromBlob("").status().code(), StatusCode::kCorruptFile);
}

// Every truncation is an error; flipped bytes are an error or a tokenizer
// that still works — never a crash (run under the sanitizers in CI).
void Corrupt(const std::string& blob, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int i = 0; i < 200; ++i) {
    const size_t cut = rng() % blob.size();
    auto t = Tokenizer::FromBlob(std::string_view(blob).substr(0, cut));
    EXPECT_FALSE(t.ok()) << "truncated at " << cut;
    if (!t.ok()) EXPECT_EQ(t.status().code(), StatusCode::kCorruptFile) << t.status().ToString();
  }
  for (int i = 0; i < 60; ++i) {
    std::string bad = blob;
    const size_t pos = rng() % bad.size();
    bad[pos] = static_cast<char>(bad[pos] ^ (1 + rng() % 255));
    auto t = Tokenizer::FromBlob(bad);
    if (t.ok()) {
      auto ids = (*t)->Encode("Hello world, 你好 <|im_start|> 123");
      if (ids.ok()) (*t)->Decode(*ids);
    } else {
      EXPECT_FALSE(t.status().message().empty());
    }
  }
}

TEST(BlobTest, CorruptedSpmBpeBlobsFailCleanly) { Corrupt(testing::Mistral().ToBlob(), 1); }
TEST(BlobTest, CorruptedTinyBlobsFailCleanly) { Corrupt(tok::SerializeBpe(TinyByteLevel()), 2); }

#ifdef POCKET_WITH_SENTENCEPIECE
TEST(BlobTest, CorruptedSentencePieceBlobsFailCleanly) {
  auto t = Must(Tokenizer::FromSentencePiece(testing::ReadTestFile("stories260K/tok512.model")));
  ASSERT_NE(t, nullptr);
  Corrupt(t->ToBlob(), 3);
}
#endif

}  // namespace
}  // namespace pocket
