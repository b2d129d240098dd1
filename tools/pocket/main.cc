// `pocket`: one executable, git-style subcommands (docs/cli.md).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"
#include "util/log.h"

namespace {

struct Command {
  const char* name;
  int (*fn)(int, char**);
  const char* help;
};

constexpr Command kCommands[] = {
    {"run", pocket::cli::CmdRun, "generate text from a prompt"},
    {"chat", pocket::cli::CmdChat, "interactive multi-turn chat"},
    {"bench", pocket::cli::CmdBench, "measure prefill and decode speed"},
    {"convert", pocket::cli::CmdConvert, "convert a HF directory or llama2.c checkpoint"},
    {"inspect", pocket::cli::CmdInspect, "show config, tokenizer and tensors of a file"},
    {"verify", pocket::cli::CmdVerify, "check every checksum of a file"},
    {"synth", pocket::cli::CmdSynth, "write a model with random weights and exact shapes"},
    {"tokenize", pocket::cli::CmdTokenize, "text to token ids"},
    {"detokenize", pocket::cli::CmdDetokenize, "token ids to text"},
    {"logits", pocket::cli::CmdLogits, "teacher-forced logits to a .npy file"},
    {"perplexity", pocket::cli::CmdPerplexity, "perplexity of a text file"},
};

// The library reports what it cannot do as a Status; an allocation that
// fails anyway (a process memory limit, ulimit -v, reached by a small one)
// ends the command with exit 1 and this message instead of an abort.
void OutOfMemory() {
  std::fflush(stdout);  // what was generated so far
  std::fputs(
      "pocket: out of memory: an allocation failed (a process memory limit such as "
      "ulimit -v, or the system's memory is used up); raise the limit, or use a smaller "
      "model or a lower --budget\n",
      stderr);
  std::_Exit(pocket::cli::kExitError);
}

// Library warnings (such as computing on fewer threads than -t asked for,
// where the system refuses threads) go to stderr, in flag terms.
void PrintLog(pocket::LogLevel level, const std::string& message) {
  if (level >= pocket::LogLevel::kWarning) {
    std::fprintf(stderr, "pocket: %s: %s\n",
                 level == pocket::LogLevel::kError ? "error" : "warning",
                 pocket::cli::InFlagTerms(message).c_str());
  }
}

void PrintUsage(FILE* f) {
  std::fprintf(f, "usage: pocket <command> [options]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(f, "  %-11s %s\n", c.name, c.help);
  std::fprintf(f, "\n'pocket <command> --help' shows a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::set_new_handler(OutOfMemory);
  pocket::SetLogCallback(PrintLog);
  if (argc < 2) {
    PrintUsage(stderr);
    return pocket::cli::kExitUsage;
  }
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    PrintUsage(stdout);
    return pocket::cli::kExitOk;
  }
  for (const Command& c : kCommands) {
    if (!std::strcmp(argv[1], c.name)) return c.fn(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "pocket: unknown command '%s'\n\n", argv[1]);
  PrintUsage(stderr);
  return pocket::cli::kExitUsage;
}
