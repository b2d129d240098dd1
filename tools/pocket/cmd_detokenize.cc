// `pocket detokenize`: token ids back to text, with the tokenizer's decoder
// rules (the inverse of `pocket tokenize`).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/pocket/args.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/tokenizer_source.h"

namespace pocket::cli {
namespace {

const char kDetokenizeUsage[] =
    "usage: pocket detokenize (-m FILE | --tokenizer-json FILE | --spm-model FILE)\n"
    "                         --ids 1,2,3\n"
    "\n"
    "Prints the text of comma-separated token ids.\n";

const FlagTable& DetokenizeFlags() {
  static const FlagTable table{"options", {Text("--ids", "LIST", "comma-separated token ids")}};
  return table;
}

// Parses "1,2,3"; on failure names the bad entry in *error.
bool ParseIds(const std::string& list, std::vector<int64_t>* ids, std::string* error) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(start, comma - start);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || errno != 0 || *end != '\0') {
      *error = "'" + item + "' in --ids is not an integer";
      return false;
    }
    ids->push_back(v);
    start = comma + 1;
  }
  return true;
}

}  // namespace

int CmdDetokenize(int argc, char** argv) {
  Args args({&DetokenizeFlags(), &TokenizerSourceFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "pocket detokenize: %s\n\n%s", args.error().c_str(), kDetokenizeUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kDetokenizeUsage, args.Help().c_str());
    return kExitOk;
  }
  std::vector<int64_t> raw;
  std::string error;
  if (!args.Has("--ids") || !args.positional().empty()) {
    std::fprintf(stderr, "pocket detokenize: --ids LIST is required (and nothing else)\n\n%s",
                 kDetokenizeUsage);
    return kExitUsage;
  }
  if (!ParseIds(args.Get("--ids"), &raw, &error)) {
    std::fprintf(stderr, "pocket detokenize: %s\n", error.c_str());
    return kExitUsage;
  }
  std::unique_ptr<Tokenizer> tok;
  if (int rc = LoadTokenizerFromArgs(args, "detokenize", &tok); rc != kExitOk) return rc;
  std::vector<int32_t> ids;
  for (int64_t id : raw) {
    if (id < 0 || id >= tok->vocab_size()) {
      std::fprintf(stderr, "pocket detokenize: token id %lld is outside the vocabulary [0, %d)\n",
                   static_cast<long long>(id), tok->vocab_size());
      return kExitError;
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  const std::string text = tok->Decode(ids);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  return kExitOk;
}

}  // namespace pocket::cli
