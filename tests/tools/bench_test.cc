// `pocket bench --json`: the documented keys are there, and with --roofline
// the decode fraction is the median of runs each divided by the read probe
// taken just before it, so it lies within the bounds that the runs' and the
// probes' own spreads allow; --op-times counts every step of the measured
// runs. Rates themselves are never asserted.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/cpu/kernel_target.h"
#include "testing/run_cli.h"

namespace pocket {
namespace {

using testing::CliOutput;
using testing::RunCli;

const std::string kModel = std::string(POCKET_TEST_MODELS) + "/stories260K-f32.pocket";

nlohmann::json Bench(const std::string& flags) {
  const CliOutput o = RunCli("bench -m '" + kModel + "' -t 1 -p 8 -n 8 -r 3 --json " + flags);
  EXPECT_EQ(o.exit_code, 0) << o.out;
  nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
  EXPECT_TRUE(j.is_object()) << o.out;
  return j;
}

void ExpectOrderedStats(const nlohmann::json& s, const char* name) {
  ASSERT_TRUE(s.is_object()) << name;
  EXPECT_GT(s["min"].get<double>(), 0.0) << name;
  EXPECT_LE(s["min"].get<double>(), s["median"].get<double>()) << name;
  EXPECT_LE(s["median"].get<double>(), s["max"].get<double>()) << name;
}

TEST(BenchCli, ReportsTheRunShapeWithoutARoofline) {
  const nlohmann::json j = Bench("");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["n_prompt"], 8);
  EXPECT_EQ(j["n_gen"], 8);
  EXPECT_EQ(j["repetitions"], 3);
  EXPECT_EQ(j["threads"], 1);
  ExpectOrderedStats(j["prefill_tok_s"], "prefill_tok_s");
  ExpectOrderedStats(j["decode_tok_s"], "decode_tok_s");
  EXPECT_FALSE(j.contains("roofline"));
  EXPECT_FALSE(j.contains("op_times"));
  // kernel_target_test.cc checks the detection itself.
  const bool chosen = cpu::MatrixExtensionChosen();
  const char* name = cpu::MatrixExtensionName();
  EXPECT_EQ(j["prefill_i8mm"], chosen && std::string(name) == "I8MM");
  if (chosen) {
    EXPECT_EQ(j["prefill_matrix_ext"], name);
  } else {
    EXPECT_TRUE(j["prefill_matrix_ext"].is_null());
  }
  // Heads of 8 channels: attention never takes the matrix unit here.
  ASSERT_TRUE(j.contains("attention_matrix_ext"));
  EXPECT_TRUE(j["attention_matrix_ext"].is_null());
}

TEST(BenchCli, DecodeFractionIsTheMedianOfPairedRuns) {
  const nlohmann::json j = Bench("--roofline");
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["roofline"].is_object());
  const nlohmann::json& r = j["roofline"];
  const nlohmann::json& read = r["read_gb_s_stats"];
  const nlohmann::json& rate = r["paired_decode_tok_s"];
  const nlohmann::json& frac = r["decode_bandwidth_fraction_stats"];
  ExpectOrderedStats(read, "read_gb_s_stats");
  ExpectOrderedStats(rate, "paired_decode_tok_s");
  ExpectOrderedStats(frac, "decode_bandwidth_fraction_stats");
  EXPECT_EQ(r["read_gb_s"], read["median"]);
  EXPECT_EQ(r["decode_bandwidth_fraction"], frac["median"]);
  // Each run's fraction is weight_gb x rate / read of its own probe.
  const double weight_gb = j["weight_mb"].get<double>() / 1e3;
  const double lowest = weight_gb * rate["min"].get<double>() / read["max"].get<double>();
  const double highest = weight_gb * rate["max"].get<double>() / read["min"].get<double>();
  EXPECT_GE(frac["min"].get<double>(), lowest * (1 - 1e-9));
  EXPECT_LE(frac["max"].get<double>(), highest * (1 + 1e-9));
  for (const char* key : {"int8_gemv_peak_gmac_s", "int8_gemm_peak_gmac_s",
                          "decode_compute_fraction", "prefill_compute_fraction"}) {
    EXPECT_GT(r[key].get<double>(), 0.0) << key;
  }
}

// --op-times covers the measured runs: every step of each token (stories260K
// has 5 Llama layers, tests/data/stories260K-hf/config.json: one attention
// and four Linear groups each, plus the tied output projection), and the
// ops with the time outside them add up to the phase, whose mean rate lies
// within the runs' own spread.
TEST(BenchCli, OpTimesCoverTheMeasuredRuns) {
  const nlohmann::json j = Bench("--op-times");
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["op_times"].is_object());
  constexpr double kLayers = 5;
  const nlohmann::json& decode = j["op_times"]["decode"];
  const nlohmann::json& prefill = j["op_times"]["prefill"];
  ASSERT_TRUE(decode.is_object());
  ASSERT_TRUE(prefill.is_object());
  EXPECT_EQ(decode["embed"]["steps_per_token"], 1.0);
  EXPECT_EQ(decode["attention"]["steps_per_token"], kLayers);
  EXPECT_EQ(decode["linear"]["steps_per_token"], 4 * kLayers + 1);
  EXPECT_FALSE(decode.contains("head_rms_norm"));                   // Llama has no q/k norms
  EXPECT_EQ(prefill["attention"]["steps_per_token"], kLayers / 8);  // one 8-token chunk
  for (const char* phase : {"prefill", "decode"}) {
    const nlohmann::json& p = j["op_times"][phase];
    double share = 0, ms = 0;
    for (const auto& [op, t] : p.items()) {
      EXPECT_GE(t["ms_per_token"].get<double>(), 0.0) << phase << " " << op;
      EXPECT_GE(t["share"].get<double>(), 0.0) << phase << " " << op;
      share += t["share"].get<double>();
      ms += t["ms_per_token"].get<double>();
    }
    EXPECT_NEAR(share, 1.0, 1e-9) << phase;
    // The Linears by output add up to the Linears; the head runs once per
    // token decoded and once per prefill chunk (8 tokens).
    const nlohmann::json& by_output = p["linear"]["by_output"];
    ASSERT_TRUE(by_output.is_object()) << phase;
    double linear_share = 0;
    std::vector<std::string> names;
    for (const auto& [outputs, t] : by_output.items()) {
      names.push_back(outputs);
      linear_share += t["share"].get<double>();
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"d", "g+u", "logits", "o", "q+k+v"})) << phase;
    EXPECT_NEAR(linear_share, p["linear"]["share"].get<double>(), 1e-9) << phase;
    ASSERT_TRUE(by_output.contains("q+k+v") && by_output.contains("logits")) << phase;
    const double chunks_per_token = std::string(phase) == "decode" ? 1 : 1.0 / 8;
    EXPECT_EQ(by_output["q+k+v"]["steps_per_token"], kLayers * chunks_per_token) << phase;
    EXPECT_EQ(by_output["logits"]["steps_per_token"], chunks_per_token) << phase;
    // The runs' total time over their tokens: its rate is the harmonic mean
    // of the runs' rates, so within their min and max.
    const nlohmann::json& rate = j[std::string(phase) + "_tok_s"];
    EXPECT_GE(1e3 / ms, rate["min"].get<double>() * (1 - 1e-9)) << phase;
    EXPECT_LE(1e3 / ms, rate["max"].get<double>() * (1 + 1e-9)) << phase;
  }
}

// --cpu-target holds the kernels to the target named (any case): the oldest
// this machine offers here. Without it the bench runs the best one.
TEST(BenchCli, RunsTheCpuTargetItIsGiven) {
  const std::vector<std::string> targets = cpu::KernelTargets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(Bench("")["cpu_target"], targets.front());
  std::string oldest = targets.back();
  for (char& c : oldest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_EQ(Bench("--cpu-target " + oldest)["cpu_target"], targets.back());
}

// --no-matrix-ext keeps the prompts off the matrix unit.
TEST(BenchCli, NoMatrixExtLeavesTheMatrixUnitOut) {
  const nlohmann::json j = Bench("--no-matrix-ext");
  EXPECT_TRUE(j["prefill_matrix_ext"].is_null());
  EXPECT_EQ(j["prefill_i8mm"], false);
}

TEST(BenchCli, RejectsAnUnknownCpuTarget) {
  const CliOutput o = RunCli("bench -m '" + kModel + "' --cpu-target avx9", "", true);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.out.find("option '--cpu-target' takes one of " + cpu::KernelTargetList(", ") +
                       " (any case), got 'avx9'"),
            std::string::npos)
      << o.out;
}

TEST(BenchCli, RejectsZeroRepetitions) {
  const CliOutput o = RunCli("bench -m '" + kModel + "' -r 0", "", true);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.out.find("option '-r' needs an integer in [1, 1000], got '0'"), std::string::npos)
      << o.out;
}

}  // namespace
}  // namespace pocket
