// A Session is one conversation with a Model: its KV cache, the tokens in
// that cache (its position), the executor's scratch buffers and the chat
// transcript. Use a session from one thread at a time; several sessions may
// share one Model concurrently (model.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "runtime/kv_cache.h"
#include "runtime/model.h"
#include "tokenizer/chat_template.h"
#include "util/status.h"

namespace pocket {

struct SessionOptions {
  cpu::KvType kv_type = cpu::KvType::kF16;
  size_t kv_page_tokens = KvCache::kDefaultPageTokens;
  // Prefill runs the prompt in chunks of this many tokens, which bounds the
  // scratch buffers (they hold one chunk).
  size_t prefill_chunk = 64;
};

enum class LogitsMode {
  kLast,  // [vocab] for the last token only (the output head runs on one row)
  kAll,   // [n, vocab], one row per token (teacher forcing, perplexity)
};

class Session {
 public:
  Session(const Model* model, const SessionOptions& options);
  ~Session();

  // Runs `tokens` at positions [position(), position() + n) and appends them
  // to the cache. Errors (nothing changes when one is returned): empty
  // input, an id outside [0, vocab), a batch that does not fit the context.
  Status Eval(const std::vector<int32_t>& tokens, LogitsMode mode, std::vector<float>* logits);

  // Forgets everything: position 0, pages returned, transcript cleared.
  void Reset();
  // Keeps the first n tokens of the cache (n <= position()).
  void Truncate(size_t n);

  const Model& model() const { return *model_; }
  size_t position() const { return tokens_.size(); }
  size_t context() const { return static_cast<size_t>(model_->config().context); }
  // Every token in the cache, in order.
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const KvCache& kv_cache() const { return kv_; }
  // KV pages plus scratch buffers.
  size_t bytes_held() const { return kv_.bytes() + executor_.scratch_bytes(); }

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
  const Model* model_;
  SessionOptions options_;
  KvCache kv_;
  Executor executor_;
  std::vector<int32_t> tokens_;
  Continuation continuation_;
};

}  // namespace pocket
