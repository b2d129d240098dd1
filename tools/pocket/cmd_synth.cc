// `pocket synth --preset NAME -o OUT`: a model with deterministic random
// weights and the exact shapes of a preset (docs/convert.md).

#include <chrono>
#include <cstdio>

#include "convert/synth.h"
#include "tools/pocket/args.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/progress.h"
#include "tools/pocket/quant_flags.h"

namespace pocket::cli {
namespace {

constexpr char kSynthUsage[] =
    "usage: pocket synth --preset pocket-0.3b|tiny-qwen3|tiny-llama -o OUT.pocket\n"
    "                    [--quant TYPE] [--group 32|64|128] [--embed-quant TYPE]\n"
    "                    [--layout rows16|row_major] [--seed N] [--tokenizer FILE]\n";

const FlagTable& SynthFlags() {
  static const FlagTable table{
      "options",
      {
          Text("--preset", "NAME",
               "the shapes to synthesize: pocket-0.3b, tiny-qwen3 or tiny-llama (required)"),
          Text("-o|--output", "FILE", "the .pocket file to write (required)"),
          Uint64("--seed", "N", "random seed (default 0); the same seed gives the same bytes"),
          Text("--tokenizer", "FILE",
               "Qwen3 presets: a tokenizer.json (default: the bundled Qwen3 tokenizer); "
               "tiny-llama: a sentencepiece .model (default: the bundled stories260K "
               "tok512.model)"),
      }};
  return table;
}

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
  Args args({&SynthFlags(), &QuantFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "pocket synth: %s\n%s", args.error().c_str(), kSynthUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kSynthUsage, args.Help().c_str());
    return kExitOk;
  }
  if (!args.positional().empty() || !args.Has("--preset") || !args.Has("-o")) {
    std::fprintf(stderr, "pocket synth: %s\n%s",
                 !args.positional().empty() ? "unexpected positional argument"
                 : !args.Has("--preset")    ? "--preset is required"
                                            : "-o OUT.pocket is required",
                 kSynthUsage);
    return kExitUsage;
  }
  QuantOptions quant;
  if (!QuantOptionsFromArgs(args, "synth", &quant)) return kExitUsage;
  const std::string preset = args.Get("--preset");
  if (!SynthPresetConfig(preset).ok()) {
    std::fprintf(stderr, "pocket synth: %s\n",
                 SynthPresetConfig(preset).status().message().c_str());
    return kExitUsage;
  }
  SynthOptions options;
  options.preset = preset;
  options.seed = args.Uint64("--seed");
  options.tokenizer_path =
      args.Has("--tokenizer") ? args.Get("--tokenizer") : DefaultTokenizer(preset);

  const auto start = std::chrono::steady_clock::now();
  auto model = SynthesizeModel(options);
  if (!model.ok()) {
    std::fprintf(stderr, "pocket synth: %s\n", InFlagTerms(model.status()).c_str());
    return kExitError;
  }
  StatusOr<ConvertStats> stats = Status::Ok();
  {
    StderrProgress progress;
    stats = WritePocketModel(*model, quant, args.Get("-o"), progress.Callback());
  }
  return ReportConversion("synth", stats, args.Get("-o"), start);
}

}  // namespace pocket::cli
