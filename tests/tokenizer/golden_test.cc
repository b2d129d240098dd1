// The acceptance test: every golden row of the four reference tokenizers
// encodes to exactly the ids the reference implementation produced (HF
// tokenizers for tokenizer.json files, libsentencepiece for .model files),
// both straight from the source files and after a ToBlob/FromBlob round trip.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer_testing.h"

namespace pocket {
namespace {

using testing::EncodeOk;
using testing::GoldenRow;
using testing::Must;
using testing::ReadGolden;
using testing::ReadTestFile;

void ExpectGolden(const Tokenizer& tok, const std::vector<GoldenRow>& rows) {
  for (const GoldenRow& row : rows) {
    EXPECT_EQ(EncodeOk(tok, row.text), row.ids) << "text: " << row.text;
  }
}

void ExpectGoldenAfterBlob(const Tokenizer& tok, const std::vector<GoldenRow>& rows) {
  const std::string blob = tok.ToBlob();
  auto loaded = Must(Tokenizer::FromBlob(blob));
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(loaded->kind(), tok.kind());
  EXPECT_EQ(loaded->vocab_size(), tok.vocab_size());
  EXPECT_EQ(loaded->bos_id(), tok.bos_id());
  EXPECT_EQ(loaded->eos_id(), tok.eos_id());
  EXPECT_EQ(loaded->ToBlob(), blob) << "the blob must be deterministic";
  ExpectGolden(*loaded, rows);
}

TEST(GoldenTest, Qwen3FromTokenizerJson) {
  ExpectGolden(testing::Qwen3(), ReadGolden("qwen3-tokenizer/golden.jsonl"));
}

TEST(GoldenTest, Qwen3AfterBlobRoundTrip) {
  ExpectGoldenAfterBlob(testing::Qwen3(), ReadGolden("qwen3-tokenizer/golden.jsonl"));
}

TEST(GoldenTest, Qwen3KeyIds) {
  const Tokenizer& t = testing::Qwen3();
  EXPECT_EQ(t.kind(), TokenizerKind::kByteLevelBpe);
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.bos_id(), -1);
  EXPECT_EQ(t.eos_id(), 151645);
  EXPECT_EQ(t.TokenId("<|endoftext|>"), 151643);
  EXPECT_EQ(t.TokenId("<|im_start|>"), 151644);
  EXPECT_EQ(t.TokenId("<think>"), 151667);
  EXPECT_EQ(t.TokenId("</think>"), 151668);
  EXPECT_TRUE(t.IsSpecial(151644));
  EXPECT_FALSE(t.IsSpecial(151667));  // <think> is added but not special
  EXPECT_FALSE(t.IsSpecial(9707));
  // "Ġworld" is the byte-level spelling of " world" (golden id 1879).
  EXPECT_EQ(t.TokenText(1879), "\xC4\xA0world");
  EXPECT_EQ(t.TokenId("\xC4\xA0world"), 1879);
  EXPECT_EQ(t.TokenBytes(1879), " world");
  EXPECT_EQ(t.TokenId("no such token at all"), -1);
}

TEST(GoldenTest, MistralFromTokenizerJson) {
  ExpectGolden(testing::Mistral(), ReadGolden("mistral-tokenizer/golden.jsonl"));
}

TEST(GoldenTest, MistralAfterBlobRoundTrip) {
  ExpectGoldenAfterBlob(testing::Mistral(), ReadGolden("mistral-tokenizer/golden.jsonl"));
}

TEST(GoldenTest, MistralKeyIds) {
  const Tokenizer& t = testing::Mistral();
  EXPECT_EQ(t.kind(), TokenizerKind::kSpmBpe);
  EXPECT_EQ(t.vocab_size(), 32000);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.IsSpecial(0));
  EXPECT_EQ(t.TokenText(13), "<0x0A>");
  EXPECT_EQ(t.TokenBytes(13), "\n");
  EXPECT_EQ(t.TokenBytes(22557), " Hello");  // "▁Hello"
}

#ifdef POCKET_WITH_SENTENCEPIECE
TEST(GoldenTest, Tok512SentencePiece) {
  auto t = Must(Tokenizer::FromSentencePiece(ReadTestFile("stories260K/tok512.model")));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind(), TokenizerKind::kSentencePiece);
  EXPECT_EQ(t->vocab_size(), 512);
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 2);
  const auto rows = ReadGolden("stories260K/tok512-golden.jsonl");
  ExpectGolden(*t, rows);
  ExpectGoldenAfterBlob(*t, rows);
}

TEST(GoldenTest, Llama2SentencePiece) {
  auto t = Must(Tokenizer::FromSentencePiece(ReadTestFile("llama2-tokenizer/tokenizer.model")));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->vocab_size(), 32000);
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 2);
  EXPECT_EQ(t->TokenId("\xE2\x96\x81Once"), 9038);
  EXPECT_EQ(t->TokenId("no such piece"), -1);
  const auto rows = ReadGolden("llama2-tokenizer/golden.jsonl");
  ExpectGolden(*t, rows);
  ExpectGoldenAfterBlob(*t, rows);
}
#else
TEST(GoldenTest, SentencePieceUnsupportedWithoutLibrary) {
  auto t = Tokenizer::FromSentencePiece(ReadTestFile("stories260K/tok512.model"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnsupported);
}
#endif

}  // namespace
}  // namespace pocket
