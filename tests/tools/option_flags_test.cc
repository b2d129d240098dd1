// The CLI prints the library's option names as its flags: NAME=VALUE as
// "FLAG VALUE", a bare NAME with an underscore as "FLAG VALUE_NAME", and
// nothing that only looks like an option (a word such as "backend", a name
// inside a longer one).
#include "tools/pocket/option_flags.h"

#include <gtest/gtest.h>

namespace pocket::cli {
namespace {

TEST(OptionFlags, BudgetMessageSpeaksInFlags) {
  EXPECT_EQ(InFlagTerms("raise the budget (budget_bytes), store K/V as q8 (kv_type=q8, about "
                        "half the bytes per token) or keep a sliding window (kv_policy=slide)"),
            "raise the budget (--budget MIB), store K/V as q8 (--kv q8, about half the bytes "
            "per token) or keep a sliding window (--kv-policy slide)");
}

TEST(OptionFlags, ValuesKeepTheirQuotes) {
  EXPECT_EQ(InFlagTerms("quant='q5' is not a type"), "--quant 'q5' is not a type");
  EXPECT_EQ(InFlagTerms("cpu_target='avx9' is not available here"),
            "--cpu-target 'avx9' is not available here");
  EXPECT_EQ(InFlagTerms("backend=opencl: no platform; use backend=cpu"),
            "--backend opencl: no platform; use --backend cpu");
}

TEST(OptionFlags, WordsAndLongerNamesStay) {
  for (const char* text : {"the OpenCL backend keeps its cache", "per weight group",
                           "my_kv_type=q8", "kv_types", "threads must be in [0, 1024]"}) {
    EXPECT_EQ(InFlagTerms(text), text);
  }
}

TEST(OptionFlags, StatusKeepsItsCode) {
  EXPECT_EQ(InFlagTerms(Status(StatusCode::kInvalidArgument, "pass tokenizer_path")),
            "InvalidArgument: pass --tokenizer FILE");
}

}  // namespace
}  // namespace pocket::cli
