#include "tools/pocket/bench_spec.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/spec_flags.h"
#include "util/file_io.h"

namespace pocket::cli {

namespace {

// The most positions the cost curve measures.
constexpr size_t kCurveMax = 16;
constexpr int kCurveRounds = 7;

// One decode from an empty cache after `prompt`: n_gen tokens, each the
// replayed one or the greedy pick, run through a SpeculativeDecoder (plain
// decoding when `options` names no drafter).
bool DecodeRun(Session* session, const std::vector<int32_t>& prompt,
               const std::vector<int32_t>& replay, int64_t n_gen, const SpeculationOptions& options,
               double* decode_s, SpeculationStats* stats) {
  std::vector<float> logits;
  session->Reset();
  Status s = session->Eval(prompt, LogitsMode::kLast, &logits);
  std::vector<int32_t> sequence = prompt;
  SpeculativeDecoder decoder(session, options);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; s.ok() && i < n_gen; ++i) {
    sequence.push_back(
        replay.empty()
            ? static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin())
            : replay[static_cast<size_t>(i)]);
    s = decoder.Feed(sequence, &logits);
  }
  decoder.Finish();
  *decode_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *stats = decoder.stats();
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", InFlagTerms(s).c_str());
  return s.ok();
}

}  // namespace

const FlagTable& SpecBenchFlags() {
  static const FlagTable table{
      "speculative decoding bench (with --spec or --spec-lookup)",
      {
          Text("--spec-replay", "FILE",
               "the prompt is the file text's first -p tokens and the model produces its next "
               "-n (the verifier keeps a guess where it matches the file)"),
      }};
  return table;
}

int ReplayTokens(const Args& args, const Model& model, int64_t n_prompt, int64_t n_gen,
                 std::vector<int32_t>* prompt, std::vector<int32_t>* replay) {
  StatusOr<std::string> text =
      ReadRegularFile(args.Get("--spec-replay"), "--spec-replay", kMaxTextFileBytes);
  if (!text.ok()) {
    std::fprintf(stderr, "error: %s\n", InFlagTerms(text.status().message()).c_str());
    return kExitError;
  }
  auto ids = model.tokenizer().Encode(*text, false);
  if (!ids.ok()) {
    std::fprintf(stderr, "error: --spec-replay: %s\n", ids.status().message().c_str());
    return kExitError;
  }
  const size_t need = static_cast<size_t>(n_prompt + n_gen);
  if (ids->size() < need) {
    std::fprintf(stderr, "error: --spec-replay holds %zu tokens, fewer than -p + -n = %zu\n",
                 ids->size(), need);
    return kExitError;
  }
  prompt->assign(ids->begin(), ids->begin() + n_prompt);
  replay->assign(ids->begin() + n_prompt, ids->begin() + static_cast<std::ptrdiff_t>(need));
  return kExitOk;
}

bool MeasureSpeculation(Session* session, const std::vector<int32_t>& prompt,
                        const std::vector<int32_t>& replay, int64_t n_gen, int64_t reps,
                        const SpeculationOptions& options, SpecBench* out) {
  std::vector<float> logits;
  session->Reset();
  Status s = session->Eval(prompt, LogitsMode::kLast, &logits);
  for (LogitsMode mode : {LogitsMode::kAll, LogitsMode::kLast}) {
    auto curve = s.ok() ? MeasureVerifyCosts(session, kCurveMax, kCurveRounds, mode)
                        : StatusOr<std::vector<double>>(s);
    if (!curve.ok()) {
      std::fprintf(stderr, "error: %s\n", InFlagTerms(curve.status()).c_str());
      return false;
    }
    for (double seconds : *curve) {
      (mode == LogitsMode::kAll ? out->verify_ms : out->last_row_ms).push_back(1e3 * seconds);
    }
  }
  const SpeculationOptions plain = SpeculationOptions::Off();
  std::vector<double> plain_rates, spec_rates, speedups;
  int64_t tokens = 0, steps = 0;
  for (int64_t run = 0; run <= reps; ++run) {  // the first pair warms up
    double plain_s = 0, spec_s = 0;
    SpeculationStats unused, stats;
    // Each arm goes first in every other pair.
    const bool plain_first = run % 2 == 0;
    if (!DecodeRun(session, prompt, replay, n_gen, plain_first ? plain : options,
                   plain_first ? &plain_s : &spec_s, plain_first ? &unused : &stats) ||
        !DecodeRun(session, prompt, replay, n_gen, plain_first ? options : plain,
                   plain_first ? &spec_s : &plain_s, plain_first ? &stats : &unused)) {
      return false;
    }
    if (run == 0) continue;
    plain_rates.push_back(n_gen / plain_s);
    spec_rates.push_back(n_gen / spec_s);
    speedups.push_back(plain_s / spec_s);
    tokens += n_gen;
    steps += stats.batched_steps + stats.single_steps;
    out->stats.batched_steps += stats.batched_steps;
    out->stats.single_steps += stats.single_steps;
    out->stats.drafted += stats.drafted;
    out->stats.accepted += stats.accepted;
    out->stats.draft_seconds += stats.draft_seconds;
    out->spec_seconds += spec_s;
  }
  out->plain_tok_s = Summarize(plain_rates);
  out->spec_tok_s = Summarize(spec_rates);
  out->speedup = Summarize(speedups);
  out->tokens_per_step = steps > 0 ? static_cast<double>(tokens) / steps : 0.0;
  out->acceptance =
      out->stats.drafted > 0 ? static_cast<double>(out->stats.accepted) / out->stats.drafted : 0.0;
  out->replay = !replay.empty();
  return true;
}

namespace {

Json SpecBenchJson(const SpecBench& b) {
  std::vector<double> relative;
  for (double ms : b.verify_ms) relative.push_back(ms / b.verify_ms[0]);
  std::vector<double> last_row;
  for (double ms : b.last_row_ms) last_row.push_back(ms / b.verify_ms[0]);
  return Json{{"verify_ms", b.verify_ms},
              {"verify_cost", relative},
              {"last_row_cost", last_row},
              {"plain_decode_tok_s", StatsJson(b.plain_tok_s)},
              {"decode_tok_s", StatsJson(b.spec_tok_s)},
              {"speedup", StatsJson(b.speedup)},
              {"tokens_per_step", b.tokens_per_step},
              {"acceptance", b.acceptance},
              {"batched_steps", b.stats.batched_steps},
              {"single_steps", b.stats.single_steps},
              {"drafted", b.stats.drafted},
              {"accepted", b.stats.accepted},
              {"draft_share", b.spec_seconds > 0 ? b.stats.draft_seconds / b.spec_seconds : 0.0},
              {"replay", b.replay}};
}

void PrintSpecBench(const SpecBench& b, const SpeculationOptions& options) {
  std::printf("verify     one step over B positions, in single steps (%.2f ms):", b.verify_ms[0]);
  for (size_t i = 1; i < b.verify_ms.size(); ++i) {
    std::printf(" B=%zu %.2fx%s", i + 1, b.verify_ms[i] / b.verify_ms[0],
                i + 1 < b.verify_ms.size() ? "," : "\n");
  }
  std::printf("           the same steps with the last row's logits only:");
  for (size_t i = 1; i < b.last_row_ms.size(); ++i) {
    std::printf(" B=%zu %.2fx%s", i + 1, b.last_row_ms[i] / b.verify_ms[0],
                i + 1 < b.last_row_ms.size() ? "," : "\n");
  }
  std::printf("drafter    %s, up to %d tokens per step, %s%s\n",
              options.draft_session != nullptr ? "draft model" : "prompt lookup", options.max_draft,
              options.adaptive ? "adaptive" : "every draft verified",
              b.replay ? "; replaying the file's tokens" : "; greedy picks");
  std::printf(
      "decode     plain %.1f tok/s, speculative %.1f tok/s median; speed-up %.3fx median "
      "of the pairs (min %.3f, max %.3f)\n",
      b.plain_tok_s.median, b.spec_tok_s.median, b.speedup.median, b.speedup.min, b.speedup.max);
  std::printf(
      "           %.2f tokens per step, %.0f%% of %lld guesses accepted, %lld batched and "
      "%lld single steps; drafting took %.2f%% of the speculative decode time\n",
      b.tokens_per_step, 100 * b.acceptance, static_cast<long long>(b.stats.drafted),
      static_cast<long long>(b.stats.batched_steps), static_cast<long long>(b.stats.single_steps),
      b.spec_seconds > 0 ? 100 * b.stats.draft_seconds / b.spec_seconds : 0.0);
}

}  // namespace

bool WantsSpecBench(const Args& args) {
  return (args.Has("--spec") && args.Get("--spec") != "off") || args.Has("--spec-lookup");
}

int RunSpecBench(const Args& args, const LoadedModel& loaded) {
  const Model& model = *loaded.model;
  const int64_t n_prompt = args.Int("-p"), n_gen = args.Int("-n");
  std::vector<int32_t> prompt, replay;
  if (args.Has("--spec-replay")) {
    const int rc = ReplayTokens(args, model, n_prompt, n_gen, &prompt, &replay);
    if (rc != kExitOk) return rc;
  } else {
    // Random valid ids, the same on every run and invocation.
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> pick(0, model.config().vocab - 1);
    for (int64_t i = 0; i < n_prompt; ++i) prompt.push_back(pick(rng));
  }
  std::unique_ptr<Session> session;
  if (const int rc = NewSession(loaded, &session); rc != kExitOk) return rc;
  SpeculationOptions options;
  DraftModel draft;
  if (const int rc = SpeculationFromArgs(args, session.get(), &draft, &options); rc != kExitOk) {
    return rc;
  }
  SpecBench bench;
  if (!MeasureSpeculation(session.get(), prompt, replay, n_gen, args.Int("-r"), options, &bench)) {
    return kExitError;
  }
  if (args.Has("--json")) {
    Json out = Json::object();
    out["model"] = args.Get("-m");
    out["threads"] = model.threads();
    out["n_prompt"] = n_prompt;
    out["n_gen"] = n_gen;
    out["repetitions"] = args.Int("-r");
    out["speculation"] = SpecBenchJson(bench);
    std::printf("%s\n", DumpJson(out).c_str());
  } else {
    std::printf("model      %s (%d threads)\n", args.Get("-m").c_str(), model.threads());
    PrintSpecBench(bench, options);
  }
  return kExitOk;
}

}  // namespace pocket::cli
