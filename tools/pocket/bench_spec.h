// `pocket bench --spec`: speculative decoding's costs and gain, in one run:
// the verify cost curve (one batched step over b positions against one
// single step), then -r pairs of a plain decode and a speculative one over
// the same tokens, each after the same prompt. With --spec-replay FILE the
// model "produces" the file's tokens instead of its own greedy picks (the
// verifier keeps a guess where it matches the file), so a random-weight
// model measures the mechanism on real text's acceptance pattern.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/session.h"
#include "runtime/speculative.h"
#include "tools/pocket/args.h"
#include "tools/pocket/bench_stats.h"
#include "tools/pocket/model_flags.h"

namespace pocket::cli {

const FlagTable& SpecBenchFlags();  // --spec-replay

struct SpecBench {
  std::vector<double> verify_ms;    // [b - 1]: one step over b positions
  std::vector<double> last_row_ms;  // the same with the last row's logits only
  Stats plain_tok_s, spec_tok_s;
  Stats speedup;  // plain decode time / speculative decode time, per pair
  double tokens_per_step = 0, acceptance = 0;
  SpeculationStats stats;   // summed over the measured speculative runs
  double spec_seconds = 0;  // their decode time
  bool replay = false;
};

// The prompt and the tokens to replay: the first n_prompt tokens of the
// replay file's text and the n_gen after them. Returns an exit code, the
// error printed.
int ReplayTokens(const Args& args, const Model& model, int64_t n_prompt, int64_t n_gen,
                 std::vector<int32_t>* prompt, std::vector<int32_t>* replay);

// Fills *out; `replay` empty: greedy picks. False, the error printed, when
// an evaluation failed.
bool MeasureSpeculation(Session* session, const std::vector<int32_t>& prompt,
                        const std::vector<int32_t>& replay, int64_t n_gen, int64_t reps,
                        const SpeculationOptions& options, SpecBench* out);

// Whether the flags ask for the speculative bench (--spec other than off,
// or --spec-lookup).
bool WantsSpecBench(const Args& args);
// The whole speculative bench on `loaded` with -p/-n/-r: prints the report
// (--json: one object). Returns an exit code.
int RunSpecBench(const Args& args, const LoadedModel& loaded);

}  // namespace pocket::cli
