// `pocket tokenize` / `pocket detokenize` end to end (the binary named by
// $POCKET_CLI, which ctest sets).
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "testing/run_cli.h"

namespace {

using CliResult = pocket::testing::CliOutput;
using pocket::testing::RunCli;

const std::string kQwen =
    std::string("--tokenizer-json ") + POCKET_TEST_DATA + "/qwen3-tokenizer/tokenizer.json";

TEST(CliTokenizeTest, TokenizeMatchesGolden) {
  // golden.jsonl: "<|im_start|>user\nhi<|im_end|>" -> [151644, 872, 198, 6023, 151645]
  CliResult r =
      RunCli("tokenize " + kQwen + " --text \"$(printf '<|im_start|>user\\nhi<|im_end|>')\"");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "151644 872 198 6023 151645\n");
  r = RunCli("tokenize " + kQwen + " --json --text 'Hello world'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "{\"ids\":[9707,1879]}\n");
}

TEST(CliTokenizeTest, NoSpecialTreatsMarkersAsText) {
  CliResult r = RunCli("tokenize " + kQwen + " --no-special --text '<|endoftext|>'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find("151643"), std::string::npos) << r.out;
}

TEST(CliTokenizeTest, DetokenizeAndErrors) {
  CliResult r = RunCli("detokenize " + kQwen + " --ids 9707,1879");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "Hello world\n");
  EXPECT_EQ(RunCli("detokenize " + kQwen + " --ids 9707,999999").exit_code, 1);
  EXPECT_EQ(RunCli("detokenize " + kQwen + " --ids 9707,x").exit_code, 2);
  EXPECT_EQ(RunCli("tokenize --text hi").exit_code, 2);  // no tokenizer source
  EXPECT_EQ(RunCli("tokenize --tokenizer-json /nonexistent.json --text hi").exit_code, 1);
  EXPECT_EQ(RunCli("tokenize --help").exit_code, 0);
  EXPECT_EQ(RunCli("detokenize --help").exit_code, 0);
}

#ifdef POCKET_WITH_SENTENCEPIECE
TEST(CliTokenizeTest, SentencePieceModel) {
  // tok512-golden.jsonl: "Once upon a time" -> [403, 407, 261, 378]
  const std::string spm =
      std::string("--spm-model ") + POCKET_TEST_DATA + "/stories260K/tok512.model";
  CliResult r = RunCli("tokenize " + spm + " --text 'Once upon a time'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "403 407 261 378\n");
  r = RunCli("detokenize " + spm + " --ids 403,407,261,378");
  EXPECT_EQ(r.out, "Once upon a time\n");
}
#endif

}  // namespace
