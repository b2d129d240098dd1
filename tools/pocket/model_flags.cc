#include "tools/pocket/model_flags.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/regex.h"
#include "runtime/cpu_kernels.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/gguf_model.h"
#include "tools/pocket/option_flags.h"
#include "util/file_io.h"

namespace pocket::cli {
namespace {

constexpr KvType kKvTypes[] = {KvType::kF16, KvType::kBf16, KvType::kQ8, KvType::kF32};

std::vector<std::string> KvTypeNames() {
  std::vector<std::string> names;
  for (KvType type : kKvTypes) names.push_back(KvTypeName(type));
  return names;
}

KvType KvTypeNamed(const std::string& name) {
  for (KvType type : kKvTypes) {
    if (name == KvTypeName(type)) return type;
  }
  return KvType::kF16;  // Args accepts only the names above
}

constexpr int64_t kMaxBudgetMib = int64_t{1} << 40;
constexpr int64_t kMaxNewTokens = int64_t{1} << 30;
constexpr int64_t kMaxInt32 = 0x7fffffff;

}  // namespace

const FlagTable& ModelFlags() {
  static const FlagTable table{
      "model options",
      {
          Text("-m|--model", "FILE",
               "the .pocket model (required; a GGUF file is converted at load)"),
          Int("-t|--threads", "N", "0", 0, static_cast<int64_t>(MaxCpuThreads()),
              "compute threads; 0: one per physical core of the fast cores (a phone's big "
              "cores)"),
          Choice("--kv", "", KvTypeNames(),
                 "KV cache element type (default bf16 where attention multiplies in bf16: "
                 "AVX512_BF16, ARM BF16; else f16); q8 holds about twice the tokens and "
                 "multiplies in int8, f32 is for debugging"),
          Text("--backend", "NAME",
               "compute backend: one this build has ('pocket inspect --devices' lists them)")
              .WithFallback("cpu"),
          Choice("--quant-math", "int8", {"int8", "f32"},
                 "q4/q8 weights on the CPU: int8 activations (fast) or f32 (the "
                 "reference-accurate path, slower)"),
          Choice("--cpu-target", "NAME", "", CpuKernelTargets,
                 "hold the CPU kernels to an older target than the best ('pocket inspect "
                 "--devices' lists them): what a CPU without the newer extensions gets; "
                 "process-wide"),
          Switch("--no-matrix-ext",
                 "multiply prompts (and, on x86, bf16 attention) without the CPU's matrix unit "
                 "(Arm's I8MM, x86's AMX), by the target's dot products; process-wide"),
          Switch("--pin-threads",
                 "pin compute worker i to the i-th core, fast cores first (Linux, Android; the "
                 "caller's thread is not pinned)"),
          Switch("--huge-pages",
                 "copy the weights into transparent huge pages at load (cpu backend): faster "
                 "decode, slower load, no page cache sharing"),
          Int("--budget", "MIB", std::to_string(SessionOptions().budget_bytes / kMiB), 0,
              kMaxBudgetMib,
              "memory budget in MiB for weights, KV cache, buffers and logits; 0 = unlimited"),
          Choice("--kv-policy", "error", {"error", "slide"},
                 "at the budget: stop with an error, or drop the oldest tokens after the first "
                 "4 and go on"),
      }};
  return table;
}

const FlagTable& SamplingFlags() {
  static const FlagTable table{
      "sampling options",
      {
          Int("-n|--n-predict", "N", "", 0, kMaxNewTokens,
              "maximum new tokens (default: the model's max_new_tokens)"),
          Number("--temp", "T", "temperature; 0 = greedy (default: the model's)"),
          Int("--top-k", "K", "", 0, kMaxInt32, "keep the K most likely tokens; 0 = off"),
          Number("--top-p", "P", "nucleus sampling; 1 = off"),
          Number("--min-p", "P", "drop tokens below P * p(top); 0 = off"),
          Number("--repeat-penalty", "R", "penalty on recent tokens; 1 = off"),
          Uint64("--seed", "S", "sampling seed (default: random)"),
          Repeatable(Text("--stop", "STR", "stop when STR appears (not printed)")),
          Switch("--ignore-eos", "do not stop at end-of-sequence tokens"),
      }};
  return table;
}

const FlagTable& ConstraintFlags() {
  static const FlagTable table{
      "constraint options (at most one)",
      {
          Text("--grammar", "FILE",
               "constrain the output to a GBNF grammar (llama.cpp's format, start rule 'root')"),
          Text("--json-schema", "FILE",
               "constrain the output to one JSON value the schema accepts "
               "(docs/structured-output.md: the subset)"),
          Text("--regex", "RE", "constrain the whole output to match RE"),
      }};
  return table;
}

int LoadModelFromArgs(const Args& args, std::optional<KvType> default_kv, LoadedModel* out) {
  const std::string path = args.Get("-m");
  if (path.empty()) {
    std::fprintf(stderr, "error: -m FILE is required (see --help)\n");
    return kExitUsage;
  }
  out->session = SessionOptions();
  out->session.budget_bytes = static_cast<size_t>(args.Int("--budget")) * kMiB;
  out->session.kv_policy = args.Get("--kv-policy") == "slide" ? KvPolicy::kSlide : KvPolicy::kError;
  if (args.Has("--kv")) out->session.kv_type = KvTypeNamed(args.Get("--kv"));
  ModelOptions options;
  options.threads = static_cast<int>(args.Int("-t"));
  options.backend = args.Get("--backend");
  options.quant_math = args.Get("--quant-math") == "f32" ? QuantMath::kF32 : QuantMath::kInt8;
  options.cpu_target = args.Get("--cpu-target");
  if (args.Has("--no-matrix-ext")) options.matrix_extension = false;
  options.pin_threads = args.Has("--pin-threads");
  options.huge_pages = args.Has("--huge-pages");
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

int GrammarFromArgs(const Args& args, GenerateOptions* out) {
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

int GenerateOptionsFromArgs(const Args& args, const ModelConfig& config, GenerateOptions* out) {
  const GenerationDefaults& g = config.generation;
  *out = GenerateOptions();
  SamplingParams& s = out->sampling;
  s.temperature = args.Has("--temp") ? static_cast<float>(args.Number("--temp")) : g.temperature;
  s.top_k = args.Has("--top-k") ? static_cast<int32_t>(args.Int("--top-k")) : g.top_k;
  s.top_p = args.Has("--top-p") ? static_cast<float>(args.Number("--top-p")) : g.top_p;
  s.min_p = args.Has("--min-p") ? static_cast<float>(args.Number("--min-p")) : g.min_p;
  s.repeat_penalty = args.Has("--repeat-penalty")
                         ? static_cast<float>(args.Number("--repeat-penalty"))
                         : g.repeat_penalty;
  s.seed = args.Has("--seed") ? args.Uint64("--seed") : std::random_device{}() & 0x7fffffff;
  out->max_new_tokens = args.Has("-n") ? static_cast<int32_t>(args.Int("-n")) : g.max_new_tokens;
  out->ignore_eos = args.Has("--ignore-eos");
  out->stop_strings = args.All("--stop");
  const Status valid = ValidateSamplingParams(out->sampling, config.vocab);
  if (!valid.ok()) {
    std::fprintf(stderr, "error: %s\n", InFlagTerms(valid.message()).c_str());
    return kExitUsage;
  }
  return GrammarFromArgs(args, out);
}

}  // namespace pocket::cli
