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
          Text("--spec", "ngram|model:FILE|off",
               "draft tokens by prompt lookup (n-grams of the prompt and output) or with a "
               "smaller model of the same tokenizer, and verify them in one batched step "
               "(default off)"),
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

int SpeculationFromArgs(const Args& args, const LoadedModel& loaded, DraftModel* draft,
                        SpeculationOptions* out) {
  const std::string spec = args.Get("--spec");
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
  if (spec.empty() || spec == "off") return kExitOk;
  if (spec == "ngram") {
    out->prompt_lookup = true;
    return kExitOk;
  }
  if (spec.rfind("model:", 0) != 0 || spec.size() == 6) {
    std::fprintf(stderr, "error: --spec takes ngram, model:FILE or off, not '%s'\n", spec.c_str());
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
  if (Status s = CheckDraftModel(*loaded.model, *draft->model); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return kExitError;
  }
  SessionOptions session = loaded.session;
  session.kv_type = draft->model->default_kv_type();
  auto created = Session::Create(draft->model.get(), session);
  if (!created.ok()) {
    std::fprintf(stderr, "error: draft model: %s\n", InFlagTerms(created.status()).c_str());
    return kExitError;
  }
  draft->session = std::move(created).value();
  out->draft_session = draft->session.get();
  return kExitOk;
}

}  // namespace pocket::cli
