// The speculative-decoding flags (run, chat, bench) and what they set:
// --spec ngram|model:FILE|off, --spec-lookup FILE, --spec-max N.
#pragma once

#include <memory>

#include "runtime/speculative.h"
#include "tools/pocket/args.h"
#include "tools/pocket/model_flags.h"

namespace pocket::cli {

const FlagTable& SpeculationFlags();

// A draft model and its session, kept alive for SpeculationOptions.
struct DraftModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Session> session;
};

// Fills *out from the flags (a draft model is loaded into *draft with the
// model flags' threads, backend and maths, and given a session that shares
// `session`'s budget: CreateDraftSession). Returns an exit code, the error
// printed.
int SpeculationFromArgs(const Args& args, Session* session, DraftModel* draft,
                        SpeculationOptions* out);

}  // namespace pocket::cli
