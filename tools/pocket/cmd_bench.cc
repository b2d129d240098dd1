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
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "grammar/token_mask.h"
#include "runtime/cpu_kernels.h"
#include "runtime/op_times.h"
#include "tools/pocket/bench_spec.h"
#include "tools/pocket/bench_stats.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/model_flags.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/spec_flags.h"
#include "util/json_util.h"

namespace pocket::cli {

namespace {

const char kBenchUsage[] =
    "usage: pocket bench -m FILE [-p 512] [-n 128] [-t THREADS] [-r 5]\n"
    "                    [--quant-math int8|f32] [--roofline] [--op-times] [--json]\n";

const FlagTable& BenchFlags() {
  static const FlagTable table{
      "options",
      {
          Int("-p|--n-prompt", "N", "512", 1, 1 << 24,
              "prefill length in tokens (random valid ids)"),
          Int("-n|--n-gen", "N", "128", 1, 1 << 24, "decoded tokens after the prefill"),
          Int("-r|--repetitions", "N", "5", 1, 1000, "measured runs after one warm-up"),
          Switch("--roofline",
                 "also measure read bandwidth and int8 kernel peak and report decode/prefill "
                 "as fractions of them (adds -r runs, each right after a read probe it is "
                 "compared to)"),
          Switch("--op-times",
                 "also report where the measured runs' time went, per token and kind of op "
                 "(each op reads the clock twice)"),
          Switch("--json", "print one JSON object (keys in docs/cli.md)"),
      }};
  return table;
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

// The greedy pick: the first of the largest logits.
int32_t ArgMax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
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

// The run shape the flags give.
struct Shape {
  int64_t n_prompt = 0, n_gen = 0, reps = 0;
};

// The -r measured runs after a warm-up, and with --op-times where their
// time went.
struct Speeds {
  Stats prefill, decode;               // tok/s
  PhaseTimes prefill_ops, decode_ops;  // with --op-times
};

// With a constraint: -r pairs of an unconstrained run and a constrained one.
struct ConstrainedSpeeds {
  Stats decode;      // constrained tok/s
  Stats time_ratio;  // constrained / unconstrained decode time of each pair
  double mask_median_us = 0, mask_p99_us = 0;
};

// With --roofline: -r rounds of a read probe and a run, and the int8 peaks.
struct Roofline {
  Stats read_gb_s, paired_decode, decode_read_fraction;
  double peak_gemv = 0, peak_gemm = 0;
};

// Memory and CPU time the runs took.
struct Footprint {
  double kv_mib = 0;        // KV cache at the end of the measured runs
  double peak_rss = 0;      // over loading and the measured runs
  double rss_increase = 0;  // peak_rss over the resident set before loading
  double cpu_s_per_inference = -1;
  double std_peak_rss = -1;  // including the standard inference
};

// Everything the report prints.
struct BenchReport {
  std::string model_path;
  Shape shape;
  const LoadedModel* loaded = nullptr;
  Speeds speeds;
  std::optional<ConstrainedSpeeds> constrained;  // with a constraint
  Footprint footprint;
  std::optional<Roofline> roofline;  // with --roofline
  CpuKernelChoice kernels;
  bool op_times = false;
  // Decode reads every weight once per token (the tied output projection
  // reads the whole table), so weight_gb x tok/s is the traffic it sustains.
  double weight_gb = 0;
  double decode_gb_s = 0, decode_gmac_s = 0, prefill_gmac_s = 0;
};

// Random valid token ids; the fixed seed gives every run and every
// invocation the same ones.
std::vector<int32_t> RandomIds(std::mt19937* rng, int32_t vocab, int64_t n) {
  std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = pick(*rng);
  return ids;
}

// The warm-up, then the measured runs.
bool MeasureSpeeds(Session* session, const std::vector<int32_t>& prompt, const Shape& shape,
                   bool op_times, Speeds* out) {
  std::vector<double> prefill_rates, decode_rates;
  for (int64_t run = 0; run <= shape.reps; ++run) {
    const bool timed = op_times && run > 0;  // not the warm-up
    double prefill_s = 0, decode_s = 0;
    if (!TimedRun(session, prompt, shape.n_gen, &prefill_s, &decode_s,
                  timed ? &out->prefill_ops.ops : nullptr,
                  timed ? &out->decode_ops.ops : nullptr)) {
      return false;
    }
    if (run == 0) continue;  // warm-up
    prefill_rates.push_back(shape.n_prompt / prefill_s);
    decode_rates.push_back(shape.n_gen / decode_s);
    if (timed) {
      out->prefill_ops.seconds += prefill_s;
      out->prefill_ops.tokens += shape.n_prompt;
      out->decode_ops.seconds += decode_s;
      out->decode_ops.tokens += shape.n_gen;
    }
  }
  const Plan& plan = session->model().plan();
  out->prefill_ops.linears = LinearTimesByOutput(plan, out->prefill_ops.ops);
  out->decode_ops.linears = LinearTimesByOutput(plan, out->decode_ops.ops);
  out->prefill = Summarize(prefill_rates);
  out->decode = Summarize(decode_rates);
  return true;
}

// Each constrained run right after an unconstrained one, so both see the
// same machine state; the slowdown is the median of the pairs' ratios.
bool MeasureConstrained(Session* session, const std::vector<int32_t>& prompt, const Shape& shape,
                        const std::shared_ptr<const grammar::Grammar>& g, ConstrainedSpeeds* out) {
  std::vector<double> rates, ratios, mask_us;
  for (int64_t run = 0; run < shape.reps; ++run) {
    double prefill_s = 0, free_s = 0, constrained_s = 0;
    if (!TimedRun(session, prompt, shape.n_gen, &prefill_s, &free_s) ||
        !ConstrainedRun(session, prompt, shape.n_gen, g, &constrained_s, &mask_us)) {
      return false;
    }
    rates.push_back(shape.n_gen / constrained_s);
    ratios.push_back(constrained_s / free_s);
  }
  out->decode = Summarize(rates);
  out->time_ratio = Summarize(ratios);
  std::sort(mask_us.begin(), mask_us.end());
  out->mask_median_us = mask_us[mask_us.size() / 2];
  out->mask_p99_us = mask_us[mask_us.size() * 99 / 100];
  return true;
}

// The CPU seconds of the standard inference of the published energy
// figures (1024 random prompt tokens, then 128 greedy tokens, from an empty
// cache) where the context allows it, else -1.
bool MeasureStandardInference(Session* session, std::mt19937* rng, double* cpu_s) {
  constexpr int64_t kStdIn = 1024, kStdOut = 128;
  const ModelConfig& config = session->model().config();
  *cpu_s = -1.0;
  if (config.context < kStdIn + kStdOut) return true;
  const std::vector<int32_t> prompt = RandomIds(rng, config.vocab, kStdIn);
  const double cpu0 = CpuSeconds();
  double prefill_s = 0, decode_s = 0;
  if (!TimedRun(session, prompt, kStdOut, &prefill_s, &decode_s)) return false;
  *cpu_s = CpuSeconds() - cpu0;
  return true;
}

// A shared host's read rate drifts by 2x within a minute, so each decode
// run is paired with a probe taken just before it rather than with one
// probe at another time: -r rounds of probe then run. Runs after the
// peak-RSS readings: the probe's 256 MiB buffer is not the model's.
bool MeasureRoofline(Session* session, const std::vector<int32_t>& prompt, const Shape& shape,
                     double weight_gb, Roofline* out) {
  const Model& model = session->model();
  std::vector<double> reads, rates, fractions;
  for (int64_t run = 0; run < shape.reps; ++run) {
    const double read = MeasureReadBandwidth(model, size_t{256} << 20, 5) / 1e9;
    double prefill_s = 0, decode_s = 0;
    if (!TimedRun(session, prompt, shape.n_gen, &prefill_s, &decode_s)) return false;
    reads.push_back(read);
    rates.push_back(shape.n_gen / decode_s);
    fractions.push_back(read > 0 ? weight_gb * rates.back() / read : 0.0);
  }
  out->read_gb_s = Summarize(reads);
  out->paired_decode = Summarize(rates);
  out->decode_read_fraction = Summarize(fractions);
  out->peak_gemv = MeasureInt8Peak(model, 1, 5) / 1e9;
  out->peak_gemm = MeasureInt8Peak(model, 64, 5) / 1e9;
  return true;
}

double Fraction(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

Json RooflineJson(const BenchReport& r) {
  const Roofline& f = *r.roofline;
  return Json{{"read_gb_s", f.read_gb_s.median},
              {"int8_gemv_peak_gmac_s", f.peak_gemv},
              {"int8_gemm_peak_gmac_s", f.peak_gemm},
              {"decode_bandwidth_fraction", f.decode_read_fraction.median},
              {"decode_compute_fraction", Fraction(r.decode_gmac_s, f.peak_gemv)},
              {"prefill_compute_fraction", Fraction(r.prefill_gmac_s, f.peak_gemm)},
              {"read_gb_s_stats", StatsJson(f.read_gb_s)},
              {"paired_decode_tok_s", StatsJson(f.paired_decode)},
              {"decode_bandwidth_fraction_stats", StatsJson(f.decode_read_fraction)}};
}

// The --json object (keys in docs/cli.md).
Json ReportJson(const BenchReport& r) {
  const Model& model = *r.loaded->model;
  const char* matrix_ext = r.kernels.prefill_matrix_ext;
  Json out = Json::object();
  out["model"] = r.model_path;
  out["threads"] = model.threads();
  out["n_prompt"] = r.shape.n_prompt;
  out["n_gen"] = r.shape.n_gen;
  out["repetitions"] = r.shape.reps;
  out["kv_type"] = KvTypeName(r.loaded->session.kv_type);
  out["huge_pages"] = model.weights_in_huge_pages();
  out["load_ms"] = r.loaded->load_ms;
  out["prefill_tok_s"] = StatsJson(r.speeds.prefill);
  out["decode_tok_s"] = StatsJson(r.speeds.decode);
  if (r.constrained) {
    out["constrained_decode_tok_s"] = StatsJson(r.constrained->decode);
    out["constrained_time_ratio"] = StatsJson(r.constrained->time_ratio);
    out["mask_us"] =
        Json{{"median", r.constrained->mask_median_us}, {"p99", r.constrained->mask_p99_us}};
  }
  out["kv_cache_mib"] = r.footprint.kv_mib;
  out["peak_rss_mib"] = r.footprint.peak_rss;
  out["quant_math"] = model.quant_math() == QuantMath::kF32 ? "f32" : "int8";
  out["attention_math"] = r.kernels.attention_math;
  out["prefill_i8mm"] = matrix_ext != nullptr && std::string(matrix_ext) == "I8MM";
  out["prefill_matrix_ext"] = matrix_ext ? Json(matrix_ext) : Json();
  out["attention_matrix_ext"] =
      r.kernels.attention_matrix_ext ? Json(r.kernels.attention_matrix_ext) : Json();
  out["cpu_target"] = CpuKernelTarget();
  out["rss_increase_mib"] = r.footprint.rss_increase;
  out["cpu_s_per_inference"] = r.footprint.cpu_s_per_inference;
  out["std_inference_peak_rss_mib"] = r.footprint.std_peak_rss;
  out["weight_mb"] = r.weight_gb * 1e3;
  out["decode_weight_gb_s"] = r.decode_gb_s;
  out["decode_gmac_s"] = r.decode_gmac_s;
  out["prefill_gmac_s"] = r.prefill_gmac_s;
  if (r.roofline) out["roofline"] = RooflineJson(r);
  if (r.op_times) {
    out["op_times"] = Json{{"prefill", PhaseJson(r.speeds.prefill_ops)},
                           {"decode", PhaseJson(r.speeds.decode_ops)}};
  }
  return out;
}

void PrintRoofline(const BenchReport& r) {
  const Roofline& f = *r.roofline;
  const long long reps = static_cast<long long>(r.shape.reps);
  std::printf("roofline   read %.2f GB/s median (min %.2f, max %.2f) over %lld probes\n",
              f.read_gb_s.median, f.read_gb_s.min, f.read_gb_s.max, reps);
  std::printf("           int8 kernel peak %.1f GMAC/s (GEMV), %.1f (GEMM)\n", f.peak_gemv,
              f.peak_gemm);
  std::printf(
      "           decode %.0f%% of read bandwidth (median of %lld runs, each against the "
      "probe before it; min %.0f%%, max %.0f%%; %.1f tok/s)\n",
      100 * f.decode_read_fraction.median, reps, 100 * f.decode_read_fraction.min,
      100 * f.decode_read_fraction.max, f.paired_decode.median);
  std::printf("           decode %.0f%% of GEMV peak; prefill %.0f%% of GEMM peak\n",
              100 * Fraction(r.decode_gmac_s, f.peak_gemv),
              100 * Fraction(r.prefill_gmac_s, f.peak_gemm));
}

// The text report.
void PrintReport(const BenchReport& r) {
  const Model& model = *r.loaded->model;
  const Speeds& s = r.speeds;
  const char* matrix_ext = r.kernels.prefill_matrix_ext;
  std::printf("model      %s (%d threads, kv %s%s)\n", r.model_path.c_str(), model.threads(),
              KvTypeName(r.loaded->session.kv_type),
              model.weights_in_huge_pages() ? ", weights in huge pages" : "");
  std::printf("load       %.1f ms\n", r.loaded->load_ms);
  std::printf("prefill    %lld tokens: %.1f tok/s median (min %.1f, max %.1f) over %lld runs\n",
              static_cast<long long>(r.shape.n_prompt), s.prefill.median, s.prefill.min,
              s.prefill.max, static_cast<long long>(r.shape.reps));
  std::printf("decode     %lld tokens: %.1f tok/s median (min %.1f, max %.1f)\n",
              static_cast<long long>(r.shape.n_gen), s.decode.median, s.decode.min, s.decode.max);
  if (r.constrained) {
    const ConstrainedSpeeds& c = *r.constrained;
    std::printf(
        "grammar    decode %.1f tok/s median (min %.1f, max %.1f); %.3fx the time of the "
        "paired free runs (median); mask %.1f us per token median, %.1f us p99\n",
        c.decode.median, c.decode.min, c.decode.max, c.time_ratio.median, c.mask_median_us,
        c.mask_p99_us);
  }
  std::printf("kv cache   %.2f MiB\n", r.footprint.kv_mib);
  std::printf("peak RSS   %.1f MiB (+%.1f MiB over the pre-load baseline)\n", r.footprint.peak_rss,
              r.footprint.rss_increase);
  const bool i8mm = matrix_ext != nullptr && std::string(matrix_ext) == "I8MM";
  std::printf(
      "math       %s activations for q4/q8 weights%s, %s attention products%s, %s kernels\n",
      model.quant_math() == QuantMath::kF32 ? "f32" : "int8",
      i8mm         ? " (prompts by I8MM's SMMLA)"
      : matrix_ext ? " (prompts by AMX tiles)"
                   : "",
      r.kernels.attention_math, r.kernels.attention_matrix_ext ? " (by AMX tiles)" : "",
      CpuKernelTarget());
  std::printf("decode     %.2f GB/s of weights (%.1f MB per token), %.1f GMAC/s\n", r.decode_gb_s,
              r.weight_gb * 1e3, r.decode_gmac_s);
  std::printf("prefill    %.1f GMAC/s\n", r.prefill_gmac_s);
  if (r.op_times) {
    PrintPhase("prefill", s.prefill_ops);
    PrintPhase("decode", s.decode_ops);
  }
  if (r.footprint.cpu_s_per_inference >= 0) {
    std::printf("cpu time   %.2f s per standard inference (1024 in, 128 out; user + sys)\n",
                r.footprint.cpu_s_per_inference);
    std::printf("peak RSS   %.1f MiB including the standard inference\n", r.footprint.std_peak_rss);
  }
  if (r.roofline) PrintRoofline(r);
}

// The KV cache and peak resident set after the measured runs, then the
// standard inference and the peak with it.
bool MeasureFootprint(Session* session, std::mt19937* rng, double rss_before_load, Footprint* f) {
  f->kv_mib = session->memory().kv / (1024.0 * 1024.0);  // before the next run
  // The -p/-n workload's peak, before the longer standard inference grows
  // the KV cache past it (that one is reported on its own).
  f->peak_rss = PeakRssMib();
  f->rss_increase = f->peak_rss - rss_before_load;
  if (!MeasureStandardInference(session, rng, &f->cpu_s_per_inference)) return false;
  f->std_peak_rss = f->cpu_s_per_inference >= 0 ? PeakRssMib() : -1.0;
  return true;
}

// The weight traffic and multiply-accumulate rates of the median speeds.
void SetRates(const Model& model, BenchReport* r) {
  const ModelConfig& config = model.config();
  r->weight_gb = model.weight_bytes() / 1e9;
  r->decode_gb_s = r->weight_gb * r->speeds.decode.median;
  r->decode_gmac_s = LinearMacsPerToken(config, true) * r->speeds.decode.median / 1e9;
  r->prefill_gmac_s = LinearMacsPerToken(config, false) * r->speeds.prefill.median / 1e9;
}

// Measures everything the flags ask for, in the order docs/cli.md gives.
int Measure(const Args& args, const std::shared_ptr<const grammar::Grammar>& constraint,
            double rss_before_load, BenchReport* r) {
  const Model& model = *r->loaded->model;
  std::mt19937 rng(1234);
  const std::vector<int32_t> prompt = RandomIds(&rng, model.config().vocab, r->shape.n_prompt);
  Session session(&model, r->loaded->session);
  if (!MeasureSpeeds(&session, prompt, r->shape, r->op_times, &r->speeds)) return kExitError;
  if (constraint != nullptr &&
      !MeasureConstrained(&session, prompt, r->shape, constraint, &r->constrained.emplace())) {
    return kExitError;
  }
  if (!MeasureFootprint(&session, &rng, rss_before_load, &r->footprint)) return kExitError;
  SetRates(model, r);
  if (args.Has("--roofline") &&
      !MeasureRoofline(&session, prompt, r->shape, r->weight_gb, &r->roofline.emplace())) {
    return kExitError;
  }
  r->kernels = CpuKernelsFor(model, r->loaded->session);
  return kExitOk;
}

}  // namespace

int CmdBench(int argc, char** argv) {
  Args args(
      {&BenchFlags(), &ModelFlags(), &ConstraintFlags(), &SpeculationFlags(), &SpecBenchFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "error: %s\n\n%s", args.error().c_str(), kBenchUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kBenchUsage, args.Help().c_str());
    return kExitOk;
  }
  GenerateOptions constraint;
  if (const int rc = GrammarFromArgs(args, &constraint); rc != kExitOk) return rc;
  BenchReport report;
  report.shape = {args.Int("-p"), args.Int("-n"), args.Int("-r")};
  const double rss_before_load = CurrentRssMib();
  LoadedModel loaded;
  if (const int rc = LoadModelFromArgs(args, std::nullopt, &loaded); rc != kExitOk) return rc;
  const int context = loaded.model->config().context;
  if (report.shape.n_prompt + report.shape.n_gen > context) {
    std::fprintf(stderr, "error: -p %lld + -n %lld exceeds the model's context of %d tokens\n",
                 static_cast<long long>(report.shape.n_prompt),
                 static_cast<long long>(report.shape.n_gen), context);
    return kExitError;
  }
  if (WantsSpecBench(args)) return RunSpecBench(args, loaded);
  report.model_path = args.Get("-m");
  report.loaded = &loaded;
  report.op_times = args.Has("--op-times");
  if (const int rc = Measure(args, constraint.grammar, rss_before_load, &report); rc != kExitOk) {
    return rc;
  }
  if (args.Has("--json")) {
    std::printf("%s\n", DumpJson(ReportJson(report)).c_str());
  } else {
    PrintReport(report);
  }
  return kExitOk;
}

}  // namespace pocket::cli
