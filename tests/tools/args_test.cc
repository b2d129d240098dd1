// The CLI's parser checks every value as its flag declares while parsing:
// ranges, choices (any case, stored as listed), switches without values,
// repeatable flags in order, fallbacks for absent flags, and --help built
// from the same declarations.
#include "tools/pocket/args.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pocket::cli {
namespace {

const FlagTable& TestFlags() {
  static const FlagTable table{"options",
                               {
                                   Int("-r|--repetitions", "N", "5", 1, 1000, "measured runs"),
                                   Choice("--kv", "f16", {"f16", "q8"}, "cache type"),
                                   Repeatable(Text("--stop", "STR", "stop string")),
                                   Switch("--json", "print JSON"),
                                   Uint64("--seed", "S", "seed"),
                               }};
  return table;
}

// Parses `args` (after a command name) and returns the error, "" if none.
std::string Parse(Args* parser, std::vector<std::string> args) {
  std::vector<char*> argv = {const_cast<char*>("cmd")};
  for (std::string& a : args) argv.push_back(a.data());
  return parser->Parse(static_cast<int>(argv.size()), argv.data()) ? "" : parser->error();
}

TEST(Args, ValuesAndFallbacks) {
  Args args({&TestFlags()});
  ASSERT_EQ(
      Parse(&args, {"--repetitions=7", "--kv", "Q8", "--stop", "a", "--stop=b", "--json", "file"}),
      "");
  EXPECT_EQ(args.Int("-r"), 7);
  EXPECT_EQ(args.Get("--kv"), "q8");
  EXPECT_EQ(args.All("--stop"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(args.Has("--json"));
  EXPECT_FALSE(args.Has("--seed"));
  EXPECT_EQ(args.positional(), std::vector<std::string>{"file"});
  Args empty({&TestFlags()});
  ASSERT_EQ(Parse(&empty, {}), "");
  EXPECT_FALSE(empty.Has("-r"));
  EXPECT_EQ(empty.Int("-r"), 5);
  EXPECT_EQ(empty.Get("--kv"), "f16");
}

TEST(Args, MalformedValuesNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-r", "0"}, "option '-r' needs an integer in [1, 1000], got '0'"},
      {{"-r", "3x"}, "option '-r' needs an integer in [1, 1000], got '3x'"},
      {{"--kv", "f32"}, "option '--kv' takes one of f16, q8 (any case), got 'f32'"},
      {{"--json=1"}, "option '--json' takes no value"},
      {{"--seed"}, "option '--seed' needs a value"},
      {{"--seed", "-1"}, "option '--seed' needs an integer in [0, 2^64 - 1], got '-1'"},
      {{"--nope"}, "unknown option '--nope'"},
  };
  for (const auto& [args, error] : cases) {
    Args parser({&TestFlags()});
    EXPECT_EQ(Parse(&parser, args), error) << args[0];
  }
}

TEST(Args, HelpListsEveryFlagWithItsDefault) {
  const std::string help = Args({&TestFlags()}).Help();
  EXPECT_EQ(help,
            "\noptions:\n"
            "  -r, --repetitions N   measured runs (default 5)\n"
            "  --kv f16|q8           cache type (default f16)\n"
            "  --stop STR            stop string; repeatable\n"
            "  --json                print JSON\n"
            "  --seed S              seed\n");
}

}  // namespace
}  // namespace pocket::cli
