// `pocket chat`: interactive multi-turn chat on stdin/stdout. Each input
// line is one user turn; the KV cache is kept across turns so only the new
// turn is run through the model. Works with stdin from a pipe.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "grammar/tool_calls.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/model_flags.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/spec_flags.h"
#include "util/file_io.h"

namespace pocket::cli {

namespace {

const char kChatUsage[] =
    "usage: pocket chat -m FILE [--system TEXT] [--think|--no-think] [options]\n\n"
    "Reads one user message per line from stdin and streams each reply to stdout.\n"
    "Commands: /reset starts a new conversation, /quit (or end of input) exits,\n"
    "/tool TEXT answers the model's tool calls with a tool result (--tools).\n";

const FlagTable& ChatFlags() {
  static const FlagTable table{
      "options",
      {
          Text("--system", "TEXT", "system message at the start of each conversation"),
          Switch("--think", "Qwen3: let the model think (the default)"),
          Switch("--no-think", "Qwen3: render the empty think block"),
          Text("--tools", "FILE",
               "Qwen3: a JSON array of tools the model may call (name, description, "
               "parameters as a JSON Schema); each call is printed as a line 'tool call: NAME "
               "ARGUMENTS'"),
          Switch("--tool-required", "with --tools: each reply is tool calls only"),
      }};
  return table;
}

}  // namespace

int CmdChat(int argc, char** argv) {
  Args args(
      {&ChatFlags(), &ModelFlags(), &SamplingFlags(), &ConstraintFlags(), &SpeculationFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "error: %s\n\n%s", args.error().c_str(), kChatUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kChatUsage, args.Help().c_str());
    return kExitOk;
  }
  if (args.Has("--think") && args.Has("--no-think")) {
    std::fprintf(stderr, "error: --think and --no-think exclude each other\n");
    return kExitUsage;
  }
  if (!args.positional().empty()) {
    std::fprintf(stderr, "error: unexpected argument '%s'\n", args.positional()[0].c_str());
    return kExitUsage;
  }
  LoadedModel loaded;
  int rc = LoadModelFromArgs(args, std::nullopt, &loaded);
  if (rc != kExitOk) return rc;
  GenerateOptions options;
  rc = GenerateOptionsFromArgs(args, loaded.model->config(), &options);
  if (rc != kExitOk) return rc;

  if (args.Has("--tools")) {
    StatusOr<std::string> text = ReadRegularFile(args.Get("--tools"), "--tools", kMaxTextFileBytes);
    StatusOr<std::vector<grammar::ToolDefinition>> tools =
        text.ok() ? grammar::ParseToolDefinitions(*text) : text.status();
    if (!tools.ok()) {
      std::fprintf(stderr, "error: --tools: %s\n", InFlagTerms(tools.status().message()).c_str());
      return kExitError;
    }
    options.tools = std::move(tools).value();
    if (args.Has("--tool-required")) options.tool_choice = grammar::ToolChoice::kRequired;
  }

  const bool interactive = isatty(STDIN_FILENO);
  ChatOptions chat;
  chat.enable_thinking = !args.Has("--no-think");
  std::unique_ptr<Session> session;
  rc = NewSession(loaded, &session);
  if (rc != kExitOk) return rc;
  DraftModel draft;
  rc = SpeculationFromArgs(args, session.get(), &draft, &options.speculation);
  if (rc != kExitOk) return rc;
  bool first_turn = true;
  bool failed = false;
  TextCallback print = [](std::string_view piece, int32_t) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  std::string line;
  while (true) {
    if (interactive) {
      std::printf("> ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "/quit") break;
    if (line == "/reset") {
      // The cache stays, so a repeated system prompt is not computed again.
      session->NewConversation();
      first_turn = true;
      if (interactive) std::printf("(new conversation)\n");
      continue;
    }
    if (line.empty()) continue;
    std::vector<ChatMessage> messages;
    if (first_turn && args.Has("--system")) messages.push_back({"system", args.Get("--system")});
    if (line.rfind("/tool ", 0) == 0) {
      messages.push_back({"tool", line.substr(6)});
    } else {
      messages.push_back({"user", line});
    }
    GenerateResult result;
    Status s = GenerateChat(session.get(), messages, chat, options, print, &result);
    std::printf("\n");
    for (const grammar::ToolCall& call : result.tool_calls) {
      std::printf("tool call: %s %s\n", call.name.c_str(), call.arguments.c_str());
    }
    std::fflush(stdout);
    if (!s.ok()) {
      // The session is unchanged after an error, so the chat can go on.
      std::fprintf(stderr, "error: %s\n", InFlagTerms(s).c_str());
      failed = true;
      continue;
    }
    first_turn = false;
  }
  // A scripted chat (stdin from a pipe) reports a failed turn in its status.
  return failed && !interactive ? kExitError : kExitOk;
}

}  // namespace pocket::cli
