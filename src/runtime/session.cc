#include "runtime/session.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace pocket {

namespace {

double MiB(size_t bytes) { return static_cast<double>(bytes) / static_cast<double>(kMiB); }

// With the sign cleared, adding 2^23 carries into bit 31 exactly when the
// exponent is all ones: NaN or infinity.
uint32_t NonFiniteCarry(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return (bits & 0x7fffffffu) + 0x00800000u;
}

// The index of the first NaN or infinity of x[0, n), or n. Integer bit
// tests OR-ed over a block vectorize on every target and hold under any
// floating-point flags, so checking a decoded token's vocabulary row costs
// microseconds; the block is searched value by value only when one failed.
size_t FirstNonFinite(const float* x, size_t n) {
  constexpr size_t kBlock = 1024;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t end = std::min(n, start + kBlock);
    uint32_t carry = 0;
    for (size_t i = start; i < end; ++i) carry |= NonFiniteCarry(x[i]);
    if ((carry & 0x80000000u) == 0) continue;
    for (size_t i = start; i < end; ++i) {
      if (NonFiniteCarry(x[i]) & 0x80000000u) return i;
    }
  }
  return n;
}

}  // namespace

namespace {

BackendSessionOptions BackendOptionsFor(const Model& model, const SessionOptions& options) {
  BackendSessionOptions o;
  o.kv_type = options.kv_type;
  o.kv_page_tokens = options.kv_page_tokens;
  o.max_tokens = static_cast<size_t>(model.config().context);
  return o;
}

BackendOutput OutputFor(LogitsMode mode) {
  return mode == LogitsMode::kAll ? BackendOutput::kAllRows : BackendOutput::kLastRow;
}

}  // namespace

Session::Session(const Model* model, const SessionOptions& options)
    : model_(model),
      options_(options),
      backend_(model->backend().NewSession(BackendOptionsFor(*model, options))) {
  if (options_.prefill_chunk == 0) options_.prefill_chunk = 64;
}

Session::~Session() = default;

StatusOr<std::unique_ptr<Session>> Session::Create(const Model* model,
                                                   const SessionOptions& options) {
  const Backend& backend = model->backend();
  if (!backend.capabilities().Supports(options.kv_type)) {
    std::string types;
    for (KvType t : {KvType::kF32, KvType::kF16, KvType::kBf16, KvType::kQ8}) {
      if (backend.capabilities().Supports(t))
        types += std::string(types.empty() ? "" : ", ") + KvTypeName(t);
    }
    return Errorf(StatusCode::kInvalidArgument,
                  "backend '%s' keeps its KV cache in %s, not %s; choose one of those "
                  "(kv_type=%s)",
                  backend.name(), types.c_str(), KvTypeName(options.kv_type),
                  KvTypeName(backend.default_kv_type()));
  }
  auto session = std::make_unique<Session>(model, options);
  if (options.kv_type == KvType::kBf16 && session->backend_->kv_page_tokens() % 16 != 0) {
    return Errorf(StatusCode::kInvalidArgument,
                  "a bf16 KV cache needs pages of a multiple of 16 tokens, not %zu",
                  session->backend_->kv_page_tokens());
  }
  if (session->max_tokens() == 0) {
    const Fixed f = session->FixedBytes(LogitsMode::kLast, 1);
    const size_t page = session->backend_->kv_page_bytes();
    const size_t slack = session->backend_->kv_commit_slack();
    return Errorf(StatusCode::kBudgetExceeded,
                  "memory budget of %s is too small for this model: weights %.1f MiB + "
                  "model %.1f MiB + scratch %.1f MiB + logits %.1f MiB = %.1f MiB before any KV "
                  "cache, which takes %.2f MiB per page of %zu tokens plus up to %.0f MiB the OS "
                  "commits with its last huge page; raise the budget to at least %.0f MiB (or 0 "
                  "for unlimited)",
                  BudgetText(options.budget_bytes).c_str(), MiB(f.weights), MiB(f.model),
                  MiB(f.scratch), MiB(f.logits), MiB(f.total()), MiB(page),
                  session->backend_->kv_page_tokens(), MiB(slack),
                  static_cast<double>((f.total() + page + slack + kMiB - 1) / kMiB));
  }
  const size_t window = session->options_.sink_tokens + session->options_.prefill_chunk;
  if (options.kv_policy == KvPolicy::kSlide && session->max_tokens() < window) {
    return Errorf(StatusCode::kBudgetExceeded,
                  "memory budget of %s leaves room for %zu tokens, fewer than a sliding "
                  "window needs (%zu sink tokens + a prefill chunk of %zu); raise the budget",
                  BudgetText(options.budget_bytes).c_str(), session->max_tokens(),
                  options.sink_tokens, session->options_.prefill_chunk);
  }
  return session;
}

Session::Fixed Session::FixedBytes(LogitsMode mode, size_t n) const {
  Fixed f;
  f.weights = model_->weight_bytes() + model_->backend().device_weight_bytes();
  f.model = model_->model_bytes();
  // Planned for a full prefill chunk, since a later call may bring one; held
  // buffers never shrink, so whatever the backend holds already counts.
  f.scratch = std::max(backend_->scratch_bytes(),
                       backend_->ScratchBytesFor(options_.prefill_chunk, OutputFor(mode)));
  const size_t vocab = static_cast<size_t>(model_->config().vocab);
  // kLast: the logits row and the sampler's (logit, id) candidate list;
  // kAll: the caller's [n, vocab] rows.
  f.logits = mode == LogitsMode::kAll ? n * vocab * sizeof(float)
                                      : vocab * (sizeof(float) + sizeof(float) + sizeof(int32_t));
  return f;
}

size_t Session::TokenLimit(LogitsMode mode, size_t n) const {
  const size_t context = this->context();
  if (options_.budget_bytes == 0) return context;
  const size_t fixed = FixedBytes(mode, n).total() + backend_->kv_commit_slack();
  if (fixed >= options_.budget_bytes) return 0;
  const size_t pages = (options_.budget_bytes - fixed) / backend_->kv_page_bytes();
  return std::min(context, pages * backend_->kv_page_tokens());
}

MemoryUsage Session::memory() const {
  MemoryUsage m;
  m.weights = model_->weight_bytes() + model_->backend().device_weight_bytes();
  m.weights_resident = model_->ResidentWeightBytes();
  m.model = model_->model_bytes();
  m.kv = backend_->kv_bytes();
  m.scratch = backend_->scratch_bytes();
  m.logits = FixedBytes(LogitsMode::kLast, 1).logits;
  m.budget = options_.budget_bytes;
  m.max_tokens = max_tokens();
  m.tokens = position();
  return m;
}

Status Session::BudgetError(size_t pos, size_t n, LogitsMode mode) const {
  const Fixed f = FixedBytes(mode, n);
  return Errorf(
      StatusCode::kBudgetExceeded,
      "memory budget of %s reached: %zu tokens are held and %zu more do not fit "
      "(weights %.1f MiB + model %.1f MiB + scratch %.1f MiB + logits %.1f MiB + KV "
      "%.1f MiB, %.1f KiB "
      "per token as %s); raise the budget (budget_bytes), store K/V as q8 (kv_type=q8, "
      "about half the bytes per token) or keep a sliding window (kv_policy=slide)",
      BudgetText(options_.budget_bytes).c_str(), pos, n, MiB(f.weights), MiB(f.model),
      MiB(f.scratch), MiB(f.logits), MiB(backend_->KvBytesFor(pos)),
      static_cast<double>(backend_->kv_page_bytes()) / backend_->kv_page_tokens() / 1024.0,
      KvTypeName(options_.kv_type));
}

Status Session::Check(const std::vector<int32_t>& tokens, size_t pos, LogitsMode mode) const {
  const size_t n = tokens.size();
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
  const size_t limit = TokenLimit(mode, n);
  if (options_.kv_policy == KvPolicy::kSlide) {
    // Each chunk must fit beside the sinks once everything else is dropped.
    const size_t chunk = std::min(n, options_.prefill_chunk);
    if (limit < options_.sink_tokens + chunk) return BudgetError(pos, chunk, mode);
    return Status::Ok();
  }
  if (pos + n > context()) {
    return Errorf(StatusCode::kOutOfRange,
                  "prompt of %zu tokens does not fit: context is %zu tokens, %zu already used; "
                  "shorten the prompt or start a new session",
                  n, context(), pos);
  }
  if (pos + n > limit) return BudgetError(pos, n, mode);
  return Status::Ok();
}

Status Session::Slide(size_t n, size_t limit) {
  const size_t pos = position();
  if (pos + n <= limit) return Status::Ok();
  // Drop at least what is needed and at least half of the droppable tokens,
  // so a row is re-encoded at most once before it is dropped itself
  // (docs/memory.md).
  const size_t sinks = std::min(options_.sink_tokens, pos);
  const size_t droppable = pos - sinks;
  const size_t drop = std::min(droppable, std::max(pos + n - limit, droppable / 2));
  POCKET_RETURN_IF_ERROR(backend_->Drop(sinks, drop, pos));
  tokens_.erase(tokens_.begin() + static_cast<std::ptrdiff_t>(sinks),
                tokens_.begin() + static_cast<std::ptrdiff_t>(sinks + drop));
  return Status::Ok();
}

Status Session::Eval(const std::vector<int32_t>& tokens, LogitsMode mode,
                     std::vector<float>* logits) {
  const size_t n = tokens.size();
  POCKET_RETURN_IF_ERROR(Check(tokens, position(), mode));
  const bool slide = options_.kv_policy == KvPolicy::kSlide;
  const size_t limit = TokenLimit(mode, n);
  if (slide && !model_->backend().capabilities().sliding_window) {
    return Errorf(StatusCode::kUnsupported,
                  "backend '%s' has no sliding KV window; use kv_policy=error or backend=cpu",
                  model_->backend().name());
  }
  // Without sliding every page is reserved first, so a failure changes
  // nothing (Reserve undoes its own allocations).
  if (!slide) POCKET_RETURN_IF_ERROR(backend_->Reserve(position() + n));

  const size_t vocab_n = static_cast<size_t>(model_->config().vocab);
  if (logits != nullptr) logits->resize(mode == LogitsMode::kAll ? n * vocab_n : vocab_n);
  const size_t chunk = options_.prefill_chunk;
  for (size_t start = 0; start < n; start += chunk) {
    const size_t len = std::min(chunk, n - start);
    if (slide) {
      POCKET_RETURN_IF_ERROR(Slide(len, limit));
      POCKET_RETURN_IF_ERROR(backend_->Reserve(position() + len));
    }
    const bool last_chunk = start + len == n;
    BackendOutput out = BackendOutput::kNone;
    float* dst = nullptr;
    if (logits != nullptr && mode == LogitsMode::kAll) {
      out = BackendOutput::kAllRows;
      dst = logits->data() + start * vocab_n;
    } else if (logits != nullptr && last_chunk) {
      out = BackendOutput::kLastRow;
      dst = logits->data();
    }
    POCKET_RETURN_IF_ERROR(backend_->Run(tokens.data() + start, len, position(), out, dst));
    tokens_.insert(tokens_.end(), tokens.begin() + static_cast<std::ptrdiff_t>(start),
                   tokens.begin() + static_cast<std::ptrdiff_t>(start + len));
  }
  if (logits != nullptr) POCKET_RETURN_IF_ERROR(CheckFinite(tokens, mode, *logits));
  return Status::Ok();
}

Status Session::CheckFinite(const std::vector<int32_t>& tokens, LogitsMode mode,
                            const std::vector<float>& logits) {
  const size_t bad = FirstNonFinite(logits.data(), logits.size());
  if (bad == logits.size()) return Status::Ok();
  const size_t n = tokens.size();
  const size_t vocab = static_cast<size_t>(model_->config().vocab);
  // The input whose next-token logits these are: a row of kAll's, or
  // kLast's last.
  const size_t input = mode == LogitsMode::kAll ? bad / vocab : n - 1;
  const size_t first = position() - n;
  Truncate(first);
  const float value = logits[bad];
  const char* kind = std::isnan(value) ? "NaN" : (value > 0 ? "+inf" : "-inf");
  return Errorf(StatusCode::kCorruptFile,
                "the model computed a non-finite logit (%s, vocabulary entry %zu) at position %zu "
                "(input index %zu of %zu, token id %d): its weights hold a NaN or infinity, or "
                "its activations overflow; the session keeps its %zu earlier tokens. Reconvert "
                "the model from its source; if that does not help, try quant_math=f32 and "
                "kv_type=f32, and report the model",
                kind, bad % vocab, first + input, input, n, tokens[input], first);
}

Status Session::EvalReusingPrefix(const std::vector<int32_t>& tokens, LogitsMode mode,
                                  std::vector<float>* logits, size_t* computed) {
  const auto mismatch = std::mismatch(tokens_.begin(), tokens_.end(), tokens.begin(), tokens.end());
  size_t common = static_cast<size_t>(mismatch.first - tokens_.begin());
  // The last token always runs: its logits are not cached.
  if (common == tokens.size() && common > 0) --common;
  const std::vector<int32_t> rest(tokens.begin() + static_cast<std::ptrdiff_t>(common),
                                  tokens.end());
  POCKET_RETURN_IF_ERROR(Check(rest, common, mode));
  Truncate(common);
  *computed = rest.size();
  return Eval(rest, mode, logits);
}

void Session::Reset() {
  tokens_.clear();
  backend_->Clear();
  continuation_ = Continuation();
}

void Session::ReleaseScratch() {
  backend_->ReleaseScratch();
  backend_->Truncate(tokens_.size());
}

Status Session::SetBudget(size_t budget_bytes) {
  const size_t before = options_.budget_bytes;
  if (budget_bytes != 0 && (before == 0 || budget_bytes < before)) ReleaseScratch();
  options_.budget_bytes = budget_bytes;
  if (budget_bytes != 0 && (max_tokens() == 0 || max_tokens() < position())) {
    options_.budget_bytes = before;
    return Errorf(StatusCode::kBudgetExceeded,
                  "a budget of %s does not hold the %zu tokens the session holds beside its "
                  "%.1f MiB of weights, scratch and logits",
                  BudgetText(budget_bytes).c_str(), position(), MiB(fixed_budget_bytes()));
  }
  return Status::Ok();
}

void Session::Truncate(size_t n) {
  if (n >= tokens_.size()) return;
  tokens_.resize(n);
  backend_->Truncate(n);
}

}  // namespace pocket
