// Drafters for speculative decoding (speculative.h): each proposes tokens
// likely to follow a sequence, cheaply. A proposal is only a guess; the
// target model decides every token, so a drafter affects speed, never the
// output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/session.h"

namespace pocket {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Appends to *draft up to max_tokens tokens guessed to follow `sequence`
  // (every token so far, the newest last); none when it has no guess.
  virtual void Draft(const std::vector<int32_t>& sequence, size_t max_tokens,
                     std::vector<int32_t>* draft) = 0;
  // Whether a draft costs next to nothing next to a decoding step, so that
  // one can be made (and scored against what the model then produces) even
  // on steps that do not verify it.
  virtual bool cheap() const = 0;
};

// Prompt lookup: the tokens that followed the most recent earlier
// occurrence of the sequence's last n tokens (n from max_ngram down to
// min_ngram, the longest match first), searched in the sequence itself
// (prompt and output) and then in an app-supplied lookup text (a document
// the answer quotes, a JSON skeleton, UI strings).
class PromptLookupDrafter : public Drafter {
 public:
  static constexpr size_t kMinNgram = 2;
  static constexpr size_t kMaxNgram = 4;

  explicit PromptLookupDrafter(std::vector<int32_t> lookup) : lookup_(std::move(lookup)) {}
  void Draft(const std::vector<int32_t>& sequence, size_t max_tokens,
             std::vector<int32_t>* draft) override;
  bool cheap() const override { return true; }

 private:
  std::vector<int32_t> lookup_;
};

// A draft model: a smaller model with the same tokenizer, run greedily on
// its own session, which it keeps in step with the sequence: only the
// tokens it has not seen are run, also once its window has slid. A draft
// model that fails (its budget, its context) proposes nothing.
class ModelDrafter : public Drafter {
 public:
  explicit ModelDrafter(Session* draft) : draft_(draft) {}
  void Draft(const std::vector<int32_t>& sequence, size_t max_tokens,
             std::vector<int32_t>* draft) override;
  bool cheap() const override { return false; }

 private:
  // Runs what the draft session has not seen of `sequence`, after taking
  // its guesses off; false when the session failed.
  bool Sync(const std::vector<int32_t>& sequence);

  Session* draft_;
  std::vector<float> logits_;
  size_t seen_ = 0;     // tokens of the sequence the session has run
  size_t guessed_ = 0;  // guesses run after them
};

// Ok when `draft` can draft for `target`: the same vocabulary, token for
// token, and the same special tokens; otherwise InvalidArgument saying what
// differs.
Status CheckDraftModel(const Model& target, const Model& draft);

// A session on `draft` that drafts for `target` inside target's budget, so
// that the two models and their caches together stay within it. The bytes
// left after both sessions' fixed bytes (weights, scratch, logits) are
// split so that both caches hold the same number of tokens; target's
// budget is lowered by the draft session's share (Session::SetBudget) and
// stays so. The draft session slides (kSlide) where its backend can, so it
// never fails where target does not: a draft model that forgot the oldest
// tokens guesses worse, never wrongly. With an unlimited budget both stay
// unlimited. Errors change nothing: the tokenizers differ
// (CheckDraftModel), a KV type the draft's backend does not store, or the
// budget cannot hold both models with a sliding window of the draft's
// beside target's tokens (BudgetExceeded).
StatusOr<std::unique_ptr<Session>> CreateDraftSession(Session* target, const Model* draft,
                                                      KvType kv_type);

}  // namespace pocket
