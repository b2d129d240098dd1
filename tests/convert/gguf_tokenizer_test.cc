// Tokenizers from GGUF metadata, as llama.cpp's converter writes them from
// the tokenizers in tests/data: `llama` (the Llama 2 and tok512
// SentencePiece models' pieces, scores and types) and `gpt2` (Qwen3's
// byte-level vocabulary and merges, pre-tokenizer `qwen2`), each encoding
// the goldens of the original tokenizer; the other pre-tokenizers over the
// same vocabulary against goldens made by Hugging Face `tokenizers`; the
// chat template's kind; refusals.
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "convert/gguf_golden.h"
#include "convert/gguf_import.h"
#include "convert/gguf_pretokenizers.h"
#include "convert/gguf_stories.h"
#include "convert/gguf_writer.h"
#include "format/model_config.h"
#include "tokenizer/bpe_data.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace pocket {
namespace {

using namespace testing_gguf;  // NOLINT
using testing_gguf::ExpectGoldens;
using testing_gguf::Golden;
using testing_gguf::LoadGolden;
using testing_util::DataPath;
using testing_util::ReadFile;

// A GGUF holding `w`'s tokenizer metadata, a minimal qwen3 config and a
// token_embd of `vocab` rows (never read), imported.
struct Imported {
  Status status = Status::Ok();
  ModelConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
};
Imported Import(GgufWriter w, uint64_t vocab) {
  w.Str("general.architecture", "qwen3");
  w.U32("qwen3.block_count", 1);
  w.U32("qwen3.context_length", 64);
  w.U32("qwen3.embedding_length", 32);
  w.U32("qwen3.feed_forward_length", 32);
  w.U32("qwen3.attention.head_count", 1);
  w.F32("qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
  w.Tensor("token_embd.weight", {32, vocab}, kGgmlQ4_0, std::string(vocab * 18, '\0'));
  const std::string bytes = w.Finish();
  auto file = GgufFile::FromMemory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  Imported out;
  if (!file.ok()) {
    out.status = file.status();
    return out;
  }
  auto model = ImportGgufFile(std::shared_ptr<const GgufFile>(std::move(file).value()), "test");
  if (!model.ok()) {
    out.status = model.status();
    return out;
  }
  out.config = model->config;
  auto tok = Tokenizer::FromBlob(model->tokenizer_blob);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (tok.ok()) out.tokenizer = std::move(tok).value();
  return out;
}

TEST(GgufTokenizer, LlamaSentencePieceEncodesTheLlama2Goldens) {
  GgufWriter w;
  AddSpmTokenizer(&w, DataPath("llama2-tokenizer/tokenizer.model"));
  Imported m = Import(w, 32000);
  ASSERT_TRUE(m.status.ok()) << m.status.ToString();
  EXPECT_EQ(m.tokenizer->kind(), TokenizerKind::kSentencePiece);
  EXPECT_EQ(m.tokenizer->vocab_size(), 32000);
  EXPECT_EQ(m.tokenizer->bos_id(), 1);
  EXPECT_EQ(m.tokenizer->eos_id(), 2);
  EXPECT_TRUE(m.config.add_bos);
  EXPECT_EQ(m.config.stop_token_ids, std::vector<int32_t>({2}));
  ExpectGoldens(*m.tokenizer, DataPath("llama2-tokenizer/golden.jsonl"));
}

TEST(GgufTokenizer, LlamaSentencePieceEncodesTheTok512Goldens) {
  GgufWriter w;
  AddSpmTokenizer(&w, DataPath("stories260K/tok512.model"));
  Imported m = Import(w, 512);
  ASSERT_TRUE(m.status.ok()) << m.status.ToString();
  ExpectGoldens(*m.tokenizer, DataPath("stories260K/tok512-golden.jsonl"),
                /*keep_whitespace=*/true);
}

// tokenizer.ggml.* as llama.cpp writes Qwen3's tokenizer.json: tokens by
// id (byte-level text; added tokens as written), control / user-defined
// types for the special / other added tokens, merges "a b". Read once.
struct Qwen3Vocab {
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> types;
  std::string chat_template;
};
const Qwen3Vocab& LoadQwen3Vocab() {
  static const Qwen3Vocab vocab = [] {
    Qwen3Vocab v;
    auto json = ParseJson(ReadFile(DataPath("qwen3-tokenizer/tokenizer.json")), "tokenizer.json");
    EXPECT_TRUE(json.ok());
    const Json& model = (*json)["model"];
    for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
      const size_t id = it.value().get<size_t>();
      if (v.tokens.size() <= id) v.tokens.resize(id + 1), v.types.resize(id + 1, 1);
      v.tokens[id] = it.key();
    }
    for (const Json& a : (*json)["added_tokens"]) {
      const size_t id = a["id"].get<size_t>();
      if (v.tokens.size() <= id) v.tokens.resize(id + 1), v.types.resize(id + 1, 1);
      v.tokens[id] = a["content"].get<std::string>();
      v.types[id] = a["special"].get<bool>() ? 3 : 4;
    }
    for (const Json& m : model["merges"]) {
      v.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    auto config = ParseJson(ReadFile(DataPath("qwen3-tokenizer/tokenizer_config.json")), "config");
    EXPECT_TRUE(config.ok());
    v.chat_template = (*config)["chat_template"].get<std::string>();
    return v;
  }();
  return vocab;
}

GgufWriter Qwen3Tokenizer(const std::string& pre) {
  const Qwen3Vocab& v = LoadQwen3Vocab();
  GgufWriter w;
  w.Str("tokenizer.ggml.model", "gpt2");
  w.Str("tokenizer.ggml.pre", pre);
  w.StrArray("tokenizer.ggml.tokens", v.tokens);
  w.Array("tokenizer.ggml.token_type", kI32, v.types);
  w.StrArray("tokenizer.ggml.merges", v.merges);
  w.U32("tokenizer.ggml.eos_token_id", 151645);
  w.U32("tokenizer.ggml.padding_token_id", 151643);
  w.Bool("tokenizer.ggml.add_bos_token", false);
  w.Str("tokenizer.chat_template", v.chat_template);
  return w;
}

TEST(GgufTokenizer, ByteLevelBpeEncodesTheQwen3Goldens) {
  Imported m = Import(Qwen3Tokenizer("qwen2"), 151936);
  ASSERT_TRUE(m.status.ok()) << m.status.ToString();
  EXPECT_EQ(m.tokenizer->kind(), TokenizerKind::kByteLevelBpe);
  EXPECT_EQ(m.tokenizer->vocab_size(), 151669);
  EXPECT_FALSE(m.config.add_bos);
  EXPECT_EQ(m.config.eos_id, 151645);
  EXPECT_EQ(m.config.chat_template_kind, "qwen3");
  EXPECT_TRUE(m.tokenizer->IsSpecial(151645));
  ExpectGoldens(*m.tokenizer, DataPath("qwen3-tokenizer/golden.jsonl"));
  auto ids = m.tokenizer->Encode("<|im_start|>user<think>");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, std::vector<int32_t>({151644, 872, 151667}));
}

// Each family of tokenizer.ggml.pre names (default, gpt-2, falcon, smollm,
// llama-bpe, tekken, deepseek-coder) splits the goldens' texts into the words Hugging Face
// `tokenizers` makes of them with the family's patterns, and `default` and
// `tekken` (no flags; ignore_merges), imported over Qwen3's vocabulary,
// encode them to its ids (tests/data/gguf-pretokenizers/make_golden.py,
// which also checks that llama.cpp splits the texts alike for the families
// llama.cpp defines).
TEST(GgufTokenizer, PreTokenizersSplitAndEncodeTheirGoldens) {
  std::map<std::string, std::vector<Golden>> by_pre;
  for (Golden& g : LoadGolden(DataPath("gguf-pretokenizers/golden.jsonl"))) {
    by_pre[g.pre].push_back(std::move(g));
  }
  EXPECT_EQ(by_pre.size(), 7u);
  int imported = 0;
  for (const auto& [pre, goldens] : by_pre) {
    SCOPED_TRACE("tokenizer.ggml.pre '" + pre + "'");
    auto split = FindGgufPreTokenizer(pre);
    ASSERT_TRUE(split.ok()) << split.status().ToString();
    auto splitter = tok::RegexSplitter::Create(split->patterns);
    ASSERT_TRUE(splitter.ok()) << splitter.status().ToString();
    for (const Golden& g : goldens) {
      std::vector<std::string_view> words;
      ASSERT_TRUE((*splitter)->Split(g.text, &words).ok());
      EXPECT_EQ(std::vector<std::string>(words.begin(), words.end()), g.words)
          << "text '" << g.text << "'";
    }
    if (goldens.front().ids.empty()) continue;
    ++imported;
    Imported m = Import(Qwen3Tokenizer(pre), 151936);
    ASSERT_TRUE(m.status.ok()) << m.status.ToString();
    for (const Golden& g : goldens) {
      auto ids = m.tokenizer->Encode(g.text);
      ASSERT_TRUE(ids.ok()) << ids.status().ToString();
      EXPECT_EQ(*ids, g.ids) << "text '" << g.text << "'";
    }
  }
  EXPECT_EQ(imported, 2);
}

// The names llama.cpp gives one family share its patterns; Llama 3's and
// Tekken's ignore merges for whole-token words and put a BOS token first
// unless the file says otherwise.
TEST(GgufTokenizer, PreTokenizerNamesAndDefaults) {
  auto patterns = [](const std::string& name) {
    auto p = FindGgufPreTokenizer(name);
    EXPECT_TRUE(p.ok()) << name;
    return p.ok() ? p->patterns : std::vector<std::string>();
  };
  EXPECT_EQ(patterns("default").size(), 4u);
  EXPECT_EQ(patterns(""), patterns("default"));
  EXPECT_EQ(patterns("starcoder"), patterns("smollm"));
  EXPECT_EQ(patterns("phi-2"), patterns("gpt-2"));
  EXPECT_EQ(patterns("llama3"), patterns("llama-bpe"));
  EXPECT_EQ(patterns("falcon3"), patterns("llama-bpe"));
  for (const char* name : {"llama-bpe", "tekken"}) {
    auto p = FindGgufPreTokenizer(name);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->add_bos) << name;
    EXPECT_EQ(p->flags, uint32_t{tok::kFlagIgnoreMerges}) << name;
  }
  for (const char* name : {"default", "gpt-2", "falcon", "smollm", "deepseek-coder"}) {
    auto p = FindGgufPreTokenizer(name);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->flags, 0u) << name;
  }
  auto gpt2 = FindGgufPreTokenizer("gpt-2");
  ASSERT_TRUE(gpt2.ok());
  EXPECT_FALSE(gpt2->add_bos);
}

TEST(GgufTokenizer, RefusesUnknownPreTokenizersAndModels) {
  Imported m = Import(Qwen3Tokenizer("deepseek-llm"), 151936);
  ASSERT_FALSE(m.status.ok());
  EXPECT_EQ(m.status.code(), StatusCode::kUnsupported);
  EXPECT_NE(m.status.message().find("tokenizer.ggml.pre 'deepseek-llm' is not a pre-tokenizer "
                                    "Pocket implements (supported: default, gpt2, gpt-2,"),
            std::string::npos)
      << m.status.ToString();
  GgufWriter w;
  w.Str("tokenizer.ggml.model", "bert");
  w.StrArray("tokenizer.ggml.tokens", {"a"});
  m = Import(w, 1);
  ASSERT_FALSE(m.status.ok());
  EXPECT_NE(m.status.message().find("tokenizer.ggml.model 'bert' is not supported"),
            std::string::npos)
      << m.status.ToString();
}

TEST(GgufTokenizer, RefusesIdsOutsideTheVocabulary) {
  GgufWriter w;
  w.Str("tokenizer.ggml.model", "gpt2");
  w.Str("tokenizer.ggml.pre", "qwen2");
  w.StrArray("tokenizer.ggml.tokens", {"a", "b"});
  w.StrArray("tokenizer.ggml.merges", {});
  w.U32("tokenizer.ggml.eos_token_id", 7);
  Imported m = Import(w, 2);
  ASSERT_FALSE(m.status.ok());
  EXPECT_NE(m.status.message().find("tokenizer.ggml.eos_token_id = 7 is past the last token (1)"),
            std::string::npos)
      << m.status.ToString();
}

}  // namespace
}  // namespace pocket
