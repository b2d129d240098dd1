// Flags shared by the generation subcommands (run, chat, logits,
// perplexity, bench): model loading, threads, KV type, budget, sampling.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tools/pocket/args.h"

namespace pocket::cli {

// Flag specs to add to an Args parser.
std::vector<std::string> ModelValueFlags();     // -m, -t, --kv, --budget, --kv-policy, --backend,
                                                // --quant-math, --cpu-target
std::vector<std::string> SamplingValueFlags();  // -n, --temp, --top-k, ..., --seed
// A command's own switches plus the model's (--pin-threads).
std::vector<std::string> WithModelBoolFlags(std::vector<std::string> flags);
extern const char kModelFlagsHelp[];
extern const char kSamplingFlagsHelp[];

// Reads the model flags. Returns an exit code (kExitOk on success) and
// prints the error to stderr otherwise. Without --kv the session gets
// default_kv, or when that is empty the model's default_kv_type().
struct LoadedModel {
  std::unique_ptr<Model> model;
  SessionOptions session;
  double load_ms = 0;
};
int LoadModelFromArgs(Args& args, std::optional<KvType> default_kv, LoadedModel* out);
// A session with the flags' options; a budget too small for the model
// prints the error and returns kExitError.
int NewSession(const LoadedModel& loaded, std::unique_ptr<Session>* out);

// Sampling and limits: config.generation defaults, overridden by flags;
// --temp 0 is greedy. Returns an exit code.
int GenerateOptionsFromArgs(Args& args, int argc, char** argv, const ModelConfig& config,
                            GenerateOptions* out);

// --grammar FILE, --json-schema FILE or --regex RE (at most one; none
// leaves out->grammar null) compiled into out->grammar. Returns an exit
// code, the error printed: a usage error, or 1 for a file that cannot be
// read or does not compile.
int GrammarFromArgs(Args& args, GenerateOptions* out);

// Every value given for a repeatable flag (--stop A --stop B, --stop=C).
std::vector<std::string> AllValues(int argc, char** argv, const std::string& flag);

}  // namespace pocket::cli
