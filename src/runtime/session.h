// A Session is one conversation with a Model: its state on the model's
// backend (the KV cache and scratch buffers, backends/backend.h), the
// tokens in that cache (its position) and the chat transcript. Use a session from one thread at a
// time, and not from the callbacks of a Generate running on it (the C API refuses such calls with
// kBusy, src/api/c_api.cc); several sessions may share one Model
// concurrently (model.h).
//
// Memory budget (docs/memory.md): everything the session holds -- the
// model's weights (counted in full by each session, device memory
// included), KV pages, scratch and logits -- stays within
// SessionOptions::budget_bytes, counted from what the backend reports. When the next tokens
// would not fit, policy kError fails the call (kBudgetExceeded, the session
// unchanged) and kSlide drops the oldest tokens after the first sink tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "runtime/memory.h"
#include "runtime/model.h"
#include "runtime/op_times.h"
#include "tokenizer/chat_template.h"
#include "util/status.h"

namespace pocket {

enum class KvPolicy {
  kError,  // a call that would exceed the budget fails and changes nothing
  kSlide,  // keep the first sink_tokens and the newest tokens that fit
};

struct SessionOptions {
  KvType kv_type = KvType::kF16;
  // Positions per KV page on backends that page their cache (0: the
  // backend's default, 64 on the CPU).
  size_t kv_page_tokens = 64;
  // Prefill runs the prompt in chunks of this many tokens, which bounds the
  // scratch buffers (they hold one chunk).
  size_t prefill_chunk = 64;
  size_t budget_bytes = 300 * kMiB;  // 0 = unlimited
  KvPolicy kv_policy = KvPolicy::kError;
  size_t sink_tokens = 4;  // kSlide: tokens at the start that are never dropped
};

enum class LogitsMode {
  kLast,  // [vocab] for the last token only (the output head runs on one row)
  kAll,   // [n, vocab], one row per token (teacher forcing, perplexity)
};

class Session {
 public:
  // A session whose budget is checked up front: an error names the budget
  // and what the weights, scratch and logits take when not even one KV page
  // fits beside them.
  static StatusOr<std::unique_ptr<Session>> Create(const Model* model,
                                                   const SessionOptions& options);
  // Unchecked: a budget too small shows up as that error from the first
  // Eval.
  Session(const Model* model, const SessionOptions& options);
  ~Session();

  // Runs `tokens` at positions [position(), position() + n) and appends them
  // to the cache. Errors (nothing changes when one is returned): empty
  // input, an id outside [0, vocab), a batch that does not fit the context
  // (policy kError) or the budget (kError: kBudgetExceeded; kSlide: only a
  // budget too small for a window of sink_tokens plus one prefill chunk).
  // kSlide drops tokens as needed (tokens() shows what is left). Logits
  // that come out NaN or infinite fail the call with kCorruptFile naming the
  // position, after the run: the tokens are taken off again (a slide that
  // made room for them stays).
  Status Eval(const std::vector<int32_t>& tokens, LogitsMode mode, std::vector<float>* logits);
  // Makes the cache hold exactly `tokens`: keeps the longest common prefix
  // of tokens() and `tokens` and runs only the rest (at least the last
  // token, for its logits); *computed is how many ran. kAll logits cover
  // those tokens only. Errors are Eval's and leave the session unchanged,
  // but for non-finite logits, which leave the common prefix.
  Status EvalReusingPrefix(const std::vector<int32_t>& tokens, LogitsMode mode,
                           std::vector<float>* logits, size_t* computed);

  // Forgets everything: position 0, pages returned, transcript cleared.
  void Reset();
  // Forgets the chat transcript and pending tokens but keeps the cache, so
  // the next chat reuses whatever prefix (e.g. the system prompt) matches.
  void NewConversation() { continuation_ = Continuation(); }
  // Keeps the first n tokens of the cache (n <= position()).
  void Truncate(size_t n);
  // Gives back what the session holds beyond its tokens: the scratch
  // buffers (allocated again by the next evaluation) and KV pages past the
  // position. Answers an OS memory warning without losing the conversation.
  void ReleaseScratch();

  // The cached tokens, the tokens pending for the next Generate and the KV
  // rows, with the model file's identity (docs/memory.md has the format).
  // Load validates the file like untrusted input and changes nothing on
  // error; a state made with another model file or KV type is an error.
  Status Save(const std::string& path) const;
  Status Load(const std::string& path);
  // Moves the conversation onto `target`, a Model loaded from the same file
  // (typically with another backend: off a GPU while an app is in the
  // background, and back): the cached tokens' KV rows go from this backend,
  // through one host copy, into a new state on target's, and the tokens,
  // pending tokens and chat transcript stay. Errors leave the session on
  // its model as it was: no target or a model of another file
  // (InvalidArgument), a backend that cannot export or import KV rows
  // (Unsupported), a KV type target's backend does not store, or tokens
  // that do not fit the budget there (BudgetExceeded). From then on the
  // session uses `target`, which must outlive it, and not its old model.
  Status MoveTo(const Model* target);

  // Every evaluation from now on adds its steps' wall times to *times (null
  // to stop; not owned): where a token's time goes, by kind of op. Only
  // backends whose capabilities say op_times time their steps; others add
  // nothing.
  void set_op_times(OpTimes* times) { backend_->set_op_times(times); }

  // Changes the budget (0: unlimited), for a session that gives part of
  // its budget to another (CreateDraftSession) or an app that lowers it
  // under memory pressure. Lowering gives back the scratch buffers and the
  // KV pages past the position first; BudgetExceeded, the budget unchanged,
  // when the tokens held do not fit the new one.
  Status SetBudget(size_t budget_bytes);
  // What the budget holds besides KV pages for single steps and prefill
  // chunks: weights, model, scratch and logits, and the OS's commit slack.
  size_t fixed_budget_bytes() const {
    return FixedBytes(LogitsMode::kLast, 1).total() + backend_->kv_commit_slack();
  }

  // Positions the budget and the context allow for kLast evaluation.
  size_t max_tokens() const { return TokenLimit(LogitsMode::kLast, 1); }
  // What the session holds now, by category.
  MemoryUsage memory() const;
  const SessionOptions& options() const { return options_; }

  const Model& model() const { return *model_; }
  size_t position() const { return tokens_.size(); }
  size_t context() const { return static_cast<size_t>(model_->config().context); }
  // Every token in the cache, in order.
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // The session's state on the model's backend: its KV cache's and scratch
  // buffers' bytes.
  const BackendSession& backend_session() const { return *backend_; }

  // Generate's bookkeeping between calls (generate.h): tokens sampled but
  // not yet run through the model (they are fed before the next input), and
  // the chat so far with the exact text its tokens in the cache spell.
  struct Continuation {
    std::vector<int32_t> pending;
    std::vector<ChatMessage> messages;
    std::string chat_text;
    bool in_chat = false;
  };
  Continuation* continuation() { return &continuation_; }

 private:
  // Unsupported on a backend that cannot export and import KV rows.
  Status CheckStateFilesSupported() const;
  // Budget bytes other than KV pages for evaluating n tokens in `mode`.
  struct Fixed {
    size_t weights = 0, model = 0, scratch = 0, logits = 0;
    size_t total() const { return weights + model + scratch + logits; }
  };
  Fixed FixedBytes(LogitsMode mode, size_t n) const;
  // Positions the context and the budget allow when evaluating n tokens.
  size_t TokenLimit(LogitsMode mode, size_t n) const;
  // Eval's checks for n tokens appended at position pos.
  Status Check(const std::vector<int32_t>& tokens, size_t pos, LogitsMode mode) const;
  Status BudgetError(size_t pos, size_t n, LogitsMode mode) const;
  // After Eval ran `tokens`: kCorruptFile naming the first NaN or infinity
  // of `logits`, with the tokens taken off the cache again.
  Status CheckFinite(const std::vector<int32_t>& tokens, LogitsMode mode,
                     const std::vector<float>& logits);
  // kSlide: drops tokens after the sinks so that n more fit under `limit`.
  Status Slide(size_t n, size_t limit);

  const Model* model_;
  SessionOptions options_;
  std::unique_ptr<BackendSession> backend_;
  std::vector<int32_t> tokens_;
  Continuation continuation_;
};

}  // namespace pocket
