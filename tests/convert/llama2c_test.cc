// The llama2.c route on stories260K.bin, checked against the Hugging Face
// export of the same model (which holds q/k in the permuted HF order).
#include <string>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "convert/converter.h"
#include "convert/llama2c_import.h"
#include "format/model_config.h"

namespace pocket {
namespace {

using testing_util::DataPath;
using testing_util::MakeTempDir;
using testing_util::ReadTensor;

std::unique_ptr<PocketFile> ConvertF32(const std::string& src, const std::string& tokenizer) {
  const std::string out = MakeTempDir("l2c") + "/model.pocket";
  ConvertOptions options;
  options.quant = *ParseQuantOptions("f32", "", 0);
  options.tokenizer_path = tokenizer;
  auto stats = ConvertModel(src, out, options);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return nullptr;
  EXPECT_EQ(stats->tensors, 47u);
  auto file = PocketFile::Open(out);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return file.ok() ? std::move(file).value() : nullptr;
}

class Llama2cTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    l2c_ = ConvertF32(DataPath("stories260K/stories260K.bin"), DataPath("stories260K/tok512.model"))
               .release();
    hf_ = ConvertF32(DataPath("stories260K-hf"), "").release();
  }
  static void TearDownTestSuite() {
    delete l2c_;
    delete hf_;
  }
  static PocketFile* l2c_;
  static PocketFile* hf_;
};
PocketFile* Llama2cTest::l2c_ = nullptr;
PocketFile* Llama2cTest::hf_ = nullptr;

TEST_F(Llama2cTest, ConfigMatchesTheHeader) {
  ASSERT_NE(l2c_, nullptr);
  auto c = ParseModelConfig(std::string(l2c_->config_json()));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, "llama");
  EXPECT_EQ(c->n_layers, 5);
  EXPECT_EQ(c->hidden, 64);
  EXPECT_EQ(c->ffn, 172);
  EXPECT_EQ(c->n_heads, 8);
  EXPECT_EQ(c->n_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->vocab, 512);
  EXPECT_EQ(c->context, 512);
  EXPECT_EQ(c->rope_style, RopeStyle::kInterleaved);
  EXPECT_EQ(c->rope_theta, 10000.0);
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-5);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_EQ(c->bos_id, 1);
  EXPECT_EQ(c->eos_id, 2);
  EXPECT_TRUE(c->add_bos);
  EXPECT_EQ(c->stop_token_ids, std::vector<int32_t>({1}));
  EXPECT_EQ(c->chat_template_kind, "none");
  EXPECT_NE(l2c_->graph_json().find("\"interleaved\""), std::string::npos);
}

TEST_F(Llama2cTest, UnpermutedTensorsEqualTheHfExport) {
  ASSERT_NE(l2c_, nullptr);
  ASSERT_NE(hf_, nullptr);
  std::vector<std::string> names = {"token_embd.weight", "output_norm.weight"};
  for (int l = 0; l < 5; ++l) {
    for (const char* t :
         {"attn_norm", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"}) {
      names.push_back("blk." + std::to_string(l) + "." + t + ".weight");
    }
  }
  for (const std::string& name : names) {
    EXPECT_EQ(ReadTensor(*l2c_, name), ReadTensor(*hf_, name)) << name;
  }
}

// HF row h*hd + i comes from Meta row h*hd + 2i, and h*hd + hd/2 + i from
// h*hd + 2i + 1 (the Meta -> HF rotate_half permutation).
TEST_F(Llama2cTest, QueryAndKeyRowsArePermutedMetaRows) {
  ASSERT_NE(l2c_, nullptr);
  ASSERT_NE(hf_, nullptr);
  const uint64_t hd = 8, dim = 64;
  for (int l = 0; l < 5; ++l) {
    for (const auto& [t, heads] : {std::make_pair("attn_q", 8), std::make_pair("attn_k", 4)}) {
      const std::string name = "blk." + std::to_string(l) + "." + t + ".weight";
      const std::vector<float> meta = ReadTensor(*l2c_, name);
      const std::vector<float> hf = ReadTensor(*hf_, name);
      ASSERT_EQ(meta.size(), heads * hd * dim);
      ASSERT_EQ(hf.size(), meta.size());
      EXPECT_NE(meta, hf) << name << " should differ by the permutation";
      for (uint64_t h = 0; h < static_cast<uint64_t>(heads); ++h) {
        for (uint64_t i = 0; i < hd / 2; ++i) {
          for (uint64_t k = 0; k < dim; ++k) {
            ASSERT_EQ(hf[(h * hd + i) * dim + k], meta[(h * hd + 2 * i) * dim + k]) << name;
            ASSERT_EQ(hf[(h * hd + hd / 2 + i) * dim + k], meta[(h * hd + 2 * i + 1) * dim + k])
                << name;
          }
        }
      }
    }
  }
}

TEST(Llama2cHeader, FileSizeFollowsTheHeader) {
  // stories260K: 28 + 4 * (512*64 + 5*(64 + 64*64 + 2*32*64 + 64*64 + 64 + 3*172*64) + 64
  //                       + 2*512*4) = 1056540 bytes.
  Llama2cHeader h{64, 172, 5, 8, 4, 512, 512};
  auto size = Llama2cFileSize(h);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 1056540u);
  h.vocab_size = -512;  // an unshared classifier adds vocab * dim floats
  EXPECT_EQ(*Llama2cFileSize(h), 1056540u + 512 * 64 * 4);
  h.n_kv_heads = 3;
  EXPECT_FALSE(Llama2cFileSize(h).ok());
}

}  // namespace
}  // namespace pocket
