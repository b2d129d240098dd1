// The flag tables several commands share and what they set: the model
// flags (run, chat, logits, perplexity, bench), the sampling flags (run,
// chat) and the constraint flags (run, chat, bench).
#pragma once

#include <memory>
#include <optional>

#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tools/pocket/args.h"

namespace pocket::cli {

const FlagTable& ModelFlags();       // -m, -t, --kv, --backend, --budget, ...
const FlagTable& SamplingFlags();    // -n, --temp, --top-k, ..., --stop, --ignore-eos
const FlagTable& ConstraintFlags();  // --grammar, --json-schema, --regex

// Loads the model the model flags name. Returns an exit code (kExitOk on
// success) and prints the error to stderr otherwise. Without --kv the
// session gets default_kv, or when that is empty the model's
// default_kv_type().
struct LoadedModel {
  std::unique_ptr<Model> model;
  SessionOptions session;
  double load_ms = 0;
};
int LoadModelFromArgs(const Args& args, std::optional<KvType> default_kv, LoadedModel* out);
// A session with the flags' options; a budget too small for the model
// prints the error and returns kExitError.
int NewSession(const LoadedModel& loaded, std::unique_ptr<Session>* out);

// Sampling and limits: config.generation defaults, overridden by the
// sampling flags; --temp 0 is greedy. Then GrammarFromArgs. Returns an
// exit code.
int GenerateOptionsFromArgs(const Args& args, const ModelConfig& config, GenerateOptions* out);

// The constraint flags (at most one; none leaves out->grammar null)
// compiled into out->grammar. Returns an exit code, the error printed: a
// usage error, or 1 for a file that cannot be read or does not compile.
int GrammarFromArgs(const Args& args, GenerateOptions* out);

}  // namespace pocket::cli
