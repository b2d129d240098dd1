// A flag of the `pocket` commands, declared once: its names, its value's
// name and default, its help and how its value is checked. Args parses a
// command line against a command's flag tables and prints them as --help;
// docs/cli.md lists the same flags (tests/tools/cli_docs_test.cc checks).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pocket::cli {

// What a flag's value must be; a value that is not is a usage error.
enum class ValueKind {
  kSwitch,  // no value
  kText,    // any text
  kInt,     // an integer in [min, max]
  kUint64,  // an integer in [0, 2^64 - 1]
  kNumber,  // a decimal number
  kChoice,  // one of choices(), in any case
};

struct Flag {
  std::string names;     // aliases separated by '|', e.g. "-n|--n-predict"; the first is the key
  std::string value;     // the value's name in --help ("N", "FILE"); empty for a switch
  std::string fallback;  // the value when the flag is not given; empty: none
  std::string help;      // one sentence or two, without the default
  ValueKind kind = ValueKind::kSwitch;
  int64_t min = 0, max = 0;                           // kInt
  std::function<std::vector<std::string>()> choices;  // kChoice
  bool repeatable = false;                            // every value is kept (Args::All)

  Flag WithFallback(std::string value) const {
    Flag f = *this;
    f.fallback = std::move(value);
    return f;
  }
};

// One declaration per kind.
Flag Switch(std::string names, std::string help);
Flag Text(std::string names, std::string value, std::string help);
Flag Int(std::string names, std::string value, std::string fallback, int64_t min, int64_t max,
         std::string help);
Flag Uint64(std::string names, std::string value, std::string help);
Flag Number(std::string names, std::string value, std::string help);
// `value` empty: --help shows the choices as the value ("f16|bf16").
Flag Choice(std::string names, std::string value, std::string fallback,
            std::function<std::vector<std::string>()> choices, std::string help);
Flag Choice(std::string names, std::string fallback, std::vector<std::string> choices,
            std::string help);
Flag Repeatable(Flag flag);

// The flag's names: "-n|--n-predict" -> {"-n", "--n-predict"}.
std::vector<std::string> Names(const Flag& flag);

// A command's own flags, or a group several commands share.
struct FlagTable {
  std::string title;  // "options", "model options", ...
  std::vector<Flag> flags;
};

// --help's lines for the tables: a title line each, then per flag
// "  -n, --n-predict N     help (default X)", wrapped at 80 columns.
std::string FlagHelp(const std::vector<const FlagTable*>& tables);

}  // namespace pocket::cli
