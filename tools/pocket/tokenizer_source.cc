#include "tools/pocket/tokenizer_source.h"

#include <cstdio>

#include "format/reader.h"
#include "tools/pocket/commands.h"
#include "util/file_io.h"

namespace pocket::cli {
namespace {

std::string SiblingConfig(const std::string& tokenizer_json_path) {
  const size_t slash = tokenizer_json_path.find_last_of('/');
  const std::string dir =
      slash == std::string::npos ? std::string() : tokenizer_json_path.substr(0, slash + 1);
  return dir + "tokenizer_config.json";
}

StatusOr<std::unique_ptr<Tokenizer>> Load(const Args& args) {
  if (args.Has("-m")) {
    POCKET_ASSIGN_OR_RETURN(std::unique_ptr<PocketFile> file, PocketFile::Open(args.Get("-m")));
    return Tokenizer::FromBlob(file->tokenizer_blob());
  }
  if (args.Has("--spm-model")) {
    POCKET_ASSIGN_OR_RETURN(
        std::string text,
        ReadRegularFile(args.Get("--spm-model"), "SentencePiece .model file (--spm-model)",
                        kMaxTextFileBytes));
    return Tokenizer::FromSentencePiece(text);
  }
  POCKET_ASSIGN_OR_RETURN(std::string text,
                          ReadRegularFile(args.Get("--tokenizer-json"),
                                          "tokenizer.json (--tokenizer-json)", kMaxTextFileBytes));
  // tokenizer_config.json is optional: an absent one leaves the template
  // out, while one that is there but cannot be read is an error.
  StatusOr<std::string> config = ReadRegularFile(SiblingConfig(args.Get("--tokenizer-json")),
                                                 "tokenizer_config.json", kMaxTextFileBytes);
  if (!config.ok() && config.status().code() != StatusCode::kNotFound) return config.status();
  return Tokenizer::FromHfJson(text, config.ok() ? *config : std::string());
}

}  // namespace

const FlagTable& TokenizerSourceFlags() {
  static const FlagTable table{
      "tokenizer (exactly one)",
      {
          Text("-m|--model", "FILE", "the tokenizer of a .pocket model"),
          Text("--tokenizer-json", "FILE",
               "a Hugging Face tokenizer.json (tokenizer_config.json next to it is read too, "
               "when present)"),
          Text("--spm-model", "FILE", "a SentencePiece .model file"),
      }};
  return table;
}

int LoadTokenizerFromArgs(const Args& args, const char* cmd, std::unique_ptr<Tokenizer>* out) {
  const int sources = args.Has("-m") + args.Has("--tokenizer-json") + args.Has("--spm-model");
  if (sources != 1) {
    std::fprintf(stderr,
                 "pocket %s: give exactly one of -m FILE, --tokenizer-json FILE, "
                 "--spm-model FILE (see --help)\n",
                 cmd);
    return kExitUsage;
  }
  StatusOr<std::unique_ptr<Tokenizer>> tok = Load(args);
  if (!tok.ok()) {
    std::fprintf(stderr, "pocket %s: %s\n", cmd, tok.status().ToString().c_str());
    return kExitError;
  }
  *out = std::move(tok).value();
  return kExitOk;
}

}  // namespace pocket::cli
