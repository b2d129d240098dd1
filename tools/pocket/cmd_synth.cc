// `pocket synth --preset NAME -o OUT`: a model with deterministic random
// weights and the exact shapes of a preset (docs/convert.md).

#include <chrono>
#include <cstdio>

#include "convert/synth.h"
#include "tools/pocket/args.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/progress.h"

namespace pocket::cli {
namespace {

constexpr char kUsage[] =
    "usage: pocket synth --preset pocket-0.3b|tiny-qwen3|tiny-llama -o OUT.pocket\n"
    "                    [--quant TYPE] [--group 32|64|128] [--embed-quant TYPE]\n"
    "                    [--layout rows16|row_major] [--seed N] [--tokenizer FILE]\n"
    "\n"
    "  --preset        the shapes to synthesize\n"
    "  -o, --output    the .pocket file to write\n"
    "  --quant         type of the weight matrices (default q4)\n"
    "  --group         q4 group size (default 64)\n"
    "  --embed-quant   type of token_embd (default: same as --quant)\n"
    "  --layout        q4 and q8 byte layout: rows16 (default; matrices whose rows\n"
    "                  16 divides) or row_major (planar)\n"
    "  --seed          random seed (default 0); the same seed gives the same bytes\n"
    "  --tokenizer     Qwen3 presets: a tokenizer.json (default: the bundled Qwen3\n"
    "                  tokenizer); tiny-llama: a sentencepiece .model (default: the\n"
    "                  bundled stories260K tok512.model)\n";

std::string DefaultTokenizer(const std::string& preset) {
  const std::string qwen3 = POCKET_DEFAULT_QWEN3_TOKENIZER;
  if (!SynthPresetUsesSentencePiece(preset)) return qwen3;
  // <tests/data>/qwen3-tokenizer/tokenizer.json -> <tests/data>/stories260K/tok512.model
  const size_t slash = qwen3.find_last_of('/');
  const size_t parent =
      slash == std::string::npos ? std::string::npos : qwen3.find_last_of('/', slash - 1);
  const std::string data = parent == std::string::npos ? "." : qwen3.substr(0, parent);
  return data + "/stories260K/tok512.model";
}

}  // namespace

int CmdSynth(int argc, char** argv) {
  Args args({"--preset", "-o|--output", "--quant", "--group", "--embed-quant", "--layout", "--seed",
             "--tokenizer"},
            {"-h|--help"});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "pocket synth: %s\n%s", args.error().c_str(), kUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  int64_t group = 0;
  uint64_t seed = 0;
  if (!args.positional().empty() || !args.Has("--preset") || !args.Has("-o") ||
      (args.Has("--group") && !args.GetInt("--group", &group)) ||
      (args.Has("--seed") && !args.GetUint64("--seed", &seed))) {
    std::fprintf(stderr, "pocket synth: %s\n%s",
                 !args.positional().empty() ? "unexpected positional argument"
                 : !args.Has("--preset")    ? "--preset is required"
                 : !args.Has("-o")          ? "-o OUT.pocket is required"
                                            : args.error().c_str(),
                 kUsage);
    return kExitUsage;
  }
  auto quant = ParseQuantOptions(args.Get("--quant"), args.Get("--embed-quant"), group);
  if (quant.ok()) {
    const Status layout = ParseLayoutOption(args.Get("--layout"), &quant.value());
    if (!layout.ok()) quant = layout;
  }
  if (!quant.ok()) {
    std::fprintf(stderr, "pocket synth: %s\n", InFlagTerms(quant.status().message()).c_str());
    return kExitUsage;
  }
  const std::string preset = args.Get("--preset");
  if (!SynthPresetConfig(preset).ok()) {
    std::fprintf(stderr, "pocket synth: %s\n",
                 SynthPresetConfig(preset).status().message().c_str());
    return kExitUsage;
  }
  SynthOptions options;
  options.preset = preset;
  options.seed = seed;
  options.tokenizer_path = args.Get("--tokenizer", DefaultTokenizer(preset));

  const auto start = std::chrono::steady_clock::now();
  auto model = SynthesizeModel(options);
  if (!model.ok()) {
    std::fprintf(stderr, "pocket synth: %s\n", InFlagTerms(model.status()).c_str());
    return kExitError;
  }
  StatusOr<ConvertStats> stats = Status::Ok();
  {
    StderrProgress progress;
    stats = WritePocketModel(*model, *quant, args.Get("-o"), progress.Callback());
  }
  return ReportConversion("synth", stats, args.Get("-o"), start);
}

}  // namespace pocket::cli
