// Speculative decoding on a Session. A drafter (drafters.h) guesses the
// tokens that follow; one batched step, Session::Eval of the newest token
// and the guesses with LogitsMode::kAll, computes the model's logits at
// every guessed position in one pass over the weights; Generate's sampler
// then picks each token from those rows exactly as it would from single
// steps, and the positions after the first token that differs from its
// guess are truncated off the cache.
//
// Exactness: each row is the model's next-token distribution given the
// tokens actually chosen, and each token is drawn from its row by the same
// sampler, with the same random draws, as without speculation; a guess is
// kept only where the drawn token equals it. For a drafter whose guess is
// one token with certainty (q = 1 for it), this is the speculative-sampling
// rule: accept with probability min(1, p/q) = p(guess), otherwise draw from
// norm(max(0, p - q)), p without the guess; so greedy output is the same
// token for token, sampled output has the model's distribution, and a
// seeded run reproduces the run without speculation.
//
// The budget: a batched step never makes the session slide or fail where a
// single step would not. Near the budget's end (or the context's) the steps
// are single-token ones again, with the batched steps' extra scratch given
// back first, so the window slides, or the budget runs out, at the same
// token as without speculation.
//
// Cost model (docs/performance.md): a step over b positions costs c(b)
// single steps, learned per b from the steps' own wall times (kept per
// model for the process; untimed sizes between timed ones, a prior line
// 1 + 0.15 (b - 1) before any); a draft of k tokens whose
// guesses are each right with probability a yields 1 + a + ... + a^k
// tokens. The decoder drafts the k that maximizes tokens per unit cost and
// does not verify where no k beats a single step; after 256 single steps in
// a row it verifies once where the prior costs say so, which times c(b)
// again. Acceptance is tracked as
// it goes, on the drafts a cheap drafter makes for steps it does not
// verify too.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/drafters.h"
#include "runtime/session.h"
#include "util/status.h"

namespace pocket {

struct SpeculationOptions {
  // Drafters; with none, decoding is plain. A draft session takes
  // precedence over prompt lookup. The default, prompt lookup verified
  // where the cost model promises a gain on a backend with exact batch
  // rows, never changes the output and costs next to nothing where text
  // does not repeat (docs/performance.md).
  bool prompt_lookup = true;  // n-grams of the session's own tokens
  // Searched by prompt lookup after the session's tokens (tokenized without
  // BOS; prompt lookup is on when it is not empty).
  std::string lookup_text;
  // A session on a draft model (CheckDraftModel), used by one Generate at a
  // time; not owned. It holds its own KV cache and counts its own budget.
  Session* draft_session = nullptr;
  int32_t max_draft = 8;  // most tokens guessed per step, 1..kMaxDraft
  // Choose the draft length per step from the cost model; false: always
  // verify as many guesses as the drafter has, up to max_draft.
  bool adaptive = true;
  // Speculate only on a backend whose batched rows are its single steps'
  // bits (BackendCapabilities::exact_batch_rows); explicit requests (the
  // CLI's --spec, the C API's POCKET_SPECULATION_NGRAM and _MODEL) clear it
  // and take a backend's rounding differences between a batched and a
  // single step.
  bool exact_backends_only = true;

  // A step verifies the newest token and its guesses: at most 16 tokens,
  // which the CPU backend runs with each token's single-step bits
  // (backends/cpu/ops.h: kBatchTokens).
  static constexpr int32_t kMaxDraft = 15;
  static SpeculationOptions Off() {
    SpeculationOptions off;
    off.prompt_lookup = false;
    return off;
  }
  // Whether a session on `model` speculates with these options.
  bool EnabledOn(const Model& model) const {
    return max_draft > 0 && (prompt_lookup || !lookup_text.empty() || draft_session != nullptr) &&
           (!exact_backends_only || model.backend().capabilities().exact_batch_rows);
  }
};

Status ValidateSpeculationOptions(const SpeculationOptions& options, const Model& model);

struct SpeculationStats {
  int64_t batched_steps = 0;  // verifying steps
  int64_t single_steps = 0;   // steps of one token
  int64_t drafted = 0;        // guesses verified
  int64_t accepted = 0;       // guesses that were the chosen token
  double draft_seconds = 0;   // spent drafting
};

// Seconds of one Eval of b = 1..max_b tokens at the session's position
// (kLast for b = 1, as decoding runs it; `batched` otherwise: kAll as a
// verifying step runs it, kLast to leave the logits rows out), each the
// median of `repetitions` rounds over every b; the tokens are taken off
// again. Needs room for max_b tokens without sliding.
StatusOr<std::vector<double>> MeasureVerifyCosts(Session* session, size_t max_b, int repetitions,
                                                 LogitsMode batched = LogitsMode::kAll);

// Tokens per unit cost of drafting k guesses each right with probability
// `acceptance`, verified at relative cost `cost` (c(k + 1) plus drafting).
double TokensPerCost(double acceptance, size_t k, double cost);

class SpeculativeDecoder {
 public:
  // `options` must have passed ValidateSpeculationOptions.
  SpeculativeDecoder(Session* session, const SpeculationOptions& options);
  ~SpeculativeDecoder();

  // Runs sequence.back() after the tokens fed so far and sets *logits to
  // the next position's; `sequence` is every token of the text (the prompt
  // and the tokens chosen), the newest last. Errors are Eval's, with the
  // session holding exactly the tokens fed before.
  Status Feed(const std::vector<int32_t>& sequence, std::vector<float>* logits);
  // Takes guessed positions that were not fed off the cache, so that the
  // session holds exactly the tokens fed. Call before using the session
  // otherwise.
  void Finish();

  // The session's position without speculation: its tokens less the
  // guesses not yet fed.
  size_t position() const { return session_->position() - (queued_.size() - consumed_); }
  const SpeculationStats& stats() const { return stats_; }

 private:
  // Most tokens one batched step may run now without sliding or failing.
  size_t BatchRoom() const;
  // c(b): a step over b positions in single steps, as timed, or (`prior`)
  // as the prior line.
  double Cost(size_t b, bool prior) const;
  // The number of guesses to verify this step (0: a single step).
  size_t ChooseDraftLength(bool prior) const;
  void Observe(size_t drafted, size_t accepted);
  void ScoreShadow(const std::vector<int32_t>& sequence);
  Status SingleStep(int32_t token, std::vector<float>* logits);

  Session* session_;
  SpeculationOptions options_;
  std::unique_ptr<Drafter> drafter_;
  size_t vocab_;
  // The last batched step: its guesses, how many were fed, and its rows.
  std::vector<int32_t> queued_;
  size_t consumed_ = 0;
  std::vector<float> rows_;
  bool scratch_grown_ = false;
  // A cheap drafter's guesses for a single step, scored as tokens come.
  std::vector<int32_t> shadow_;
  size_t shadow_at_ = 0;
  // Acceptance, as decayed counts of right and wrong guesses.
  double right_ = 1.0, wrong_ = 1.0;
  // The cost model: a single step's seconds, c(b) at b - 1 (0: not yet
  // timed), and the drafter's seconds per guess.
  double single_seconds_ = 0.0;
  std::vector<double> relative_;
  double draft_seconds_ = 0.0;
  bool first_step_ = true;
  int64_t single_run_ = 0;  // single steps since the last batched one
  SpeculationStats stats_;
};

}  // namespace pocket
