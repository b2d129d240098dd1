// `pocket bench`: prefill and decode speed, measured separately the way the
// published mobile numbers are (one warm-up run, then r measured runs,
// median reported with min and max); then the CPU time of one standard
// inference (1024 tokens in, 128 out), the memory the model added, and with
// --roofline this machine's read bandwidth and int8 kernel peak, to show how
// close decode and prefill come to them.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernel_target.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/roofline.h"
#include "grammar/token_mask.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/model_flags.h"
#include "util/json_util.h"

namespace pocket::cli {

namespace {

const char kBenchHelp[] =
    "usage: pocket bench -m FILE [-p 512] [-n 128] [-t THREADS] [-r 5]\n"
    "                    [--quant-math int8|f32] [--roofline] [--op-times] [--json]\n\n"
    "  -p, --n-prompt N      prefill length in tokens (random valid ids; default 512)\n"
    "  -n, --n-gen N         decoded tokens after the prefill (default 128)\n"
    "  -r, --repetitions N   measured runs after one warm-up (default 5)\n"
    "  --roofline            also measure read bandwidth and int8 kernel peak and\n"
    "                        report decode/prefill as fractions of them (adds -r\n"
    "                        runs, each right after a read probe it is compared to)\n"
    "  --op-times            also report where the measured runs' time went, per\n"
    "                        token and kind of op (each op reads the clock twice)\n"
    "  --json                print one JSON object (keys in docs/cli.md)\n"
    "  --json-schema FILE, --grammar FILE, --regex RE\n"
    "                        also decode under the constraint (greedy, a fresh\n"
    "                        matcher per run, the grammar restarted when complete),\n"
    "                        each run paired with an unconstrained one: decode\n"
    "                        speed with and without, and the mask time per token\n";

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  s.min = v.front();
  s.max = v.back();
  const size_t m = v.size() / 2;
  s.median = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  return s;
}

// Peak resident set in MiB: VmHWM where /proc exists, else getrusage.
double PeakRssMib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
#ifdef __APPLE__
  return usage.ru_maxrss / (1024.0 * 1024.0);  // bytes on macOS
#else
  return usage.ru_maxrss / 1024.0;  // KiB elsewhere
#endif
}

// Resident set now in MiB (VmRSS; 0 where /proc is missing).
double CurrentRssMib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0.0;
}

// User + system CPU seconds of the whole process (every thread) so far.
double CpuSeconds() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  const auto sec = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return sec(usage.ru_utime) + sec(usage.ru_stime);
}

// Multiply-accumulates of the Linear layers per token (attention excluded):
// the decoder layers, and the output projection when `with_logits`.
double LinearMacsPerToken(const ModelConfig& c, bool with_logits) {
  const double q = static_cast<double>(c.n_heads) * c.head_dim;
  const double kv = static_cast<double>(c.n_kv_heads) * c.head_dim;
  const double layer = c.hidden * (q + 2 * kv) + q * c.hidden + 3.0 * c.hidden * c.ffn;
  return c.n_layers * layer + (with_logits ? static_cast<double>(c.hidden) * c.vocab : 0.0);
}

Json StatsJson(const Stats& s) {
  return Json{{"median", s.median}, {"min", s.min}, {"max", s.max}};
}

// Op times of one phase (prefill or decode) of the measured runs, and the
// phase's whole time and tokens.
struct PhaseTimes {
  OpTimes ops;
  std::vector<LinearTime> linears;  // ops' Linears by output, once the runs are done
  double seconds = 0;
  int64_t tokens = 0;

  bool empty() const { return tokens <= 0 || seconds <= 0; }
  // The kinds of op that ran, the longest first.
  std::vector<size_t> KindsRun() const {
    std::vector<size_t> kinds;
    for (size_t k = 0; k < kOpKindCount; ++k) {
      if (ops.steps[k] != 0) kinds.push_back(k);
    }
    std::sort(kinds.begin(), kinds.end(),
              [&](size_t a, size_t b) { return ops.seconds[a] > ops.seconds[b]; });
    return kinds;
  }
  // The phase's seconds in no step: sampling, the session's bookkeeping,
  // the executor between steps.
  double Outside() const {
    double t = seconds;
    for (double op : ops.seconds) t -= op;
    return t;
  }
  double MsPerToken(double s) const { return 1e3 * s / static_cast<double>(tokens); }
};

// {ms_per_token, share, steps_per_token} of `seconds` over `steps` steps.
Json TimeJson(const PhaseTimes& p, double seconds, uint64_t steps) {
  return Json{{"ms_per_token", p.MsPerToken(seconds)},
              {"share", seconds / p.seconds},
              {"steps_per_token", static_cast<double>(steps) / p.tokens}};
}

// {op: {ms_per_token, share, steps_per_token}} for the ops that ran, the
// linear entry with "by_output": {outputs: the same}, and "outside_steps":
// {ms_per_token, share}.
Json PhaseJson(const PhaseTimes& p) {
  Json out = Json::object();
  if (p.empty()) return out;
  for (size_t k : p.KindsRun()) {
    out[OpKindName(static_cast<OpKind>(k))] = TimeJson(p, p.ops.seconds[k], p.ops.steps[k]);
  }
  if (!p.linears.empty()) {
    Json& by_output = out[OpKindName(OpKind::kLinear)]["by_output"];
    for (const LinearTime& l : p.linears) by_output[l.outputs] = TimeJson(p, l.seconds, l.steps);
  }
  out["outside_steps"] =
      Json{{"ms_per_token", p.MsPerToken(p.Outside())}, {"share", p.Outside() / p.seconds}};
  return out;
}

// Per phase, a line with each op's ms per token and share, the longest
// first, and one with the Linears' by output, in plan order.
void PrintPhase(const char* name, const PhaseTimes& p) {
  if (p.empty()) return;
  std::printf("op times   %-8s", name);
  for (size_t k : p.KindsRun()) {
    std::printf(" %s %.3f ms (%.0f%%),", OpKindName(static_cast<OpKind>(k)),
                p.MsPerToken(p.ops.seconds[k]), 100 * p.ops.seconds[k] / p.seconds);
  }
  std::printf(" outside steps %.3f ms (%.0f%%) per token\n", p.MsPerToken(p.Outside()),
              100 * p.Outside() / p.seconds);
  if (p.linears.empty()) return;
  std::printf("           %-8s linear by output:", name);
  for (size_t i = 0; i < p.linears.size(); ++i) {
    const LinearTime& l = p.linears[i];
    std::printf(" %s %.3f ms (%.0f%%)%s", l.outputs.c_str(), p.MsPerToken(l.seconds),
                100 * l.seconds / p.seconds, i + 1 < p.linears.size() ? "," : "\n");
  }
}

int32_t ArgMax(const std::vector<float>& v) {
  return static_cast<int32_t>(cpu::Argmax(v.data(), v.size()));
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One measured run: from an empty cache, the prompt, then n_gen greedy
// tokens one at a time; prefill and decode timed separately, and their ops
// added to *prefill_ops and *decode_ops unless null. False, with the error
// on stderr, if an evaluation failed.
bool TimedRun(Session* session, const std::vector<int32_t>& prompt, int64_t n_gen,
              double* prefill_s, double* decode_s, OpTimes* prefill_ops = nullptr,
              OpTimes* decode_ops = nullptr) {
  std::vector<float> logits;
  session->Reset();
  session->set_op_times(prefill_ops);
  auto t0 = std::chrono::steady_clock::now();
  Status s = session->Eval(prompt, LogitsMode::kLast, &logits);
  *prefill_s = SecondsSince(t0);
  session->set_op_times(decode_ops);
  t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; s.ok() && i < n_gen; ++i) {
    s = session->Eval({ArgMax(logits)}, LogitsMode::kLast, &logits);
  }
  *decode_s = SecondsSince(t0);
  session->set_op_times(nullptr);
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", InFlagTerms(s).c_str());
  return s.ok();
}

// TimedRun's decode under a grammar: per token the mask applied to the
// logits, the greedy pick and the matcher advanced; the mask and the
// matcher's step are timed into *mask_us.
// The grammar starts again whenever it is complete and the pick ends it, so
// every token is constrained.
bool ConstrainedRun(Session* session, const std::vector<int32_t>& prompt, int64_t n_gen,
                    const std::shared_ptr<const grammar::Grammar>& g, double* decode_s,
                    std::vector<double>* mask_us) {
  const ModelConfig& config = session->model().config();
  std::vector<int32_t> ends = config.stop_token_ids;
  if (config.eos_id >= 0) ends.push_back(config.eos_id);
  grammar::TokenMasker masker(g, session->model().token_trie(), ends);
  std::vector<float> logits;
  session->Reset();
  Status s = session->Eval(prompt, LogitsMode::kLast, &logits);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; s.ok() && i < n_gen; ++i) {
    // The pick is not the mask's cost: unconstrained decoding makes it too.
    auto m0 = std::chrono::steady_clock::now();
    masker.Apply(logits.data(), config.vocab);
    double mask_s = SecondsSince(m0);
    const int32_t id = ArgMax(logits);
    m0 = std::chrono::steady_clock::now();
    if (masker.IsEnd(id)) {
      masker.matcher().Reset();
    } else {
      s = masker.Accept(id);
    }
    mask_s += SecondsSince(m0);
    mask_us->push_back(1e6 * mask_s);
    if (s.ok()) s = session->Eval({id}, LogitsMode::kLast, &logits);
  }
  *decode_s = SecondsSince(t0);
  if (!s.ok()) std::fprintf(stderr, "error: %s\n", InFlagTerms(s).c_str());
  return s.ok();
}

}  // namespace

int CmdBench(int argc, char** argv) {
  std::vector<std::string> values = ModelValueFlags();
  values.push_back("-p|--n-prompt");
  values.push_back("-n|--n-gen");
  values.push_back("-r|--repetitions");
  for (const char* flag : {"--json-schema", "--grammar", "--regex"}) values.push_back(flag);
  Args args(values, WithModelBoolFlags({"-h|--help", "--json", "--roofline", "--op-times"}));
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "error: %s\n\n%s", args.error().c_str(), kBenchHelp);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kBenchHelp, kModelFlagsHelp);
    return kExitOk;
  }
  int64_t n_prompt = 512, n_gen = 128, reps = 5;
  if (!args.GetInt("-p", &n_prompt) || !args.GetInt("-n", &n_gen) || !args.GetInt("-r", &reps)) {
    std::fprintf(stderr, "error: %s\n", args.error().c_str());
    return kExitUsage;
  }
  if (n_prompt < 1 || n_gen < 1 || reps < 1 || n_prompt > (1 << 24) || n_gen > (1 << 24) ||
      reps > 1000) {
    std::fprintf(stderr, "error: -p and -n must be >= 1 and -r in [1, 1000]\n");
    return kExitUsage;
  }
  GenerateOptions constraint;
  if (int grammar_rc = GrammarFromArgs(args, &constraint); grammar_rc != kExitOk) {
    return grammar_rc;
  }
  const std::string math = args.Get("--quant-math", "int8");
  const double rss_before_load = CurrentRssMib();
  LoadedModel loaded;
  int rc = LoadModelFromArgs(args, std::nullopt, &loaded);
  if (rc != kExitOk) return rc;
  const Model& model = *loaded.model;
  const ModelConfig& config = model.config();
  if (n_prompt + n_gen > config.context) {
    std::fprintf(stderr, "error: -p %lld + -n %lld exceeds the model's context of %d tokens\n",
                 static_cast<long long>(n_prompt), static_cast<long long>(n_gen), config.context);
    return kExitError;
  }

  // Fixed seed: every run and every invocation prefills the same ids.
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(0, config.vocab - 1);
  std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
  for (int32_t& id : prompt) id = pick(rng);

  Session session(&model, loaded.session);
  double prefill_s = 0, decode_s = 0;  // of the latest TimedRun
  std::vector<double> prefill_rates, decode_rates;
  const bool op_times = args.Has("--op-times");
  PhaseTimes prefill_ops, decode_ops;  // of the measured runs, with --op-times
  for (int64_t run = 0; run <= reps; ++run) {
    const bool timed = op_times && run > 0;  // not the warm-up
    if (!TimedRun(&session, prompt, n_gen, &prefill_s, &decode_s,
                  timed ? &prefill_ops.ops : nullptr, timed ? &decode_ops.ops : nullptr)) {
      return kExitError;
    }
    if (run == 0) continue;  // warm-up
    prefill_rates.push_back(n_prompt / prefill_s);
    decode_rates.push_back(n_gen / decode_s);
    if (timed) {
      prefill_ops.seconds += prefill_s;
      prefill_ops.tokens += n_prompt;
      decode_ops.seconds += decode_s;
      decode_ops.tokens += n_gen;
    }
  }
  prefill_ops.linears = LinearTimesByOutput(model.plan(), prefill_ops.ops);
  decode_ops.linears = LinearTimesByOutput(model.plan(), decode_ops.ops);
  const Stats prefill = Summarize(prefill_rates);
  const Stats decode = Summarize(decode_rates);
  // With a constraint: each constrained run right after an unconstrained
  // one, so both see the same machine state; the slowdown is the median of
  // the pairs' ratios.
  Stats constrained, slowdown;
  double mask_median_us = 0, mask_p99_us = 0;
  if (constraint.grammar != nullptr) {
    std::vector<double> rates, ratios, mask_us;
    for (int64_t run = 0; run < reps; ++run) {
      double free_s = 0, constrained_s = 0;
      if (!TimedRun(&session, prompt, n_gen, &prefill_s, &free_s) ||
          !ConstrainedRun(&session, prompt, n_gen, constraint.grammar, &constrained_s, &mask_us)) {
        return kExitError;
      }
      rates.push_back(n_gen / constrained_s);
      ratios.push_back(constrained_s / free_s);
    }
    constrained = Summarize(rates);
    slowdown = Summarize(ratios);
    std::sort(mask_us.begin(), mask_us.end());
    mask_median_us = mask_us[mask_us.size() / 2];
    mask_p99_us = mask_us[mask_us.size() * 99 / 100];
  }
  const double kv_mib = session.memory().kv / (1024.0 * 1024.0);  // before the next run
  // The -p/-n workload's peak, before the longer standard inference below
  // grows the KV cache past it (that one is reported on its own).
  const double rss = PeakRssMib();
  const double rss_increase = rss - rss_before_load;

  // One standard inference (1024 in, 128 out) where the context allows it.
  constexpr int64_t kStdIn = 1024, kStdOut = 128;
  double cpu_s_per_inference = -1.0;
  if (config.context >= kStdIn + kStdOut) {
    std::vector<int32_t> std_prompt(kStdIn);
    for (int32_t& id : std_prompt) id = pick(rng);
    const double cpu0 = CpuSeconds();
    // The standard inference of the published energy figures: 1024 prompt
    // tokens, then 128 greedy tokens, from an empty cache.
    if (!TimedRun(&session, std_prompt, kStdOut, &prefill_s, &decode_s)) return kExitError;
    cpu_s_per_inference = CpuSeconds() - cpu0;
  }
  const double std_rss = cpu_s_per_inference >= 0 ? PeakRssMib() : -1.0;

  // Decode reads every weight once per token (the tied output projection
  // reads the whole table), so this is the weight traffic it sustains.
  const double weight_gb = model.weight_bytes() / 1e9;
  const double decode_gb_s = weight_gb * decode.median;
  const double decode_gmac_s = LinearMacsPerToken(config, true) * decode.median / 1e9;
  const double prefill_gmac_s = LinearMacsPerToken(config, false) * prefill.median / 1e9;
  Stats read_gb_s, paired_decode, decode_read_fraction;
  double peak_gemv = 0.0, peak_gemm = 0.0;
  if (args.Has("--roofline")) {
    // After the peak-RSS readings: the probe's 256 MiB buffer is not the
    // model's. A shared host's read rate drifts by 2x within a minute, so
    // each decode run is paired with a probe taken just before it rather
    // than with one probe at another time: -r rounds of probe then run.
    std::vector<double> reads, rates, fractions;
    for (int64_t run = 0; run < reps; ++run) {
      const double read = cpu::MeasureReadBandwidth(model.pool(), size_t{256} << 20, 5) / 1e9;
      if (!TimedRun(&session, prompt, n_gen, &prefill_s, &decode_s)) return kExitError;
      reads.push_back(read);
      rates.push_back(n_gen / decode_s);
      fractions.push_back(read > 0 ? weight_gb * rates.back() / read : 0.0);
    }
    read_gb_s = Summarize(reads);
    paired_decode = Summarize(rates);
    decode_read_fraction = Summarize(fractions);
    peak_gemv = cpu::MeasureInt8Peak(model.pool(), 1, 5) / 1e9;
    peak_gemm = cpu::MeasureInt8Peak(model.pool(), 64, 5) / 1e9;
  }
  const auto fraction = [](double part, double whole) { return whole > 0 ? part / whole : 0.0; };
  // What the CPU attention multiplies with for this session's cache.
  cpu::KvView cache;
  cache.type = loaded.session.kv_type;
  cache.page_tokens = loaded.session.kv_page_tokens;
  const cpu::AttentionMath products = cpu::AttentionMathFor(
      cache, static_cast<size_t>(model.config().head_dim), model.attention_math());
  const char* attention = products == cpu::AttentionMath::kBf16   ? "bf16"
                          : products == cpu::AttentionMath::kInt8 ? "int8"
                                                                  : "f32";
  // The matrix unit that multiplied the prompts' q4/q8 Linears, if any
  // (kernel_target.h: Arm's SMMLA or x86's AMX).
  const char* matrix_ext =
      math == "int8" && cpu::MatrixExtensionChosen() ? cpu::MatrixExtensionName() : nullptr;
  const bool prefill_i8mm = matrix_ext != nullptr && std::string(matrix_ext) == "I8MM";
  // And the one that multiplied attention's products (x86's AMX-BF16).
  cache.head_dim = static_cast<size_t>(model.config().head_dim);
  const char* attention_ext =
      cpu::AttentionByMatrixExtension(cache, cache.head_dim, model.attention_math())
          ? cpu::MatrixExtensionName()
          : nullptr;
  if (args.Has("--json")) {
    Json out = Json::object();
    out["model"] = args.Get("-m");
    out["threads"] = model.threads();
    out["n_prompt"] = n_prompt;
    out["n_gen"] = n_gen;
    out["repetitions"] = reps;
    out["kv_type"] = KvTypeName(loaded.session.kv_type);
    out["huge_pages"] = model.weights_in_huge_pages();
    out["load_ms"] = loaded.load_ms;
    out["prefill_tok_s"] = StatsJson(prefill);
    out["decode_tok_s"] = StatsJson(decode);
    if (constraint.grammar != nullptr) {
      out["constrained_decode_tok_s"] = StatsJson(constrained);
      out["constrained_time_ratio"] = StatsJson(slowdown);
      out["mask_us"] = Json{{"median", mask_median_us}, {"p99", mask_p99_us}};
    }
    out["kv_cache_mib"] = kv_mib;
    out["peak_rss_mib"] = rss;
    out["quant_math"] = math;
    out["attention_math"] = attention;
    out["prefill_i8mm"] = prefill_i8mm;
    out["prefill_matrix_ext"] = matrix_ext ? Json(matrix_ext) : Json();
    out["attention_matrix_ext"] = attention_ext ? Json(attention_ext) : Json();
    out["cpu_target"] = cpu::KernelTargetName();
    out["rss_increase_mib"] = rss_increase;
    out["cpu_s_per_inference"] = cpu_s_per_inference;
    out["std_inference_peak_rss_mib"] = std_rss;
    out["weight_mb"] = weight_gb * 1e3;
    out["decode_weight_gb_s"] = decode_gb_s;
    out["decode_gmac_s"] = decode_gmac_s;
    out["prefill_gmac_s"] = prefill_gmac_s;
    if (args.Has("--roofline")) {
      out["roofline"] = Json{{"read_gb_s", read_gb_s.median},
                             {"int8_gemv_peak_gmac_s", peak_gemv},
                             {"int8_gemm_peak_gmac_s", peak_gemm},
                             {"decode_bandwidth_fraction", decode_read_fraction.median},
                             {"decode_compute_fraction", fraction(decode_gmac_s, peak_gemv)},
                             {"prefill_compute_fraction", fraction(prefill_gmac_s, peak_gemm)},
                             {"read_gb_s_stats", StatsJson(read_gb_s)},
                             {"paired_decode_tok_s", StatsJson(paired_decode)},
                             {"decode_bandwidth_fraction_stats", StatsJson(decode_read_fraction)}};
    }
    if (op_times) {
      out["op_times"] =
          Json{{"prefill", PhaseJson(prefill_ops)}, {"decode", PhaseJson(decode_ops)}};
    }
    std::printf("%s\n", DumpJson(out).c_str());
  } else {
    std::printf("model      %s (%d threads, kv %s%s)\n", args.Get("-m").c_str(), model.threads(),
                KvTypeName(loaded.session.kv_type),
                model.weights_in_huge_pages() ? ", weights in huge pages" : "");
    std::printf("load       %.1f ms\n", loaded.load_ms);
    std::printf("prefill    %lld tokens: %.1f tok/s median (min %.1f, max %.1f) over %lld runs\n",
                static_cast<long long>(n_prompt), prefill.median, prefill.min, prefill.max,
                static_cast<long long>(reps));
    std::printf("decode     %lld tokens: %.1f tok/s median (min %.1f, max %.1f)\n",
                static_cast<long long>(n_gen), decode.median, decode.min, decode.max);
    if (constraint.grammar != nullptr) {
      std::printf(
          "grammar    decode %.1f tok/s median (min %.1f, max %.1f); %.3fx the time of the "
          "paired free runs (median); mask %.1f us per token median, %.1f us p99\n",
          constrained.median, constrained.min, constrained.max, slowdown.median, mask_median_us,
          mask_p99_us);
    }
    std::printf("kv cache   %.2f MiB\n", kv_mib);
    std::printf("peak RSS   %.1f MiB (+%.1f MiB over the pre-load baseline)\n", rss, rss_increase);
    std::printf(
        "math       %s activations for q4/q8 weights%s, %s attention products%s, %s kernels\n",
        math.c_str(),
        prefill_i8mm ? " (prompts by I8MM's SMMLA)"
        : matrix_ext ? " (prompts by AMX tiles)"
                     : "",
        attention, attention_ext ? " (by AMX tiles)" : "", cpu::KernelTargetName());
    std::printf("decode     %.2f GB/s of weights (%.1f MB per token), %.1f GMAC/s\n", decode_gb_s,
                weight_gb * 1e3, decode_gmac_s);
    std::printf("prefill    %.1f GMAC/s\n", prefill_gmac_s);
    if (op_times) {
      PrintPhase("prefill", prefill_ops);
      PrintPhase("decode", decode_ops);
    }
    if (cpu_s_per_inference >= 0) {
      std::printf("cpu time   %.2f s per standard inference (1024 in, 128 out; user + sys)\n",
                  cpu_s_per_inference);
      std::printf("peak RSS   %.1f MiB including the standard inference\n", std_rss);
    }
    if (args.Has("--roofline")) {
      std::printf("roofline   read %.2f GB/s median (min %.2f, max %.2f) over %lld probes\n",
                  read_gb_s.median, read_gb_s.min, read_gb_s.max, static_cast<long long>(reps));
      std::printf("           int8 kernel peak %.1f GMAC/s (GEMV), %.1f (GEMM)\n", peak_gemv,
                  peak_gemm);
      std::printf(
          "           decode %.0f%% of read bandwidth (median of %lld runs, each against the "
          "probe before it; min %.0f%%, max %.0f%%; %.1f tok/s)\n",
          100 * decode_read_fraction.median, static_cast<long long>(reps),
          100 * decode_read_fraction.min, 100 * decode_read_fraction.max, paired_decode.median);
      std::printf("           decode %.0f%% of GEMV peak; prefill %.0f%% of GEMM peak\n",
                  100 * fraction(decode_gmac_s, peak_gemv),
                  100 * fraction(prefill_gmac_s, peak_gemm));
    }
  }
  return kExitOk;
}

}  // namespace pocket::cli
