#include "runtime/session.h"

#include <algorithm>

namespace pocket {

Session::Session(const Model* model, const SessionOptions& options)
    : model_(model),
      options_(options),
      kv_(model->plan().kv_row, options.kv_type, options.kv_page_tokens,
          static_cast<size_t>(model->config().context)),
      executor_(&model->plan()) {
  if (options_.prefill_chunk == 0) options_.prefill_chunk = 64;
}

Session::~Session() = default;

Status Session::Eval(const std::vector<int32_t>& tokens, LogitsMode mode,
                     std::vector<float>* logits) {
  const size_t n = tokens.size();
  const size_t pos = position();
  const int32_t vocab = model_->config().vocab;
  if (n == 0) {
    return Errorf(StatusCode::kInvalidArgument, "Eval: no tokens given (pass at least one id)");
  }
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return Errorf(StatusCode::kInvalidArgument,
                    "token id %d at index %zu is outside the vocabulary [0, %d)", tokens[i], i,
                    vocab);
    }
  }
  if (pos + n > context()) {
    return Errorf(StatusCode::kOutOfRange,
                  "prompt of %zu tokens does not fit: context is %zu tokens, %zu already used; "
                  "shorten the prompt or start a new session",
                  n, context(), pos);
  }
  Status reserved = kv_.Reserve(pos + n);
  if (!reserved.ok()) return reserved;  // Reserve undid its own allocations

  const size_t vocab_n = static_cast<size_t>(vocab);
  if (logits != nullptr) logits->resize(mode == LogitsMode::kAll ? n * vocab_n : vocab_n);
  const size_t chunk = options_.prefill_chunk;
  for (size_t start = 0; start < n; start += chunk) {
    const size_t len = std::min(chunk, n - start);
    const bool last_chunk = start + len == n;
    Executor::Output out = Executor::Output::kNone;
    float* dst = nullptr;
    if (logits != nullptr && mode == LogitsMode::kAll) {
      out = Executor::Output::kAllRows;
      dst = logits->data() + start * vocab_n;
    } else if (logits != nullptr && last_chunk) {
      out = Executor::Output::kLastRow;
      dst = logits->data();
    }
    executor_.Run(tokens.data() + start, len, pos + start, out, &kv_, model_->pool(), dst);
  }
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  return Status::Ok();
}

void Session::Reset() {
  tokens_.clear();
  kv_.Clear();
  continuation_ = Continuation();
}

void Session::Truncate(size_t n) {
  if (n >= tokens_.size()) return;
  tokens_.resize(n);
  kv_.Truncate(n);
}

}  // namespace pocket
