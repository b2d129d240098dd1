// `pocket bench`: prefill and decode speed, measured separately the way the
// published mobile numbers are (one warm-up run, then r measured runs,
// median reported with min and max).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tools/pocket/commands.h"
#include "tools/pocket/model_flags.h"
#include "util/json_util.h"

namespace pocket::cli {

namespace {

const char kBenchHelp[] =
    "usage: pocket bench -m FILE [-p 512] [-n 128] [-t THREADS] [-r 5] [--json]\n\n"
    "  -p, --n-prompt N      prefill length in tokens (random valid ids; default 512)\n"
    "  -n, --n-gen N         decoded tokens after the prefill (default 128)\n"
    "  -r, --repetitions N   measured runs after one warm-up (default 5)\n"
    "  --json                print one JSON object (keys in docs/cli.md)\n";

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

Json StatsJson(const Stats& s) {
  return Json{{"median", s.median}, {"min", s.min}, {"max", s.max}};
}

int32_t ArgMax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

int CmdBench(int argc, char** argv) {
  std::vector<std::string> values = ModelValueFlags();
  values.push_back("-p|--n-prompt");
  values.push_back("-n|--n-gen");
  values.push_back("-r|--repetitions");
  Args args(values, {"-h|--help", "--json"});
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
  LoadedModel loaded;
  int rc = LoadModelFromArgs(args, cpu::KvType::kF16, &loaded);
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
  std::vector<double> prefill_rates, decode_rates;
  std::vector<float> logits;
  for (int64_t run = 0; run <= reps; ++run) {
    session.Reset();
    auto t0 = std::chrono::steady_clock::now();
    Status s = session.Eval(prompt, LogitsMode::kLast, &logits);
    const double prefill_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; s.ok() && i < n_gen; ++i) {
      s = session.Eval({ArgMax(logits)}, LogitsMode::kLast, &logits);
    }
    const double decode_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
      return kExitError;
    }
    if (run == 0) continue;  // warm-up
    prefill_rates.push_back(n_prompt / prefill_s);
    decode_rates.push_back(n_gen / decode_s);
  }
  const Stats prefill = Summarize(prefill_rates);
  const Stats decode = Summarize(decode_rates);
  const double rss = PeakRssMib();
  const double kv_mib = session.kv_cache().bytes() / (1024.0 * 1024.0);
  if (args.Has("--json")) {
    Json out = Json::object();
    out["model"] = args.Get("-m");
    out["threads"] = model.threads();
    out["n_prompt"] = n_prompt;
    out["n_gen"] = n_gen;
    out["repetitions"] = reps;
    out["kv_type"] = loaded.session.kv_type == cpu::KvType::kF32 ? "f32" : "f16";
    out["load_ms"] = loaded.load_ms;
    out["prefill_tok_s"] = StatsJson(prefill);
    out["decode_tok_s"] = StatsJson(decode);
    out["kv_cache_mib"] = kv_mib;
    out["peak_rss_mib"] = rss;
    std::printf("%s\n", DumpJson(out).c_str());
  } else {
    std::printf("model      %s (%d threads, kv %s)\n", args.Get("-m").c_str(), model.threads(),
                loaded.session.kv_type == cpu::KvType::kF32 ? "f32" : "f16");
    std::printf("load       %.1f ms\n", loaded.load_ms);
    std::printf("prefill    %lld tokens: %.1f tok/s median (min %.1f, max %.1f) over %lld runs\n",
                static_cast<long long>(n_prompt), prefill.median, prefill.min, prefill.max,
                static_cast<long long>(reps));
    std::printf("decode     %lld tokens: %.1f tok/s median (min %.1f, max %.1f)\n",
                static_cast<long long>(n_gen), decode.median, decode.min, decode.max);
    std::printf("kv cache   %.2f MiB\n", kv_mib);
    std::printf("peak RSS   %.1f MiB\n", rss);
  }
  return kExitOk;
}

}  // namespace pocket::cli
