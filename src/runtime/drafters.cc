#include "runtime/drafters.h"

#include <algorithm>

namespace pocket {

namespace {

// The start of the most recent occurrence of key[0, n) in text[0, end)
// that is followed by at least one token of text, or -1.
std::ptrdiff_t LastMatch(const std::vector<int32_t>& text, size_t end, const int32_t* key,
                         size_t n) {
  if (end > text.size() || end < n + 1) return -1;
  for (size_t i = end - n; i-- > 0;) {
    if (text[i + n - 1] == key[n - 1] && std::equal(key, key + n - 1, text.begin() + i)) {
      return static_cast<std::ptrdiff_t>(i);
    }
  }
  return -1;
}

// Appends text[from, from + max_tokens) (as far as text goes) to *draft.
void Copy(const std::vector<int32_t>& text, size_t from, size_t max_tokens,
          std::vector<int32_t>* draft) {
  const size_t end = std::min(text.size(), from + max_tokens);
  draft->insert(draft->end(), text.begin() + static_cast<std::ptrdiff_t>(from),
                text.begin() + static_cast<std::ptrdiff_t>(end));
}

}  // namespace

void PromptLookupDrafter::Draft(const std::vector<int32_t>& sequence, size_t max_tokens,
                                std::vector<int32_t>* draft) {
  const size_t len = sequence.size();
  if (max_tokens == 0) return;
  for (size_t n = std::min(kMaxNgram, len); n >= kMinNgram; --n) {
    const int32_t* key = sequence.data() + len - n;
    // The key itself ends the sequence, so it is never its own match.
    std::ptrdiff_t at = LastMatch(sequence, len, key, n);
    if (at >= 0) return Copy(sequence, static_cast<size_t>(at) + n, max_tokens, draft);
    at = LastMatch(lookup_, lookup_.size(), key, n);
    if (at >= 0) return Copy(lookup_, static_cast<size_t>(at) + n, max_tokens, draft);
  }
}

bool ModelDrafter::Sync(const std::vector<int32_t>& sequence) {
  draft_->Truncate(draft_->position() - guessed_);
  guessed_ = 0;
  // A drafter lives for one generation, whose sequence only grows: after
  // the first call only the new tokens run. (A sliding window makes the
  // session's tokens differ from the sequence, so its prefix is no test.)
  Status s;
  if (seen_ > 0 && seen_ < sequence.size()) {
    s = draft_->Eval(
        std::vector<int32_t>(sequence.begin() + static_cast<long>(seen_), sequence.end()),
        LogitsMode::kLast, &logits_);
  } else {
    size_t computed = 0;
    s = draft_->EvalReusingPrefix(sequence, LogitsMode::kLast, &logits_, &computed);
  }
  seen_ = s.ok() ? sequence.size() : 0;
  return s.ok();
}

void ModelDrafter::Draft(const std::vector<int32_t>& sequence, size_t max_tokens,
                         std::vector<int32_t>* draft) {
  if (max_tokens == 0 || sequence.empty() || !Sync(sequence)) return;
  for (size_t i = 0; i < max_tokens; ++i) {
    // Greedy: the draft is one token with certainty, which the target's
    // sampler accepts exactly when it picks it (speculative.h).
    const int32_t next =
        static_cast<int32_t>(std::max_element(logits_.begin(), logits_.end()) - logits_.begin());
    draft->push_back(next);
    if (i + 1 == max_tokens || !draft_->Eval({next}, LogitsMode::kLast, &logits_).ok()) return;
    ++guessed_;
  }
}

Status CheckDraftModel(const Model& target, const Model& draft) {
  const ModelConfig& t = target.config();
  const ModelConfig& d = draft.config();
  if (t.vocab != d.vocab) {
    return Errorf(StatusCode::kInvalidArgument,
                  "the draft model's vocabulary has %d tokens, the model's %d: a draft model "
                  "needs the same tokenizer",
                  d.vocab, t.vocab);
  }
  if (t.bos_id != d.bos_id || t.eos_id != d.eos_id) {
    return Errorf(StatusCode::kInvalidArgument,
                  "the draft model's BOS/EOS ids (%d/%d) differ from the model's (%d/%d): a "
                  "draft model needs the same tokenizer",
                  d.bos_id, d.eos_id, t.bos_id, t.eos_id);
  }
  for (int32_t id = 0; id < t.vocab; ++id) {
    if (target.tokenizer().TokenBytes(id) != draft.tokenizer().TokenBytes(id)) {
      return Errorf(StatusCode::kInvalidArgument,
                    "token %d spells different bytes in the draft model's tokenizer: a draft "
                    "model needs the same tokenizer",
                    id);
    }
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Session>> CreateDraftSession(Session* target, const Model* draft,
                                                      KvType kv_type) {
  POCKET_RETURN_IF_ERROR(CheckDraftModel(target->model(), *draft));
  SessionOptions options = target->options();
  options.kv_type = kv_type;
  if (draft->backend().capabilities().sliding_window) options.kv_policy = KvPolicy::kSlide;
  const size_t budget = target->options().budget_bytes;
  if (budget == 0) return Session::Create(draft, options);

  // The draft session's fixed bytes and KV bytes per token, from the
  // session itself before it has allocated anything.
  options.budget_bytes = 0;
  auto session = Session::Create(draft, options);
  if (!session.ok()) return session.status();
  Session& drafting = **session;
  const size_t fixed = target->fixed_budget_bytes() + drafting.fixed_budget_bytes();
  const BackendSession& t = target->backend_session();
  const BackendSession& d = drafting.backend_session();
  const double per_token = static_cast<double>(t.kv_page_bytes()) / t.kv_page_tokens() +
                           static_cast<double>(d.kv_page_bytes()) / d.kv_page_tokens();
  const size_t tokens =
      fixed < budget ? static_cast<size_t>(static_cast<double>(budget - fixed) / per_token) : 0;
  const size_t pages = (tokens + d.kv_page_tokens() - 1) / d.kv_page_tokens();
  const size_t share = drafting.fixed_budget_bytes() + pages * d.kv_page_bytes();
  const size_t window = options.sink_tokens + options.prefill_chunk;
  if (tokens < window || share >= budget) {
    return Errorf(StatusCode::kBudgetExceeded,
                  "a memory budget of %.1f MiB cannot hold the model and the draft model (%.1f "
                  "MiB before any KV cache) with a window of %zu tokens in both caches; raise "
                  "the budget (budget_bytes)",
                  static_cast<double>(budget) / kMiB, static_cast<double>(fixed) / kMiB, window);
  }
  POCKET_RETURN_IF_ERROR(drafting.SetBudget(share));
  POCKET_RETURN_IF_ERROR(target->SetBudget(budget - share));
  return session;
}

}  // namespace pocket
