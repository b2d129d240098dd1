// `pocket convert` and `pocket inspect` on GGUF files, through the real CLI:
// a conversion prints what it did per type; malformed files (truncated,
// lying offsets and counts, unknown types, huge strings) end with exit 1
// and a message naming what is wrong.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "convert/gguf_stories.h"
#include "convert/gguf_writer.h"
#include "testing/run_cli.h"
#include "util/json_util.h"

namespace pocket {
namespace {

using namespace testing_gguf;  // NOLINT
using testing::RunCli;
using testing_util::MakeTempDir;
using testing_util::WriteFile;

class GgufCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("gguf_cli"); }
  // Writes `bytes` as NAME.gguf and runs `pocket convert` on it.
  testing::CliOutput Convert(const std::string& name, const std::string& bytes,
                             const std::string& flags = "") {
    WriteFile(dir_ + "/" + name + ".gguf", bytes);
    return RunCli(
        "convert " + dir_ + "/" + name + ".gguf -o " + dir_ + "/" + name + ".pocket " + flags, "",
        /*with_stderr=*/true);
  }
  void ExpectFails(const std::string& name, const std::string& bytes, const std::string& text) {
    const testing::CliOutput r = Convert(name, bytes);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find(text), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(name + ".gguf"), std::string::npos) << r.out;
  }
  std::string dir_;
};

TEST_F(GgufCli, ConvertsAndReportsPerType) {
  testing::CliOutput r = Convert("stories", StoriesGguf(StoriesArch::kLlama, kGgmlQ4_1));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("47 tensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Q4_1 -> q4 g32 (exact): 31 tensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("F32 -> f32 (exact): 16 tensors"), std::string::npos) << r.out;
  r = Convert("stories_q8", StoriesGguf(StoriesArch::kLlama, kGgmlQ4_1), "--quant q8");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Q4_1 -> q8 g32 (requantized): 31 tensors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blk.0.attn_q.weight: Q4_1 -> q8 g32, max error"), std::string::npos)
      << r.out;
  r = RunCli("inspect " + dir_ + "/stories.gguf", "", /*with_stderr=*/true);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("general.architecture = \"llama\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokenizer.ggml.tokens = [string x 512:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Q4_1         31 tensors"), std::string::npos) << r.out;
  r = RunCli("inspect --json " + dir_ + "/stories.gguf");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  auto json = ParseJson(r.out, "inspect --json");
  ASSERT_TRUE(json.ok()) << r.out;
  EXPECT_EQ((*json)["format"], "gguf");
  EXPECT_EQ((*json)["tensor_types"]["Q4_1"]["tensors"], 31);
  EXPECT_EQ((*json)["metadata"]["llama.block_count"], 5);
  r = RunCli("run -m " + dir_ + "/stories.pocket -p \"Once upon a time\" -n 8 --temp 0", "",
             /*with_stderr=*/true);
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// `pocket run -m model.gguf` converts at load into $TMPDIR, removes the
// temporary file, and generates what the converted .pocket file does.
TEST_F(GgufCli, RunsAGgufDirectly) {
  ASSERT_EQ(Convert("stories", StoriesGguf(StoriesArch::kLlama, kGgmlQ8_0)).exit_code, 0);
  const std::string tmp = dir_ + "/tmp";
  ASSERT_EQ(::mkdir(tmp.c_str(), 0700), 0);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  const std::string prompt = " -p \"Once upon a time\" -n 24 --temp 0";
  const testing::CliOutput direct = RunCli("run -m " + dir_ + "/stories.gguf" + prompt);
  const testing::CliOutput noted =
      RunCli("run -m " + dir_ + "/stories.gguf" + prompt, "", /*with_stderr=*/true);
  if (old) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  const testing::CliOutput converted = RunCli("run -m " + dir_ + "/stories.pocket" + prompt);
  EXPECT_EQ(direct.exit_code, 0) << noted.out;
  EXPECT_EQ(converted.exit_code, 0);
  EXPECT_EQ(direct.out, converted.out);
  EXPECT_NE(noted.out.find("converting the GGUF file"), std::string::npos) << noted.out;
  EXPECT_EQ(::rmdir(tmp.c_str()), 0) << "a temporary file was left in " << tmp;
}

TEST_F(GgufCli, MalformedFilesExitWithOne) {
  const std::string good = StoriesGguf(StoriesArch::kLlama);
  ExpectFails("truncated_header", good.substr(0, 1000), "(truncated?)");
  ExpectFails("truncated_data", good.substr(0, good.size() - 100), "ends past the end of the file");
  std::string lying = good;
  const uint64_t tensors = 1ull << 50;
  std::memcpy(&lying[8], &tensors, 8);
  ExpectFails("lying_count", lying, "the header claims 1125899906842624 tensors");
  {
    GgufWriter w;
    w.Str("general.architecture", "llama");
    w.raw_kv().Str("general.name");
    w.raw_kv().Put<uint32_t>(kString);
    w.raw_kv().Put<uint64_t>(~uint64_t{0});
    w.kv_count_delta = 1;
    ExpectFails("huge_string", w.Finish(), "metadata 'general.name' is 18446744073709551615 bytes");
  }
  {
    GgufWriter w;
    w.Tensor("token_embd.weight", {32, 2}, 77, std::string(256, '\0'));
    ExpectFails("unknown_type", w.Finish(), "ggml type 77, which ggml does not define");
  }
  {
    GgufWriter w;
    w.Tensor("token_embd.weight", {32, 2}, kGgmlF32, std::string(256, '\0'), 4096);
    std::string bytes = w.Finish();
    bytes.resize(bytes.size() - 256);
    ExpectFails("lying_offset", bytes, "ends past the end of the file");
  }
  {
    GgufWriter w;
    w.Str("general.architecture", "phi3");
    ExpectFails("architecture", w.Finish(), "architecture 'phi3' is not supported");
  }
}

}  // namespace
}  // namespace pocket
