#include "runtime/speculative.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>

namespace pocket {

namespace {

// c(b) before a batched step of b positions was timed: what a step costs
// where the batched kernels read the weights once for all rows; steps'
// times replace it.
constexpr double kPriorSlope = 0.15;
// After this many single steps in a row, a batched step the prior costs
// would make worth it runs, so that a cost measured on a busy moment does
// not stop speculation for good.
constexpr int64_t kProbeAfter = 256;
// Weight of the newest observation in the running estimates.
constexpr double kRate = 0.2;
// Acceptance counts decay by this much per scored draft, so the estimate
// follows the text (copying, then free writing).
constexpr double kAcceptanceDecay = 0.9;
// A batched step must promise this many more tokens per unit cost than a
// single step; the margin covers the estimates' noise.
constexpr double kMinGain = 1.05;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The cost model learned per loaded model (Model::serial), shared by the
// process's decoders.
struct LearnedCosts {
  double single_seconds = 0.0;
  std::vector<double> relative;  // c(b) at b - 1; 0 where not timed
};
std::mutex costs_mutex;
std::map<uint64_t, LearnedCosts>& CostsByModel() {
  static std::map<uint64_t, LearnedCosts> costs;
  return costs;
}

void Ema(double* estimate, double value) {
  *estimate = *estimate == 0.0 ? value : *estimate + kRate * (value - *estimate);
}

}  // namespace

Status ValidateSpeculationOptions(const SpeculationOptions& options, const Model& model) {
  if (options.max_draft < 0 || options.max_draft > SpeculationOptions::kMaxDraft) {
    return Errorf(StatusCode::kInvalidArgument, "speculation: max_draft %d is outside [0, %d]",
                  options.max_draft, SpeculationOptions::kMaxDraft);
  }
  if (options.draft_session != nullptr) {
    POCKET_RETURN_IF_ERROR(CheckDraftModel(model, options.draft_session->model()));
  }
  return Status::Ok();
}

double TokensPerCost(double acceptance, size_t k, double cost) {
  double tokens = 0, p = 1;
  for (size_t i = 0; i <= k; ++i, p *= acceptance) tokens += p;
  return tokens / cost;
}

StatusOr<std::vector<double>> MeasureVerifyCosts(Session* session, size_t max_b, int repetitions,
                                                 LogitsMode batched) {
  const size_t start = session->position();
  const int32_t vocab = session->model().config().vocab;
  std::vector<int32_t> tokens(max_b);
  for (size_t i = 0; i < max_b; ++i) tokens[i] = static_cast<int32_t>((i * 7919 + 1) % vocab);
  // Each round times every b once, so that a shared machine's drift falls
  // on all of them alike; the first round warms up.
  std::vector<std::vector<double>> runs(max_b);
  std::vector<float> logits;
  for (int round = 0; round <= repetitions; ++round) {
    for (size_t b = 1; b <= max_b; ++b) {
      const std::vector<int32_t> batch(tokens.begin(), tokens.begin() + static_cast<long>(b));
      const auto t0 = std::chrono::steady_clock::now();
      POCKET_RETURN_IF_ERROR(session->Eval(batch, b == 1 ? LogitsMode::kLast : batched, &logits));
      if (round > 0) runs[b - 1].push_back(Seconds(t0));
      if (session->position() != start + b) {
        return Errorf(StatusCode::kBudgetExceeded,
                      "measuring verify costs: no room for %zu tokens without sliding", max_b);
      }
      session->Truncate(start);
    }
  }
  std::vector<double> seconds(max_b);
  for (size_t b = 0; b < max_b; ++b) {
    std::sort(runs[b].begin(), runs[b].end());
    seconds[b] = runs[b][runs[b].size() / 2];
  }
  return seconds;
}

SpeculativeDecoder::SpeculativeDecoder(Session* session, const SpeculationOptions& options)
    : session_(session),
      options_(options),
      vocab_(static_cast<size_t>(session->model().config().vocab)) {
  if (!options.EnabledOn(session->model())) return;
  if (options.draft_session != nullptr) {
    drafter_ = std::make_unique<ModelDrafter>(options.draft_session);
  } else {
    std::vector<int32_t> lookup;
    if (!options.lookup_text.empty()) {
      auto ids = session->model().tokenizer().Encode(options.lookup_text, true);
      if (ids.ok()) lookup = std::move(ids).value();
    }
    drafter_ = std::make_unique<PromptLookupDrafter>(std::move(lookup));
  }
  std::lock_guard<std::mutex> lock(costs_mutex);
  relative_.assign(SpeculationOptions::kMaxDraft + 1, 0.0);
  const auto it = CostsByModel().find(session->model().serial());
  if (it != CostsByModel().end()) {
    single_seconds_ = it->second.single_seconds;
    relative_ = it->second.relative;
  }
}

SpeculativeDecoder::~SpeculativeDecoder() {
  if (drafter_ == nullptr || stats_.batched_steps == 0 || single_seconds_ == 0.0) return;
  std::lock_guard<std::mutex> lock(costs_mutex);
  CostsByModel()[session_->model().serial()] = {single_seconds_, relative_};
}

size_t SpeculativeDecoder::BatchRoom() const {
  const Session& s = *session_;
  const size_t pos = s.position();
  const size_t batch = static_cast<size_t>(options_.max_draft) + 1;
  size_t limit = s.context();
  if (s.options().budget_bytes != 0) {
    // The session's token limit for an Eval of `batch` tokens with all
    // rows' logits (Session::TokenLimit): their rows and the scratch for a
    // whole chunk of all-row logits come out of the KV pages' share.
    const BackendSession& backend = s.backend_session();
    const size_t fixed =
        s.model().weight_bytes() + s.model().backend().device_weight_bytes() +
        s.model().model_bytes() +
        std::max(backend.scratch_bytes(),
                 backend.ScratchBytesFor(s.options().prefill_chunk, BackendOutput::kAllRows)) +
        batch * vocab_ * sizeof(float) + backend.kv_commit_slack();
    if (fixed >= s.options().budget_bytes) return 0;
    const size_t pages = (s.options().budget_bytes - fixed) / backend.kv_page_bytes();
    limit = std::min(limit, pages * backend.kv_page_tokens());
  }
  return limit > pos ? limit - pos : 0;
}

double SpeculativeDecoder::Cost(size_t b, bool prior) const {
  // Timed sizes as measured, others between the nearest timed ones (the
  // prior's line through c(1) = 1 beyond them).
  size_t below = 1, above = 0;
  for (size_t i = 2; !prior && i <= relative_.size(); ++i) {
    if (relative_[i - 1] == 0.0) continue;
    if (i <= b) below = i;
    if (i >= b) {
      above = i;
      break;
    }
  }
  const auto at = [&](size_t i) { return i == 1 ? 1.0 : relative_[i - 1]; };
  if (above == 0) return at(below) + kPriorSlope * static_cast<double>(b - below);
  if (above == below) return at(b);
  return at(below) + (at(above) - at(below)) * static_cast<double>(b - below) /
                         static_cast<double>(above - below);
}

size_t SpeculativeDecoder::ChooseDraftLength(bool prior) const {
  const size_t most =
      std::min(static_cast<size_t>(options_.max_draft), BatchRoom() > 0 ? BatchRoom() - 1 : 0);
  if (!options_.adaptive || most == 0) return most;
  const double acceptance = right_ / (right_ + wrong_);
  const double draft_cost = single_seconds_ > 0 ? draft_seconds_ / single_seconds_ : 0.0;
  size_t best = 0;
  double best_gain = kMinGain;
  for (size_t k = 1; k <= most; ++k) {
    const double cost = Cost(k + 1, prior) + draft_cost * static_cast<double>(k);
    const double gain = TokensPerCost(acceptance, k, cost);
    if (gain > best_gain) {
      best = k;
      best_gain = gain;
    }
  }
  return best;
}

void SpeculativeDecoder::Observe(size_t drafted, size_t accepted) {
  right_ = right_ * kAcceptanceDecay + static_cast<double>(accepted);
  wrong_ = wrong_ * kAcceptanceDecay + (accepted < drafted ? 1.0 : 0.0);
}

void SpeculativeDecoder::ScoreShadow(const std::vector<int32_t>& sequence) {
  if (shadow_.empty()) return;
  const size_t j = sequence.size() - 1 - shadow_at_;
  if (sequence.back() != shadow_[j]) {
    Observe(shadow_.size(), j);
  } else if (j + 1 == shadow_.size()) {
    Observe(shadow_.size(), shadow_.size());
  } else {
    return;
  }
  shadow_.clear();
}

Status SpeculativeDecoder::SingleStep(int32_t token, std::vector<float>* logits) {
  // Without the batched steps' extra scratch, the session's limits are those
  // of decoding without speculation (speculative.h).
  if (scratch_grown_ && session_->options().budget_bytes != 0 && BatchRoom() < 2) {
    session_->ReleaseScratch();
    scratch_grown_ = false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  POCKET_RETURN_IF_ERROR(session_->Eval({token}, LogitsMode::kLast, logits));
  Ema(&single_seconds_, Seconds(t0));
  ++stats_.single_steps;
  return Status::Ok();
}

Status SpeculativeDecoder::Feed(const std::vector<int32_t>& sequence, std::vector<float>* logits) {
  const int32_t token = sequence.back();
  if (drafter_ == nullptr) return SingleStep(token, logits);
  if (consumed_ < queued_.size()) {
    if (token == queued_[consumed_]) {
      ++consumed_;
      ++stats_.accepted;
      const auto row = rows_.begin() + static_cast<std::ptrdiff_t>(consumed_ * vocab_);
      logits->assign(row, row + static_cast<std::ptrdiff_t>(vocab_));
      if (consumed_ == queued_.size()) Observe(queued_.size(), consumed_);
      return Status::Ok();
    }
    Observe(queued_.size(), consumed_);
  }
  Finish();
  ScoreShadow(sequence);

  // The first step is a single one, which times c(1) for the cost model.
  size_t k = first_step_ && options_.adaptive ? 0 : ChooseDraftLength(false);
  if (k == 0 && single_run_ >= kProbeAfter) k = ChooseDraftLength(true);
  first_step_ = false;
  std::vector<int32_t> batch = {token};
  if (k > 0 || (drafter_->cheap() && shadow_.empty())) {
    const auto t0 = std::chrono::steady_clock::now();
    const size_t asked = k > 0 ? k : static_cast<size_t>(options_.max_draft);
    drafter_->Draft(sequence, asked, &batch);
    const double seconds = Seconds(t0);
    stats_.draft_seconds += seconds;
    if (batch.size() > 1) Ema(&draft_seconds_, seconds / static_cast<double>(batch.size() - 1));
    if (k == 0 && batch.size() > 1) {
      shadow_.assign(batch.begin() + 1, batch.end());
      shadow_at_ = sequence.size();
    }
  }
  if (k == 0 || batch.size() == 1) {
    ++single_run_;
    return SingleStep(token, logits);
  }
  single_run_ = 0;
  // The guesses fed from this step's rows skip ScoreShadow: a shadow draft
  // still open is dropped rather than scored against the wrong tokens.
  shadow_.clear();

  const auto t0 = std::chrono::steady_clock::now();
  if (!session_->Eval(batch, LogitsMode::kAll, &rows_).ok()) {
    // Whatever failed, the single step fails the same way or goes on as
    // decoding without speculation would.
    return SingleStep(token, logits);
  }
  const double seconds = Seconds(t0);
  scratch_grown_ = true;
  if (single_seconds_ > 0) Ema(&relative_[batch.size() - 1], seconds / single_seconds_);
  ++stats_.batched_steps;
  stats_.drafted += static_cast<int64_t>(batch.size() - 1);
  queued_.assign(batch.begin() + 1, batch.end());
  consumed_ = 0;
  logits->assign(rows_.begin(), rows_.begin() + static_cast<std::ptrdiff_t>(vocab_));
  return Status::Ok();
}

void SpeculativeDecoder::Finish() {
  const size_t unfed = queued_.size() - consumed_;
  if (unfed > 0) session_->Truncate(session_->position() - unfed);
  queued_.clear();
  consumed_ = 0;
}

}  // namespace pocket
