// `pocket run`: generate text from one prompt (or one chat turn).
#include <cstdio>
#include <string>

#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/model_flags.h"
#include "util/json_util.h"

namespace pocket::cli {

namespace {

const char kRunHelp[] =
    "usage: pocket run -m FILE -p TEXT [options]\n\n"
    "Generates text from a prompt and streams the prompt, then the generated\n"
    "text, to stdout (with --chat only the reply).\n\n"
    "  -p, --prompt TEXT     the prompt (required)\n"
    "  --chat                render the prompt as a user turn with the chat template\n"
    "  --system TEXT         system message (with --chat)\n"
    "  --no-think            Qwen3: render the empty think block (with --chat)\n"
    "  --json                print one JSON object instead of streaming:\n"
    "                        {prompt_ids, ids, text, prefill_tok_s, decode_tok_s, stop,\n"
    "                         memory: {weights, weights_resident, model, kv, scratch,\n"
    "                         logits, total, budget, max_tokens, tokens}}\n";

double Rate(int tokens, double seconds) { return seconds > 0 ? tokens / seconds : 0.0; }

}  // namespace

int CmdRun(int argc, char** argv) {
  std::vector<std::string> values = ModelValueFlags();
  for (const std::string& f : SamplingValueFlags()) values.push_back(f);
  values.push_back("-p|--prompt");
  values.push_back("--system");
  Args args(values,
            WithModelBoolFlags({"-h|--help", "--json", "--chat", "--no-think", "--ignore-eos"}));
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "error: %s\n\n%s", args.error().c_str(), kRunHelp);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s%s", kRunHelp, kModelFlagsHelp, kSamplingFlagsHelp);
    return kExitOk;
  }
  if (!args.positional().empty()) {
    std::fprintf(stderr, "error: unexpected argument '%s' (the prompt goes after -p)\n",
                 args.positional()[0].c_str());
    return kExitUsage;
  }
  if (!args.Has("-p")) {
    std::fprintf(stderr, "error: -p TEXT is required (see --help)\n");
    return kExitUsage;
  }
  LoadedModel loaded;
  int rc = LoadModelFromArgs(args, std::nullopt, &loaded);
  if (rc != kExitOk) return rc;
  GenerateOptions options;
  rc = GenerateOptionsFromArgs(args, argc, argv, loaded.model->config(), &options);
  if (rc != kExitOk) return rc;

  const bool json = args.Has("--json");
  std::unique_ptr<Session> session;
  rc = NewSession(loaded, &session);
  if (rc != kExitOk) return rc;
  TextCallback print = [json](std::string_view piece, int32_t) {
    if (!json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  GenerateResult result;
  Status s;
  // Like llama2.c and llama.cpp, a plain completion shows its prompt first.
  if (!json && !args.Has("--chat")) {
    std::fputs(args.Get("-p").c_str(), stdout);
    std::fflush(stdout);
  }
  if (args.Has("--chat")) {
    std::vector<ChatMessage> messages;
    if (args.Has("--system")) messages.push_back({"system", args.Get("--system")});
    messages.push_back({"user", args.Get("-p")});
    ChatOptions chat;
    chat.enable_thinking = !args.Has("--no-think");
    s = GenerateChat(session.get(), messages, chat, options, print, &result);
  } else {
    s = Generate(session.get(), args.Get("-p"), options, print, &result);
  }
  if (!s.ok()) {
    if (!json) std::printf("\n");
    std::fprintf(stderr, "error: %s\n", InFlagTerms(s).c_str());
    return kExitError;
  }
  if (json) {
    Json out = Json::object();
    out["prompt_ids"] = result.prompt_ids;
    out["ids"] = result.ids;
    out["text"] = result.text;
    out["prefill_tok_s"] = Rate(result.prefill_tokens, result.prefill_seconds);
    out["decode_tok_s"] = Rate(result.decode_tokens, result.decode_seconds);
    out["stop"] = result.stop;
    const MemoryUsage m = session->memory();
    Json mem = Json::object();
    mem["weights"] = m.weights;
    mem["weights_resident"] = m.weights_resident;
    mem["model"] = m.model;
    mem["kv"] = m.kv;
    mem["scratch"] = m.scratch;
    mem["logits"] = m.logits;
    mem["total"] = m.total();
    mem["budget"] = m.budget;
    mem["max_tokens"] = m.max_tokens;
    mem["tokens"] = m.tokens;
    out["memory"] = mem;
    std::printf("%s\n", DumpJson(out).c_str());
  } else {
    std::printf("\n");
  }
  return kExitOk;
}

}  // namespace pocket::cli
