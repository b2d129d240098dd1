// Trimmed(): Qwen3's 151,669 ids cut to pocket-0.3b's 65,536.
#include <random>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer_testing.h"

namespace pocket {
namespace {

using testing::EncodeOk;
using testing::Must;

constexpr int32_t kVocab = 65536;
constexpr int32_t kQwenRegular = 151643;  // ids below are BPE tokens
constexpr int32_t kCut = kVocab - 26;     // 26 added tokens follow

const Tokenizer& Trimmed() {
  static const Tokenizer* t = Must(testing::Qwen3().Trimmed(kVocab)).release();
  return *t;
}

TEST(TrimTest, SizesAndRenumberedAddedTokens) {
  const Tokenizer& t = Trimmed();
  EXPECT_EQ(t.vocab_size(), kVocab);
  EXPECT_EQ(t.TokenId("<|endoftext|>"), kCut);
  EXPECT_EQ(t.TokenId("<|im_start|>"), kCut + 1);
  EXPECT_EQ(t.TokenId("</think>"), kVocab - 1);
  EXPECT_EQ(t.eos_id(), kCut + 2);  // <|im_end|>
  EXPECT_TRUE(t.IsSpecial(kCut + 1));
  EXPECT_EQ(t.TokenText(kCut - 1), testing::Qwen3().TokenText(kCut - 1));
  EXPECT_EQ(t.TokenBytes(kCut), "<|endoftext|>");
}

TEST(TrimTest, GoldenRowsBelowTheCutEncodeIdentically) {
  const Tokenizer& t = Trimmed();
  int checked = 0;
  for (const auto& row : testing::ReadGolden("qwen3-tokenizer/golden.jsonl")) {
    std::vector<int32_t> expected;
    bool below = true;
    for (int32_t id : row.ids) {
      if (id >= kQwenRegular) {
        expected.push_back(id - kQwenRegular + kCut);
      } else {
        below = below && id < kCut;
        expected.push_back(id);
      }
    }
    if (!below) continue;
    EXPECT_EQ(EncodeOk(t, row.text), expected) << row.text;
    ++checked;
  }
  EXPECT_GT(checked, 25);
}

TEST(TrimTest, ArbitraryUtf8RoundTrips) {
  const Tokenizer& t = Trimmed();
  // NFC-stable code point ranges (so decode(encode(x)) must be x itself):
  // ASCII, Cyrillic, CJK, Hangul syllables, emoji.
  const std::vector<std::pair<uint32_t, uint32_t>> ranges = {
      {0x20, 0x7E}, {0x410, 0x44F}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1F64F}};
  std::mt19937 rng(7);
  for (int n = 0; n < 200; ++n) {
    std::string text;
    const int len = 1 + rng() % 40;
    for (int i = 0; i < len; ++i) {
      const auto& r = ranges[rng() % ranges.size()];
      const uint32_t cp = r.first + rng() % (r.second - r.first + 1);
      if (cp < 0x80) {
        text += static_cast<char>(cp);
      } else if (cp < 0x800) {
        text += static_cast<char>(0xC0 | (cp >> 6));
        text += static_cast<char>(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        text += static_cast<char>(0xE0 | (cp >> 12));
        text += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        text += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        text += static_cast<char>(0xF0 | (cp >> 18));
        text += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        text += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        text += static_cast<char>(0x80 | (cp & 0x3F));
      }
    }
    const auto ids = EncodeOk(t, text, /*parse_special=*/false);
    for (int32_t id : ids) ASSERT_LT(id, kCut);
    EXPECT_EQ(t.Decode(ids), text);
  }
}

TEST(TrimTest, RejectsImpossibleSizes) {
  EXPECT_EQ(testing::Qwen3().Trimmed(200000).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(testing::Qwen3().Trimmed(100).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(testing::Mistral().Trimmed(1000).status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace pocket
