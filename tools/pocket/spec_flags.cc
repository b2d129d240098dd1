#include "tools/pocket/spec_flags.h"

#include <cstdio>
#include <string>

#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"
#include "util/file_io.h"

namespace pocket::cli {

const FlagTable& SpeculationFlags() {
  static const FlagTable table{
      "speculative decoding (the same output, fewer passes over the weights)",
      {
          Text("--spec", "auto|ngram|model:FILE|off",
               "draft tokens by prompt lookup (n-grams of the prompt and output) or with a "
               "smaller model of the same tokenizer (within the budget: the two caches share "
               "it), and verify them in one batched step; auto (the default): prompt lookup "
               "on a backend whose batched steps are exact (the CPU), off elsewhere"),
          Text("--spec-lookup", "FILE",
               "text prompt lookup also searches (a document the output quotes); implies "
               "--spec ngram"),
          Int("--spec-max", "N", "8", 1, SpeculationOptions::kMaxDraft,
              "most tokens drafted per step"),
          Switch("--spec-fixed",
                 "verify every draft, up to --spec-max (default: only where the measured "
                 "costs and acceptance promise a gain)"),
      }};
  return table;
}

int SpeculationFromArgs(const Args& args, Session* session, DraftModel* draft,
                        SpeculationOptions* out) {
  const std::string spec = args.Get("--spec");
  *out = SpeculationOptions();
  out->exact_backends_only = spec == "auto" || (spec.empty() && !args.Has("--spec-lookup"));
  out->max_draft = static_cast<int32_t>(args.Int("--spec-max"));
  out->adaptive = !args.Has("--spec-fixed");
  if (args.Has("--spec-lookup")) {
    StatusOr<std::string> text =
        ReadRegularFile(args.Get("--spec-lookup"), "--spec-lookup", kMaxTextFileBytes);
    if (!text.ok()) {
      std::fprintf(stderr, "error: %s\n", InFlagTerms(text.status().message()).c_str());
      return kExitError;
    }
    out->lookup_text = std::move(text).value();
    out->prompt_lookup = true;
  }
  if (spec == "off") {
    *out = SpeculationOptions::Off();
    return kExitOk;
  }
  if (spec.empty() || spec == "auto") return kExitOk;
  if (spec == "ngram") {
    out->prompt_lookup = true;
    return kExitOk;
  }
  if (spec.rfind("model:", 0) != 0 || spec.size() == 6) {
    std::fprintf(stderr, "error: --spec takes auto, ngram, model:FILE or off, not '%s'\n",
                 spec.c_str());
    return kExitUsage;
  }
  ModelOptions options;
  options.threads = static_cast<int>(args.Int("-t"));
  options.backend = args.Get("--backend");
  options.quant_math = args.Get("--quant-math") == "f32" ? QuantMath::kF32 : QuantMath::kInt8;
  auto model = Model::Load(spec.substr(6), options);
  if (!model.ok()) {
    std::fprintf(stderr, "error: draft model: %s\n", InFlagTerms(model.status()).c_str());
    return kExitError;
  }
  draft->model = std::move(model).value();
  auto created = CreateDraftSession(session, draft->model.get(), draft->model->default_kv_type());
  if (!created.ok()) {
    std::fprintf(stderr, "error: draft model: %s\n", InFlagTerms(created.status()).c_str());
    return kExitError;
  }
  draft->session = std::move(created).value();
  out->draft_session = draft->session.get();
  return kExitOk;
}

}  // namespace pocket::cli
