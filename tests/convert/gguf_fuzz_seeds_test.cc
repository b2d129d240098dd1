// The seeds of fuzz/gguf_fuzz.cc (fuzz/seeds/gguf): small GGUF files that
// import cleanly and hold a tensor of every type Pocket reads, with each
// tokenizer kind. POCKET_WRITE_GGUF_SEEDS=1 (re)writes them from the code
// below; the test checks that the committed files import and read.
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "convert/gguf_import.h"
#include "convert/gguf_writer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace pocket {
namespace {

using namespace testing_gguf;  // NOLINT

void SmallConfig(GgufWriter* w, const std::string& arch) {
  w->Str("general.architecture", arch);
  w->U32(arch + ".block_count", 2);
  w->U32(arch + ".context_length", 64);
  w->U32(arch + ".embedding_length", 32);
  w->U32(arch + ".feed_forward_length", 64);
  w->U32(arch + ".attention.head_count", 2);
  w->U32(arch + ".attention.head_count_kv", 1);
  w->F32(arch + ".rope.freq_base", 10000.0f);
  w->F32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
}

// Tensors of every readable type, in shapes as small as their blocks allow
// (the importer does not check them against the config; the writer does).
void EveryType(GgufWriter* w, uint64_t vocab) {
  auto values = [](uint64_t n, uint64_t seed) { return RandomValues(n, seed, 0.1f); };
  w->Tensor("token_embd.weight", {32, vocab}, kGgmlQ8_0, QuantizeQ8_0(values(32 * vocab, 1)));
  w->Tensor("output_norm.weight", {32}, kGgmlF32, F32Bytes(values(32, 2)));
  w->Tensor("blk.0.attn_q.weight", {32, 2}, kGgmlQ4_0, QuantizeQ4_0(values(64, 3)));
  w->Tensor("blk.0.attn_k.weight", {64, 2}, kGgmlQ4_1, QuantizeQ4_1(values(128, 4), true));
  w->Tensor("blk.0.attn_v.weight", {32, 2}, kGgmlF16, F16Bytes(values(64, 5)));
  w->Tensor("blk.0.attn_output.weight", {32, 2}, kGgmlBF16, BF16Bytes(values(64, 6)));
  std::string q5(2 * 22, '\x5a'), q51(2 * 24, '\x3c');
  for (size_t b = 0; b < 2; ++b) {
    const uint16_t d = F32ToF16(0.01f);
    std::memcpy(&q5[b * 22], &d, 2);
    std::memcpy(&q51[b * 24], &d, 2);
    std::memcpy(&q51[b * 24 + 2], &d, 2);
  }
  w->Tensor("blk.0.ffn_gate.weight", {32, 2}, kGgmlQ5_0, q5);
  w->Tensor("blk.0.ffn_up.weight", {32, 2}, kGgmlQ5_1, q51);
  std::string q2k(84, '\x12'), q3k(110, '\x34'), q4k(144, '\x21'), q5k(176, '\x43'),
      q6k(210, '\x65');
  const uint16_t d = F32ToF16(0.01f);
  for (std::string* k : {&q4k, &q5k}) {
    std::memcpy(&(*k)[0], &d, 2);
    std::memcpy(&(*k)[2], &d, 2);
  }
  std::memcpy(&q2k[80], &d, 2);
  std::memcpy(&q2k[82], &d, 2);
  std::memcpy(&q3k[108], &d, 2);
  std::memcpy(&q6k[208], &d, 2);
  w->Tensor("blk.1.attn_q.weight", {256}, kGgmlQ2_K, q2k);
  w->Tensor("blk.1.attn_k.weight", {256}, kGgmlQ3_K, q3k);
  w->Tensor("blk.0.ffn_down.weight", {256}, kGgmlQ4_K, q4k);
  w->Tensor("blk.1.ffn_up.weight", {256}, kGgmlQ5_K, q5k);
  w->Tensor("blk.1.ffn_down.weight", {256}, kGgmlQ6_K, q6k);
}

// `llama` tokenizer: a few SentencePiece pieces (no byte fallback).
std::string SpmSeed() {
  GgufWriter w;
  SmallConfig(&w, "llama");
  w.Str("tokenizer.ggml.model", "llama");
  w.StrArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b",
                                       "\xE2\x96\x81"
                                       "a",
                                       "ab",
                                       "\xE2\x96\x81"
                                       "ab"});
  w.Array<float>("tokenizer.ggml.scores", kF32, {0, 0, 0, -1, -2, -3, -4, -5, -6});
  w.Array<int32_t>("tokenizer.ggml.token_type", kI32, {2, 3, 3, 1, 1, 1, 1, 1, 1});
  w.U32("tokenizer.ggml.bos_token_id", 1);
  w.U32("tokenizer.ggml.eos_token_id", 2);
  w.Bool("tokenizer.ggml.add_space_prefix", true);
  EveryType(&w, 9);
  return w.Finish();
}

// `gpt2` tokenizer: the 256 bytes (byte-level BPE needs each), two merges,
// special tokens, a ChatML template; `pre` one regex (qwen2) or several
// (default).
std::string BpeSeed(const std::string& pre) {
  GgufWriter w;
  SmallConfig(&w, "qwen3");
  w.U32("qwen3.attention.key_length", 16);
  w.Str("tokenizer.ggml.model", "gpt2");
  w.Str("tokenizer.ggml.pre", pre);
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(tok::ToByteLevel(std::string(1, static_cast<char>(b))));
  }
  const std::string space = "\xC4\xA0";  // byte-level " "
  for (const std::string& t : {std::string("ab"), space + "a", std::string("<|im_start|>"),
                               std::string("<|im_end|>"), std::string("<think>")}) {
    tokens.push_back(t);
  }
  std::vector<int32_t> types(256 + 2, 1);
  types.insert(types.end(), {3, 3, 4});
  w.StrArray("tokenizer.ggml.tokens", tokens);
  w.Array<int32_t>("tokenizer.ggml.token_type", kI32, types);
  w.StrArray("tokenizer.ggml.merges", {"a b", space + " a"});
  w.U32("tokenizer.ggml.eos_token_id", 259);
  w.Str("tokenizer.chat_template",
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt "
        "%}{{ '<|im_start|>assistant\\n' }}{% endif %}");
  EveryType(&w, tokens.size());
  return w.Finish();
}

TEST(GgufFuzzSeeds, CommittedSeedsImport) {
  const std::string dir = std::string(POCKET_TEST_DATA) + "/../../fuzz/seeds/gguf";
  const bool rewrite = std::getenv("POCKET_WRITE_GGUF_SEEDS") != nullptr;
  for (const auto& [name, written] : {std::pair<std::string, std::string>{"spm.gguf", SpmSeed()},
                                      {"bpe.gguf", BpeSeed("qwen2")},
                                      {"bpe-default.gguf", BpeSeed("default")}}) {
    SCOPED_TRACE(name);
    if (rewrite) testing_util::WriteFile(dir + "/" + name, written);
    const std::string bytes = testing_util::ReadFile(dir + "/" + name);
    ASSERT_FALSE(bytes.empty()) << dir << "/" << name;
    auto file = GgufFile::FromMemory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    std::shared_ptr<const GgufFile> shared(std::move(file).value());
    auto model = ImportGgufFile(shared, name);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    for (const SourceTensor& t : model->tensors) {
      EXPECT_TRUE(t.load().ok()) << t.name;
      if (t.load_native) EXPECT_TRUE(t.load_native().ok()) << t.name;
    }
    auto tok = Tokenizer::FromBlob(model->tokenizer_blob);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EXPECT_TRUE((*tok)->Encode("ab a").ok());
  }
}

}  // namespace
}  // namespace pocket
