// Encoding rules beyond the golden files: decode round trips, the
// normalizers' documented changes, special-token parsing, invalid UTF-8.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer_testing.h"

namespace pocket {
namespace {

using testing::EncodeOk;
using testing::Must;
using testing::ReadGolden;
using testing::ReadTestFile;

TEST(EncodeDecodeTest, ByteLevelDecodeIsLosslessOnNfcText) {
  const Tokenizer& t = testing::Qwen3();
  for (const auto& row : ReadGolden("qwen3-tokenizer/golden.jsonl")) {
    // Decoding the golden ids (independent of our encoder) gives the text
    // back, except where the text is not NFC.
    const std::string decoded = t.Decode(row.ids);
    if (row.text.find("e\xCC\x81") != std::string::npos) {
      EXPECT_NE(decoded, row.text);
      continue;
    }
    EXPECT_EQ(decoded, row.text);
  }
}

TEST(EncodeDecodeTest, ByteLevelNfcComposes) {
  // "e" + U+0301 COMBINING ACUTE becomes U+00E9 before BPE.
  const Tokenizer& t = testing::Qwen3();
  EXPECT_EQ(EncodeOk(t,
                     "caf"
                     "e\xCC\x81"),
            EncodeOk(t, "caf\xC3\xA9"));
  EXPECT_EQ(t.Decode(EncodeOk(t,
                              "caf"
                              "e\xCC\x81")),
            "caf\xC3\xA9");
}

TEST(EncodeDecodeTest, ByteLevelSplitsAddedTokensBeforeNfc) {
  // ">" + U+0338 COMBINING LONG SOLIDUS OVERLAY composes to U+226F (NFC).
  // Hugging Face's tokenizers split out the added tokens ("normalized":
  // false) first and normalize the text between them, so a token's closing
  // ">" stays apart from a mark that follows it (tokenizer_fuzz found this).
  const Tokenizer& t = testing::Qwen3();
  EXPECT_EQ(t.Decode(EncodeOk(t, "a>\xCC\xB8")), "a\xE2\x89\xAF");
  for (const char* token : {"<|image_pad|>", "<|im_start|>", "<think>", "</tool_call>"}) {
    SCOPED_TRACE(token);
    const std::string text = std::string("<0<$") + token + "\xCC\xB8 ";
    const auto ids = EncodeOk(t, text);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), t.TokenId(token)), 1);
    EXPECT_EQ(t.Decode(ids), text);
  }
}

TEST(EncodeDecodeTest, SpecialTokensParsedOrNot) {
  const Tokenizer& t = testing::Qwen3();
  EXPECT_EQ(EncodeOk(t, "<|im_start|>user"), (std::vector<int32_t>{151644, 872}));
  const auto plain = EncodeOk(t, "<|im_start|>user", /*parse_special=*/false);
  ASSERT_GT(plain.size(), 2u);
  for (int32_t id : plain) EXPECT_LT(id, 151643) << "ordinary tokens only";
  EXPECT_EQ(t.Decode(plain), "<|im_start|>user");
  // <think> is added but not special: HF matches it even then.
  EXPECT_EQ(EncodeOk(t, "<think>", false), (std::vector<int32_t>{151667}));
  // Decoding a special token gives its text.
  EXPECT_EQ(t.Decode({151644, 872}), "<|im_start|>user");
}

TEST(EncodeDecodeTest, InvalidUtf8NamesTheOffset) {
  const Tokenizer& t = testing::Qwen3();
  for (const Tokenizer* tok : {&t, &testing::Mistral()}) {
    auto r = tok->Encode(std::string("abc\xFFxyz"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("invalid UTF-8 at byte 3"), std::string::npos)
        << r.status().message();
  }
  auto r = t.Encode(std::string("ok \xE4\xB8"));  // truncated 3-byte character
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at byte 3"), std::string::npos);
}

TEST(EncodeDecodeTest, EmbeddedNulAndControlBytesRoundTrip) {
  const Tokenizer& t = testing::Qwen3();
  const std::string text("a\0b\x01\x7F", 5);
  EXPECT_EQ(t.Decode(EncodeOk(t, text)), text);
}

TEST(EncodeDecodeTest, LongPromptIsFastAndExact) {
  const Tokenizer& t = testing::Qwen3();
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "The quick brown fox " + std::to_string(i) + " jumps.\n";
  const auto ids = EncodeOk(t, text);  // ~60 KB
  EXPECT_EQ(t.Decode(ids), text);
  // Each line repeats the golden sentence's tokens: "The"=785, " quick"=3974.
  EXPECT_EQ(ids[0], 785);
  EXPECT_EQ(ids[1], 3974);
}

TEST(EncodeDecodeTest, HugeWhitespaceRunAndWord) {
  // One regex match / one BPE word of 200 KB: no regex stack limit, no
  // quadratic merge loop.
  const std::string spaces = std::string(200000, ' ') + "x";
  const std::string letters(200000, 'a');
  for (const Tokenizer* t : {&testing::Qwen3(), &testing::Mistral()}) {
    EXPECT_EQ(t->Decode(EncodeOk(*t, spaces)), spaces);
    EXPECT_EQ(t->Decode(EncodeOk(*t, letters)), letters);
  }
}

TEST(EncodeDecodeTest, SpmBpeNormalizerChanges) {
  const Tokenizer& t = testing::Mistral();
  // The Prepend("▁") normalizer adds a space that Decode strips again.
  EXPECT_EQ(t.Decode(EncodeOk(t, "Hello world")), "Hello world");
  EXPECT_TRUE(t.StripsLeadingSpace());
  // Byte fallback: "\n" is <0x0A> (id 13); a 4-byte emoji outside the vocab
  // becomes four byte tokens that decode back to it.
  EXPECT_EQ(t.Decode({28705, 13}), "\n");
  EXPECT_EQ(t.Decode(EncodeOk(t, "\xF0\x9F\xA6\x99")), "\xF0\x9F\xA6\x99");
  // Text after an added token gets its own "▁" (HF applies Prepend to every
  // piece between added tokens): "<s>" then "▁and".
  EXPECT_EQ(EncodeOk(t, "<s>and"), (std::vector<int32_t>{1, 304}));
  // Without parse_special, "<s>" is text.
  EXPECT_NE(EncodeOk(t, "<s>", false), (std::vector<int32_t>{1}));
}

#ifdef POCKET_WITH_SENTENCEPIECE
TEST(EncodeDecodeTest, SentencePieceDecodeRules) {
  auto t = Must(Tokenizer::FromSentencePiece(ReadTestFile("stories260K/tok512.model")));
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->StripsLeadingSpace());
  // The dummy prefix "▁" of the first piece is dropped.
  EXPECT_EQ(t->Decode({403, 407, 261, 378}), "Once upon a time");
  EXPECT_EQ(t->TokenBytes(403), " Once");
  // remove_extra_whitespaces collapses runs and trims the ends: not lossless.
  EXPECT_EQ(t->Decode(EncodeOk(*t, "  Once   upon  ")), "Once upon");
  // Control tokens decode to nothing; byte pieces to their byte.
  EXPECT_EQ(t->Decode({1, 403, 2}), "Once");
  EXPECT_EQ(t->TokenBytes(1), "");
  EXPECT_EQ(t->TokenText(3), "<0x00>");
  EXPECT_EQ(t->TokenBytes(3 + 0x41), "A");
  // parse_special has no effect: sentencepiece reads "<s>" as text.
  EXPECT_EQ(EncodeOk(*t, "<s>", true), EncodeOk(*t, "<s>", false));
}
#endif

}  // namespace
}  // namespace pocket
