// StreamDecoder and FindInvalidUtf8 on hand-written cases.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer_testing.h"

namespace pocket {
namespace {

using testing::EncodeOk;
using testing::Must;
using testing::ReadTestFile;

// The id of the byte-level token that is exactly byte `b`.
int32_t ByteToken(const Tokenizer& t, unsigned char b) {
  for (int32_t id = 0; id < t.vocab_size(); ++id) {
    if (t.TokenBytes(id) == std::string(1, static_cast<char>(b))) return id;
  }
  ADD_FAILURE() << "no token for byte " << int{b};
  return -1;
}

TEST(FindInvalidUtf8Test, HandWrittenCases) {
  EXPECT_EQ(FindInvalidUtf8(""), -1);
  EXPECT_EQ(FindInvalidUtf8("plain ascii"), -1);
  EXPECT_EQ(FindInvalidUtf8("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"), -1);  // é 中 😀
  EXPECT_EQ(FindInvalidUtf8("\xF4\x8F\xBF\xBF"), -1);                      // U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("ab\x80"), 2);                                 // lone continuation byte
  EXPECT_EQ(FindInvalidUtf8("a\xC0\xAF"), 1);                              // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("\xE0\x80\xAF"), 0);                           // overlong 3-byte
  EXPECT_EQ(FindInvalidUtf8("\xF0\x80\x80\xAF"), 0);                       // overlong 4-byte
  EXPECT_EQ(FindInvalidUtf8("xy\xED\xA0\x80"), 2);                         // surrogate U+D800
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0);                       // U+110000
  EXPECT_EQ(FindInvalidUtf8("\xF5\x80\x80\x80"), 0);
  EXPECT_EQ(FindInvalidUtf8("ok\xE4\xB8"), 2);  // truncated at the end
  EXPECT_EQ(FindInvalidUtf8("\xE4\xB8x"), 0);   // truncated mid-text
  EXPECT_EQ(FindInvalidUtf8("\xFF"), 0);
}

TEST(StreamDecoderTest, ChineseCharacterSplitOverByteTokensComesOutOnce) {
  const Tokenizer& t = testing::Qwen3();
  // 中 = E4 B8 AD, fed as three single-byte tokens.
  StreamDecoder d(&t);
  EXPECT_EQ(d.Push(ByteToken(t, 0xE4)), "");
  EXPECT_EQ(d.Push(ByteToken(t, 0xB8)), "");
  EXPECT_EQ(d.Push(ByteToken(t, 0xAD)), "\xE4\xB8\xAD");
  EXPECT_EQ(d.Flush(), "");
}

TEST(StreamDecoderTest, FlushReplacesAnIncompleteTail) {
  const Tokenizer& t = testing::Qwen3();
  const int32_t e4 = ByteToken(t, 0xE4);
  StreamDecoder d(&t);
  EXPECT_EQ(d.Push(9707), "Hello");
  EXPECT_EQ(d.Push(e4), "");
  EXPECT_EQ(d.Flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(d.Flush(), "");
  // An invalid byte in the middle becomes U+FFFD right away.
  EXPECT_EQ(d.Push(ByteToken(t, 0xFF)), "\xEF\xBF\xBD");
  EXPECT_EQ(d.Push(9707), "Hello");
}

TEST(StreamDecoderTest, StreamEqualsDecodeForByteLevel) {
  const Tokenizer& t = testing::Qwen3();
  const std::string text = "Hi 👨‍👩‍👧‍👦 我爱自然语言处理 <|im_end|>";
  const auto ids = EncodeOk(t, text);
  StreamDecoder d(&t);
  std::string streamed;
  for (int32_t id : ids) streamed += d.Push(id);
  streamed += d.Flush();
  EXPECT_EQ(streamed, text);
}

TEST(StreamDecoderTest, SpmBpeStripsTheFirstSpaceOnly) {
  const Tokenizer& t = testing::Mistral();
  StreamDecoder d(&t);
  EXPECT_EQ(d.Push(22557), "Hello");  // "▁Hello"
  EXPECT_EQ(d.Push(1526), " world");  // "▁world"
  d.Reset();
  EXPECT_EQ(d.Push(1526), "world");
}

#ifdef POCKET_WITH_SENTENCEPIECE
TEST(StreamDecoderTest, SentencePieceStreamMatchesDecodeIds) {
  auto t = Must(Tokenizer::FromSentencePiece(ReadTestFile("llama2-tokenizer/tokenizer.model")));
  ASSERT_NE(t, nullptr);
  for (const std::string text : {"Once upon a time", "我爱自然语言处理", "😀 emoji 🦙 x"}) {
    std::vector<int32_t> ids = EncodeOk(*t, text);
    ids.insert(ids.begin(), t->bos_id());  // a control token first changes nothing
    StreamDecoder d(t.get());
    std::string streamed;
    for (int32_t id : ids) streamed += d.Push(id);
    streamed += d.Flush();
    EXPECT_EQ(streamed, t->Decode(ids));
    EXPECT_EQ(streamed, text);
  }
}
#endif

}  // namespace
}  // namespace pocket
