// tokenizer.json values that size the importer's tables are checked against
// what the file lists before anything is allocated from them.
#include <string>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"

namespace pocket {
namespace {

std::string ByteLevelJson(const std::string& vocab, const std::string& added) {
  return R"({"pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
             "added_tokens": )" +
         added + R"(, "model": {"type": "BPE", "vocab": )" + vocab + R"(, "merges": []}})";
}

TEST(HfJsonLimits, VocabIdBeyondTheEntriesIsRefused) {
  // One entry whose id would make a table of 16 million tokens.
  auto tok = Tokenizer::FromHfJson(ByteLevelJson(R"({"a": 16777215})", "[]"), "");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("vocab entry 'a' has a bad id (ids run from 0 to 0"),
            std::string::npos)
      << tok.status().message();
}

TEST(HfJsonLimits, AddedTokenIdBeyondTheEntriesIsRefused) {
  auto tok = Tokenizer::FromHfJson(
      ByteLevelJson(R"({"a": 0, "b": 1})", R"([{"id": 1000000, "content": "<x>"}])"), "");
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("added token '<x>' has a bad id or is empty (ids run "
                                        "from 0 to 2"),
            std::string::npos)
      << tok.status().message();
}

TEST(HfJsonLimits, IdsWithinTheEntriesPassTheCheck) {
  auto tok = Tokenizer::FromHfJson(
      ByteLevelJson(R"({"a": 0, "b": 1})", R"([{"id": 2, "content": "<x>"}])"), "");
  if (!tok.ok()) EXPECT_EQ(tok.status().message().find("bad id"), std::string::npos);
}

}  // namespace
}  // namespace pocket
