// `pocket tokenize`: text to token ids, for checking a model's tokenizer.
#include <cstdio>
#include <string>

#include "tools/pocket/args.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/tokenizer_source.h"
#include "util/json_util.h"

namespace pocket::cli {
namespace {

const char kTokenizeUsage[] =
    "usage: pocket tokenize (-m FILE | --tokenizer-json FILE | --spm-model FILE)\n"
    "                       --text TEXT [--json] [--no-special]\n"
    "\n"
    "Prints the token ids of TEXT, space-separated (no BOS is added).\n";

const FlagTable& TokenizeFlags() {
  static const FlagTable table{
      "options",
      {
          Text("--text", "TEXT", "the text to tokenize (UTF-8)"),
          Switch("--json", "print {\"ids\": [...]}"),
          Switch("--no-special", "treat special tokens such as <|im_start|> as text"),
      }};
  return table;
}

}  // namespace

int CmdTokenize(int argc, char** argv) {
  Args args({&TokenizeFlags(), &TokenizerSourceFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "pocket tokenize: %s\n\n%s", args.error().c_str(), kTokenizeUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kTokenizeUsage, args.Help().c_str());
    return kExitOk;
  }
  if (!args.Has("--text") || !args.positional().empty()) {
    std::fprintf(stderr, "pocket tokenize: --text TEXT is required (and nothing else)\n\n%s",
                 kTokenizeUsage);
    return kExitUsage;
  }
  std::unique_ptr<Tokenizer> tok;
  if (int rc = LoadTokenizerFromArgs(args, "tokenize", &tok); rc != kExitOk) return rc;
  StatusOr<std::vector<int32_t>> ids = tok->Encode(args.Get("--text"), !args.Has("--no-special"));
  if (!ids.ok()) {
    std::fprintf(stderr, "pocket tokenize: %s\n", ids.status().ToString().c_str());
    return kExitError;
  }
  if (args.Has("--json")) {
    Json out = Json::object();
    out["ids"] = *ids;
    std::printf("%s\n", DumpJson(out).c_str());
    return kExitOk;
  }
  std::string line;
  for (size_t i = 0; i < ids->size(); ++i) {
    if (i) line += ' ';
    line += std::to_string((*ids)[i]);
  }
  std::printf("%s\n", line.c_str());
  return kExitOk;
}

}  // namespace pocket::cli
