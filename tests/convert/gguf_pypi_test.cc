// GGUF files written by llama.cpp's own Python package (gguf-py), not by
// Pocket's or the tests' GGUF writers (tests/data/gguf-py/make_gguf.py:
// stories260K as convert_hf_to_gguf.py writes it with --outtype q8_0, and a
// one-layer llama with a byte-level BPE whose pre-tokenizer is "default").
// Config, tokenizer against its goldens, and conversion with the types kept;
// their logits are checked by tests/reference/gguf_reference.py.
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "convert/converter.h"
#include "convert/gguf_golden.h"
#include "convert/gguf_import.h"
#include "tokenizer/tokenizer.h"

namespace pocket {
namespace {

using testing_gguf::ExpectGoldens;
using testing_util::DataPath;

std::unique_ptr<Tokenizer> TokenizerOf(const SourceModel& m) {
  auto tok = Tokenizer::FromBlob(m.tokenizer_blob);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::map<std::string, size_t> ConvertKeepingTypes(const std::string& gguf) {
  ConvertOptions options;
  options.quant.keep_source_types = true;
  auto stats = ConvertModel(gguf, testing_util::MakeTempDir("gguf_py") + "/m.pocket", options);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return stats.ok() ? stats->conversions : std::map<std::string, size_t>();
}

TEST(GgufPy, StoriesAsConvertHfToGgufWritesIt) {
  const std::string path = DataPath("gguf-py/stories260K-q8_0.gguf");
  auto m = ImportGguf(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab, 512);
  EXPECT_EQ(c.rope_style, RopeStyle::kInterleaved);
  EXPECT_TRUE(c.add_bos);
  EXPECT_EQ(c.bos_id, 1);
  EXPECT_EQ(c.eos_id, 2);
  auto tok = TokenizerOf(*m);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->kind(), TokenizerKind::kSentencePiece);
  ExpectGoldens(*tok, DataPath("stories260K/tok512-golden.jsonl"), /*keep_whitespace=*/true);
  // 5 layers of six Q8_0 matrices, token_embd, and ffn_down as F16 (172
  // columns are not whole Q8_0 blocks).
  const auto conversions = ConvertKeepingTypes(path);
  EXPECT_EQ(conversions.size(), 3u);
  for (const auto& [what, n] : conversions) {
    if (what.rfind("Q8_0", 0) == 0) EXPECT_EQ(n, 31u) << what;
    if (what.rfind("F16", 0) == 0) EXPECT_EQ(n, 5u) << what;
    if (what.rfind("F32", 0) == 0) EXPECT_EQ(n, 11u) << what;
  }
}

TEST(GgufPy, ByteLevelBpeWithTheDefaultPreTokenizer) {
  const std::string path = DataPath("gguf-py/bpe-default-q8_0.gguf");
  auto m = ImportGguf(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->config.n_layers, 1);
  EXPECT_FALSE(m->config.add_bos);
  EXPECT_EQ(m->config.eos_id, 0);
  auto tok = TokenizerOf(*m);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->kind(), TokenizerKind::kByteLevelBpe);
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_TRUE(tok->IsSpecial(0));
  ExpectGoldens(*tok, DataPath("gguf-py/bpe-default-golden.jsonl"));
  const auto conversions = ConvertKeepingTypes(path);
  EXPECT_EQ(conversions.size(), 2u);
}

}  // namespace
}  // namespace pocket
