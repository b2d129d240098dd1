#include "tools/pocket/model_flags.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "backends/cpu/kernel_target.h"
#include "backends/cpu/thread_pool.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/regex.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/gguf_model.h"
#include "util/file_io.h"

namespace pocket::cli {

std::vector<std::string> ModelValueFlags() {
  return {"-m|--model",  "-t|--threads", "--kv",         "--budget",
          "--kv-policy", "--backend",    "--quant-math", "--cpu-target"};
}

std::vector<std::string> WithModelBoolFlags(std::vector<std::string> flags) {
  flags.push_back("--pin-threads");
  flags.push_back("--huge-pages");
  flags.push_back("--no-matrix-ext");
  return flags;
}

std::vector<std::string> SamplingValueFlags() {
  return {"-n|--n-predict", "--temp", "--top-k",   "--top-p",       "--min-p", "--repeat-penalty",
          "--seed",         "--stop", "--grammar", "--json-schema", "--regex"};
}

const char kModelFlagsHelp[] =
    "  -m, --model FILE      the .pocket model (required; a GGUF file is converted\n"
    "                        at load)\n"
    "  -t, --threads N       compute threads (default 0: one per physical core of\n"
    "                        the fast cores, e.g. a phone's big cores)\n"
    "  --kv f16|bf16|q8|f32  KV cache element type (default bf16 where attention\n"
    "                        multiplies in bf16 (AVX512_BF16, ARM BF16), else\n"
    "                        f16; q8 holds about twice the tokens and multiplies\n"
    "                        in int8 (the fastest decode on CPUs without\n"
    "                        AVX512_BF16), f32\n"
    "                        is for debugging)\n"
    "  --backend cpu|opencl  compute backend (default cpu; opencl in builds with it)\n"
    "  --quant-math int8|f32 q4/q8 weights on the CPU: int8 activations (default,\n"
    "                        fast) or f32 (the reference-accurate path, slower)\n"
    "  --cpu-target NAME     run the CPU kernels for an older target than the best\n"
    "                        (e.g. avx2_vnni, avx2, sse4, neon; 'pocket inspect\n"
    "                        --devices' lists them): what a CPU without the newer\n"
    "                        extensions gets\n"
    "  --no-matrix-ext       multiply prompts (and, on x86, bf16 attention)\n"
    "                        without the CPU's matrix unit (Arm's I8MM, x86's\n"
    "                        AMX) where it has one, by the target's dot\n"
    "                        products: the Linears give the same bits\n"
    "  --pin-threads         pin compute worker i to the i-th core, fast cores\n"
    "                        first (Linux, Android; the caller's thread is not\n"
    "                        pinned)\n"
    "  --huge-pages          copy the weights into transparent huge pages at load\n"
    "                        (cpu backend): faster decode, slower load, no page\n"
    "                        cache sharing (docs/performance.md)\n"
    "  --budget MIB          memory budget in MiB for weights, KV cache, buffers and\n"
    "                        logits (default 300, 0 = unlimited)\n"
    "  --kv-policy error|slide  at the budget: stop with an error (default), or drop\n"
    "                        the oldest tokens after the first 4 and go on\n";

const char kSamplingFlagsHelp[] =
    "  -n, --n-predict N     maximum new tokens (default: the model's max_new_tokens)\n"
    "  --temp T              temperature; 0 = greedy (default: the model's)\n"
    "  --top-k K             keep the K most likely tokens (0 = off)\n"
    "  --top-p P             nucleus sampling (1 = off)\n"
    "  --min-p P             drop tokens below P * p(top) (0 = off)\n"
    "  --repeat-penalty R    penalty on recent tokens (1 = off)\n"
    "  --seed S              sampling seed (default: random)\n"
    "  --stop STR            stop when STR appears (not printed); repeatable\n"
    "  --ignore-eos          do not stop at end-of-sequence tokens\n"
    "  --grammar FILE        constrain the output to a GBNF grammar (llama.cpp's\n"
    "                        format, start rule 'root')\n"
    "  --json-schema FILE    constrain the output to one JSON value the schema\n"
    "                        accepts (docs/structured-output.md: the subset)\n"
    "  --regex RE            constrain the whole output to match RE\n";

int LoadModelFromArgs(Args& args, std::optional<KvType> default_kv, LoadedModel* out) {
  const std::string path = args.Get("-m");
  if (path.empty()) {
    std::fprintf(stderr, "error: -m FILE is required (see --help)\n");
    return kExitUsage;
  }
  int64_t threads = 0;
  int64_t budget = static_cast<int64_t>(SessionOptions().budget_bytes / kMiB);
  if (!args.GetInt("-t", &threads) || !args.GetInt("--budget", &budget)) {
    std::fprintf(stderr, "error: %s\n", args.error().c_str());
    return kExitUsage;
  }
  if (threads < 0 || static_cast<uint64_t>(threads) > cpu::kMaxThreads) {
    std::fprintf(stderr, "error: -t must be in [0, %zu] (0 = one per fast core), got %lld\n",
                 cpu::kMaxThreads, static_cast<long long>(threads));
    return kExitUsage;
  }
  if (budget < 0 || budget > (int64_t{1} << 40)) {
    std::fprintf(stderr, "error: --budget must be in [0, 2^40] MiB (0 = unlimited)\n");
    return kExitUsage;
  }
  const std::string policy = args.Get("--kv-policy", "error");
  if (policy != "error" && policy != "slide") {
    std::fprintf(stderr, "error: --kv-policy must be 'error' or 'slide', got '%s'\n",
                 policy.c_str());
    return kExitUsage;
  }
  out->session = SessionOptions();
  out->session.budget_bytes = static_cast<size_t>(budget) * kMiB;
  out->session.kv_policy = policy == "slide" ? KvPolicy::kSlide : KvPolicy::kError;
  if (args.Has("--kv")) {
    // The flag's spellings are KvTypeName's.
    const std::string kv = args.Get("--kv");
    bool known = false;
    for (KvType type :
         {KvType::kF16, KvType::kBf16, KvType::kQ8, KvType::kF32}) {
      if (kv == KvTypeName(type)) {
        out->session.kv_type = type;
        known = true;
      }
    }
    if (!known) {
      std::fprintf(stderr, "error: --kv '%s' is not supported; use f16, bf16, q8 or f32\n",
                   kv.c_str());
      return kExitUsage;
    }
  }
  const std::string math = args.Get("--quant-math", "int8");
  if (math != "int8" && math != "f32") {
    std::fprintf(stderr, "error: --quant-math must be 'int8' or 'f32', got '%s'\n", math.c_str());
    return kExitUsage;
  }
  if (args.Has("--cpu-target") && !cpu::RestrictKernelTargets(args.Get("--cpu-target"))) {
    std::fprintf(stderr, "error: --cpu-target '%s' is not available here; choose one of: %s\n",
                 args.Get("--cpu-target").c_str(), cpu::KernelTargetList(", ").c_str());
    return kExitUsage;
  }
  if (args.Has("--no-matrix-ext")) cpu::AllowMatrixExtension(false);
  ModelOptions options;
  options.threads = static_cast<int>(threads);
  options.quant_math = math == "f32" ? QuantMath::kF32 : QuantMath::kInt8;
  options.pin_threads = args.Has("--pin-threads");
  options.huge_pages = args.Has("--huge-pages");
  options.backend = args.Get("--backend", "cpu");
  const auto start = std::chrono::steady_clock::now();
  std::string converted;  // a GGUF's temporary .pocket file
  if (const int rc = ConvertGgufForLoading(path, &converted); rc != kExitOk) return rc;
  auto model = Model::Load(converted.empty() ? path : converted, options);
  // Loaded models map their file, which stays readable once unlinked.
  if (!converted.empty()) std::remove(converted.c_str());
  if (!model.ok()) {
    std::fprintf(stderr, "error: %s\n", InFlagTerms(model.status()).c_str());
    return kExitError;
  }
  out->load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  out->model = std::move(model).value();
  if (!args.Has("--kv")) out->session.kv_type = default_kv.value_or(out->model->default_kv_type());
  return kExitOk;
}

int NewSession(const LoadedModel& loaded, std::unique_ptr<Session>* out) {
  auto session = Session::Create(loaded.model.get(), loaded.session);
  if (!session.ok()) {
    std::fprintf(stderr, "error: %s\n", InFlagTerms(session.status()).c_str());
    return kExitError;
  }
  *out = std::move(session).value();
  return kExitOk;
}

std::vector<std::string> AllValues(int argc, char** argv, const std::string& flag) {
  std::vector<std::string> values;
  const std::string with_eq = flag + "=";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a == flag && i + 1 < argc) {
      values.push_back(argv[++i]);
    } else if (a.rfind(with_eq, 0) == 0) {
      values.push_back(a.substr(with_eq.size()));
    }
  }
  return values;
}

int GrammarFromArgs(Args& args, GenerateOptions* out) {
  const bool grammar = args.Has("--grammar"), schema = args.Has("--json-schema"),
             regex = args.Has("--regex");
  if (grammar + schema + regex == 0) return kExitOk;
  if (grammar + schema + regex > 1) {
    std::fprintf(stderr, "error: give at most one of --grammar, --json-schema and --regex\n");
    return kExitUsage;
  }
  StatusOr<std::shared_ptr<const grammar::Grammar>> compiled =
      std::shared_ptr<const grammar::Grammar>();
  if (regex) {
    compiled = grammar::CompileRegex(args.Get("--regex"));
  } else {
    const char* flag = grammar ? "--grammar" : "--json-schema";
    StatusOr<std::string> text = ReadRegularFile(args.Get(flag), flag, kMaxTextFileBytes);
    if (!text.ok()) {
      std::fprintf(stderr, "error: %s\n", InFlagTerms(text.status().message()).c_str());
      return kExitError;
    }
    compiled = grammar ? grammar::CompileGbnf(*text) : grammar::CompileJsonSchema(*text);
  }
  if (!compiled.ok()) {
    std::fprintf(stderr, "error: %s\n", InFlagTerms(compiled.status().message()).c_str());
    return kExitError;
  }
  out->grammar = std::move(compiled).value();
  return kExitOk;
}

int GenerateOptionsFromArgs(Args& args, int argc, char** argv, const ModelConfig& config,
                            GenerateOptions* out) {
  const GenerationDefaults& g = config.generation;
  double temp = g.temperature, top_p = g.top_p, min_p = g.min_p, rp = g.repeat_penalty;
  int64_t top_k = g.top_k, n = g.max_new_tokens;
  uint64_t seed = std::random_device{}() & 0x7fffffff;
  if (!args.GetDouble("--temp", &temp) || !args.GetDouble("--top-p", &top_p) ||
      !args.GetDouble("--min-p", &min_p) || !args.GetDouble("--repeat-penalty", &rp) ||
      !args.GetInt("--top-k", &top_k) || !args.GetInt("-n", &n) ||
      !args.GetUint64("--seed", &seed)) {
    std::fprintf(stderr, "error: %s\n", args.error().c_str());
    return kExitUsage;
  }
  if (n < 0 || n > (1 << 30)) {
    std::fprintf(stderr, "error: -n must be >= 0, got %lld\n", static_cast<long long>(n));
    return kExitUsage;
  }
  *out = GenerateOptions();
  out->sampling.temperature = static_cast<float>(temp);
  out->sampling.top_k = static_cast<int32_t>(top_k);
  out->sampling.top_p = static_cast<float>(top_p);
  out->sampling.min_p = static_cast<float>(min_p);
  out->sampling.repeat_penalty = static_cast<float>(rp);
  out->sampling.seed = seed;
  out->max_new_tokens = static_cast<int32_t>(n);
  out->ignore_eos = args.Has("--ignore-eos");
  out->stop_strings = AllValues(argc, argv, "--stop");
  Status valid = ValidateSamplingParams(out->sampling, config.vocab);
  if (!valid.ok()) {
    std::fprintf(stderr, "error: %s\n", valid.message().c_str());
    return kExitUsage;
  }
  return GrammarFromArgs(args, out);
}

}  // namespace pocket::cli
