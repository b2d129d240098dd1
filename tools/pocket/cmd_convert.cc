// `pocket convert SRC -o OUT.pocket`: Hugging Face directories, GGUF files
// and llama2.c checkpoints to .pocket (docs/convert.md).

#include <chrono>
#include <cstdio>

#include "convert/converter.h"
#include "tools/pocket/args.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/progress.h"
#include "tools/pocket/quant_flags.h"

namespace pocket::cli {
namespace {

constexpr char kConvertUsage[] =
    "usage: pocket convert SRC -o OUT.pocket [--quant q4|q8|f16|bf16|f32] [--group 32|64|128]\n"
    "                      [--embed-quant TYPE] [--layout rows16|row_major] [--tokenizer FILE]\n"
    "\n"
    "SRC is a Hugging Face model directory (config.json, *.safetensors,\n"
    "tokenizer.json or tokenizer.model), a GGUF file, or a llama2.c checkpoint.\n"
    "Norms and biases are always f32. Progress and a summary go to stderr.\n";

const FlagTable& ConvertFlags() {
  static const FlagTable table{
      "options",
      {
          Text("-o|--output", "FILE", "the .pocket file to write (required)"),
          Text("--tokenizer", "FILE", "sentencepiece .model (required for llama2.c checkpoints)"),
      }};
  return table;
}

}  // namespace

int CmdConvert(int argc, char** argv) {
  Args args({&ConvertFlags(), &QuantFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "pocket convert: %s\n%s", args.error().c_str(), kConvertUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kConvertUsage, args.Help().c_str());
    return kExitOk;
  }
  if (args.positional().size() != 1 || !args.Has("-o")) {
    std::fprintf(
        stderr, "pocket convert: %s\n%s",
        args.positional().size() != 1 ? "give exactly one SRC" : "-o OUT.pocket is required",
        kConvertUsage);
    return kExitUsage;
  }
  QuantOptions quant;
  if (!QuantOptionsFromArgs(args, "convert", &quant)) return kExitUsage;
  ConvertOptions options;
  options.quant = quant;
  options.quant.keep_source_types = !args.Has("--quant") && !args.Has("--embed-quant");
  options.tokenizer_path = args.Get("--tokenizer");
  const auto start = std::chrono::steady_clock::now();
  StatusOr<ConvertStats> stats = Status::Ok();
  {
    StderrProgress progress;
    options.progress = progress.Callback();
    stats = ConvertModel(args.positional()[0], args.Get("-o"), options);
  }
  return ReportConversion("convert", stats, args.Get("-o"), start);
}

}  // namespace pocket::cli
