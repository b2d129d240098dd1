// `pocket run`: generate text from one prompt (or one chat turn).
#include <cstdio>
#include <string>

#include "tools/pocket/commands.h"
#include "tools/pocket/model_flags.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/spec_flags.h"
#include "util/json_util.h"

namespace pocket::cli {

namespace {

const char kRunUsage[] =
    "usage: pocket run -m FILE -p TEXT [options]\n\n"
    "Generates text from a prompt and streams the prompt, then the generated\n"
    "text, to stdout (with --chat only the reply).\n";

const FlagTable& RunFlags() {
  static const FlagTable table{
      "options",
      {
          Text("-p|--prompt", "TEXT", "the prompt (required)"),
          Switch("--chat", "render the prompt as a user turn with the chat template"),
          Text("--system", "TEXT", "system message (with --chat)"),
          Switch("--no-think", "Qwen3: render the empty think block (with --chat)"),
          Switch("--json",
                 "print one JSON object instead of streaming: {prompt_ids, ids, text, "
                 "prefill_tok_s, decode_tok_s, stop, memory: {weights, weights_resident, model, "
                 "kv, scratch, logits, total, budget, max_tokens, tokens}}"),
      }};
  return table;
}

double Rate(int tokens, double seconds) { return seconds > 0 ? tokens / seconds : 0.0; }

Json MemoryJson(const MemoryUsage& m) {
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
  return mem;
}

void PrintJson(const GenerateResult& result, const MemoryUsage& memory) {
  Json out = Json::object();
  out["prompt_ids"] = result.prompt_ids;
  out["ids"] = result.ids;
  out["text"] = result.text;
  out["prefill_tok_s"] = Rate(result.prefill_tokens, result.prefill_seconds);
  out["decode_tok_s"] = Rate(result.decode_tokens, result.decode_seconds);
  out["stop"] = result.stop;
  const SpeculationStats& spec = result.speculation;
  if (spec.batched_steps + spec.single_steps > 0) {
    out["speculation"] = Json{{"batched_steps", spec.batched_steps},
                              {"single_steps", spec.single_steps},
                              {"drafted", spec.drafted},
                              {"accepted", spec.accepted}};
  }
  out["memory"] = MemoryJson(memory);
  std::printf("%s\n", DumpJson(out).c_str());
}

}  // namespace

int CmdRun(int argc, char** argv) {
  Args args(
      {&RunFlags(), &ModelFlags(), &SamplingFlags(), &ConstraintFlags(), &SpeculationFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "error: %s\n\n%s", args.error().c_str(), kRunUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kRunUsage, args.Help().c_str());
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
  rc = GenerateOptionsFromArgs(args, loaded.model->config(), &options);
  if (rc != kExitOk) return rc;
  std::unique_ptr<Session> session;
  rc = NewSession(loaded, &session);
  if (rc != kExitOk) return rc;
  DraftModel draft;
  rc = SpeculationFromArgs(args, session.get(), &draft, &options.speculation);
  if (rc != kExitOk) return rc;

  const bool json = args.Has("--json");
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
    PrintJson(result, session->memory());
  } else {
    std::printf("\n");
  }
  return kExitOk;
}

}  // namespace pocket::cli
