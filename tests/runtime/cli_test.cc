// The generation subcommands end to end: `pocket run --temp 0 --json` on the
// converted stories260K reproduces the golden ids; `pocket logits` writes
// the reference logits as .npy; usage errors exit 2.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/run_cli.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

using Output = testing::CliOutput;
using testing::RunCli;

TEST(CliTest, RunJsonReproducesGolden) {
  const std::string model = testing_stories::StoriesPath();
  for (const auto& g : testing_stories::LoadGolden()) {
    if (g.prompt != "Once upon a time") continue;
    const int n = g.steps - static_cast<int>(g.prompt_ids.size()) + 1;
    const Output o = RunCli("run -m '" + model + "' -p 'Once upon a time' --temp 0 --json -n " +
                            std::to_string(n));
    ASSERT_EQ(o.exit_code, 0) << o.out;
    auto j = ParseJson(o.out, "pocket run --json");
    ASSERT_TRUE(j.ok()) << o.out;
    EXPECT_EQ(testing_stories::Ints(*j, "prompt_ids"), g.prompt_ids);
    EXPECT_EQ(testing_stories::Ints(*j, "ids"),
              std::vector<int32_t>(g.ids.begin() + g.prompt_ids.size(), g.ids.end()));
    std::string text, stop;
    EXPECT_TRUE(GetString(*j, "text", &text, "json").ok());
    EXPECT_TRUE(GetString(*j, "stop", &stop, "json").ok());
    EXPECT_EQ(g.prompt + text + "\n", g.stdout_text);
    EXPECT_EQ(stop, "length");
    double prefill = 0, decode = 0;
    EXPECT_TRUE(GetDouble(*j, "prefill_tok_s", &prefill, "json").ok());
    EXPECT_TRUE(GetDouble(*j, "decode_tok_s", &decode, "json").ok());
    EXPECT_GT(prefill, 0);
    EXPECT_GT(decode, 0);
  }
}

TEST(CliTest, RunStreamsText) {
  const std::string model = testing_stories::StoriesPath();
  const Output o = RunCli("run -m '" + model + "' -p 'The little dog' --temp 0 -n 196");
  ASSERT_EQ(o.exit_code, 0);
  for (const auto& g : testing_stories::LoadGolden()) {
    // The prompt, then the continuation: byte for byte run.c's stdout.
    if (g.prompt == "The little dog") EXPECT_EQ(o.out, g.stdout_text);
  }
}

TEST(CliTest, LogitsNpy) {
  const std::string model = testing_stories::StoriesPath();
  const std::string out =
      std::string(POCKET_BINARY_DIR) + "/cli_logits_" + std::to_string(getpid()) + ".npy";
  const Output o =
      RunCli("logits -m '" + model + "' --tokens 1,403,407,261,378 --out '" + out + "'");
  ASSERT_EQ(o.exit_code, 0);
  const std::string bytes = testing_stories::ReadFile(out);
  std::remove(out.c_str());
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = bytes.substr(10, header_len);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (5, 512)"), std::string::npos) << header;
  ASSERT_EQ(bytes.size(), 10 + header_len + 5 * 512 * 4);

  auto j = ParseJson(testing_stories::ReadFile(
                         testing_stories::DataPath("stories260K/logits-once-upon-a-time.json")),
                     "logits");
  ASSERT_TRUE(j.ok());
  const Json& ref = (*j)["logits"];
  for (size_t p = 0; p < 5; ++p) {
    for (size_t i = 0; i < 512; ++i) {
      float v;
      std::memcpy(&v, bytes.data() + 10 + header_len + (p * 512 + i) * 4, 4);
      ASSERT_NEAR(v, ref[p][i].get<float>(), 1e-4) << p << " " << i;
    }
  }
}

TEST(CliTest, UsageErrorsExit2) {
  const std::string model = testing_stories::StoriesPath();
  EXPECT_EQ(RunCli("run -m '" + model + "'").exit_code, 2);  // no -p
  EXPECT_EQ(RunCli("run -m '" + model + "' -p x --kv q3").exit_code, 2);
  EXPECT_EQ(RunCli("run -m '" + model + "' -p x --kv-policy drop").exit_code, 2);
  EXPECT_EQ(RunCli("run -m '" + model + "' -p x --bogus").exit_code, 2);
  EXPECT_EQ(RunCli("bench -m '" + model + "' -r 0").exit_code, 2);
  EXPECT_EQ(RunCli("run -m '" + model + "' -p x --quant-math int4").exit_code, 2);
  EXPECT_EQ(RunCli("run -m /nonexistent.pocket -p x").exit_code, 1);
  EXPECT_EQ(RunCli("run -m '" + model + "' -p x --backend metal").exit_code, 1);
  EXPECT_EQ(RunCli("run --help").exit_code, 0);
}

// Every uint64 is a seed; what is not one says why.
TEST(CliTest, SeedTakesEveryUint64) {
  const std::string run =
      "run -m '" + testing_stories::StoriesPath() + "' -p 'Once upon a time' -n 3 --temp 1 --seed ";
  EXPECT_EQ(RunCli(run + "9223372036854775808").exit_code, 0);   // 2^63
  EXPECT_EQ(RunCli(run + "18446744073709551615").exit_code, 0);  // 2^64 - 1
  Output o = RunCli(run + "18446744073709551616", "", true);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.out.find("larger than 2^64 - 1"), std::string::npos) << o.out;
  o = RunCli(run + "-1", "", true);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.out.find("needs an integer in [0, 2^64 - 1], got '-1'"), std::string::npos) << o.out;
}

// A model whose logits come out NaN fails with exit 1 naming the position,
// in every command that computes them.
TEST(CliTest, NonFiniteLogitsExit1) {
  const std::string model = " -m '" + testing_stories::NanWeightStoriesPath() + "' ";
  const std::string text =
      std::string(POCKET_BINARY_DIR) + "/cli_nan_text_" + std::to_string(getpid()) + ".txt";
  const std::string npy =
      std::string(POCKET_BINARY_DIR) + "/cli_nan_logits_" + std::to_string(getpid()) + ".npy";
  std::ofstream(text) << "Once upon a time, there was a little girl named Lily.";
  for (const std::string& command : {"run" + model + "-p 'Once upon a time' --temp 0 -n 5",
                                     "logits" + model + "--tokens 1,403,407 --out '" + npy + "'",
                                     "perplexity" + model + "-f '" + text + "'"}) {
    const Output o = RunCli(command, "", true);
    EXPECT_EQ(o.exit_code, 1) << command << ": " << o.out;
    EXPECT_NE(o.out.find("CorruptFile: the model computed a non-finite logit (NaN"),
              std::string::npos)
        << command << ": " << o.out;
    EXPECT_NE(o.out.find("at position "), std::string::npos) << o.out;
  }
  std::remove(text.c_str());
  std::remove(npy.c_str());
}

TEST(CliTest, BudgetKvTypeAndPolicy) {
  const std::string model = "run -m '" + testing_stories::StoriesPath() + "' ";
  // The 1 MiB f32 weights alone exceed a 1 MiB budget.
  Output o = RunCli(model + "-p 'Once upon a time' -n 5 --budget 1", "", true);
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.out.find("error: BudgetExceeded: memory budget of 1 MiB is too small"),
            std::string::npos)
      << o.out;
  // q8 KV reproduces the golden start (greedy is robust to its rounding).
  o = RunCli(model + "-p 'Once upon a time' --temp 0 -n 8 --kv q8 --json");
  ASSERT_EQ(o.exit_code, 0);
  auto j = ParseJson(o.out, "pocket run --json");
  ASSERT_TRUE(j.ok()) << o.out;
  const auto golden = testing_stories::LoadGolden();
  for (const auto& g : golden) {
    if (g.prompt != "Once upon a time") continue;
    EXPECT_EQ(testing_stories::Ints(*j, "ids"),
              std::vector<int32_t>(g.ids.begin() + 5, g.ids.begin() + 13));
  }
  // Past the 512-token context: policy error stops there, slide goes on.
  o = RunCli(model + "-p 'Once upon a time' -n 700 --ignore-eos --json");
  ASSERT_EQ(o.exit_code, 0);
  j = ParseJson(o.out, "pocket run --json");
  ASSERT_TRUE(j.ok());
  // The last token is sampled when the cache is full, so it is not fed.
  EXPECT_EQ(testing_stories::Ints(*j, "ids").size(), 512u - 5 + 1);
  o = RunCli(model + "-p 'Once upon a time' -n 700 --ignore-eos --kv-policy slide --json");
  ASSERT_EQ(o.exit_code, 0);
  j = ParseJson(o.out, "pocket run --json");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(testing_stories::Ints(*j, "ids").size(), 700u);
  int64_t tokens = 0;
  EXPECT_TRUE(GetInt((*j)["memory"], "tokens", &tokens, "memory").ok());
  EXPECT_LE(tokens, 512);
}

TEST(CliTest, ChatFromPipe) {
  const std::string model = testing_stories::StoriesPath();
  // Two turns, a reset, the first turn again, then /quit (the last line is
  // never read). The model's template is plain concatenation, so a first
  // turn is exactly `pocket run` on the same text; replies end with "\n".
  const Output o = RunCli("chat -m '" + model + "' --temp 0 -n 5",
                          "Once upon a time\\nThe dog\\n/reset\\nOnce upon a time\\n/quit\\n"
                          "not read\\n");
  ASSERT_EQ(o.exit_code, 0);
  std::vector<std::string> lines;
  size_t start = 0, nl;
  while ((nl = o.out.find('\n', start)) != std::string::npos) {
    lines.push_back(o.out.substr(start, nl - start));
    start = nl + 1;
  }
  ASSERT_EQ(lines.size(), 3u) << o.out;
  EXPECT_EQ(lines[0], lines[2]);
  EXPECT_FALSE(lines[0].empty());
  for (const auto& g : testing_stories::LoadGolden()) {
    if (g.prompt != "Once upon a time") continue;
    EXPECT_EQ(g.stdout_text.compare(g.prompt.size(), lines[0].size(), lines[0]), 0) << lines[0];
  }
}

}  // namespace
}  // namespace pocket
