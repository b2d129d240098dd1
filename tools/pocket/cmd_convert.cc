// `pocket convert SRC -o OUT.pocket`: Hugging Face directories, GGUF files
// and llama2.c checkpoints to .pocket (docs/convert.md).

#include <chrono>
#include <cstdio>

#include "convert/converter.h"
#include "tools/pocket/args.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"
#include "tools/pocket/progress.h"

namespace pocket::cli {
namespace {

constexpr char kUsage[] =
    "usage: pocket convert SRC -o OUT.pocket [--quant q4|q8|f16|bf16|f32] [--group 32|64|128]\n"
    "                      [--embed-quant TYPE] [--layout rows16|row_major] [--tokenizer FILE]\n"
    "\n"
    "  SRC             a Hugging Face model directory (config.json, *.safetensors,\n"
    "                  tokenizer.json or tokenizer.model), a GGUF file, or a\n"
    "                  llama2.c checkpoint\n"
    "  -o, --output    the .pocket file to write\n"
    "  --quant         type of the weight matrices (default q4; a GGUF's tensors\n"
    "                  keep their F32/F16/BF16/Q8_0/Q4_0/Q4_1 types exactly and\n"
    "                  the others become q8)\n"
    "  --group         q4 group size along the input dimension (default 64)\n"
    "  --embed-quant   type of token_embd/output (default: same as --quant)\n"
    "  --layout        q4 and q8 byte layout: rows16 (default; what the CPU int8\n"
    "                  kernels read, for matrices whose rows 16 divides,\n"
    "                  docs/format.md) or row_major (planar)\n"
    "  --tokenizer     sentencepiece .model (required for llama2.c checkpoints)\n"
    "\n"
    "Norms and biases are always f32. Progress and a summary go to stderr.\n";

}  // namespace

int CmdConvert(int argc, char** argv) {
  Args args({"-o|--output", "--quant", "--group", "--embed-quant", "--layout", "--tokenizer"},
            {"-h|--help"});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "pocket convert: %s\n%s", args.error().c_str(), kUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  int64_t group = 0;
  if (args.positional().size() != 1 || !args.Has("-o") ||
      (args.Has("--group") && !args.GetInt("--group", &group))) {
    std::fprintf(stderr, "pocket convert: %s\n%s",
                 args.positional().size() != 1 ? "give exactly one SRC"
                 : !args.Has("-o")             ? "-o OUT.pocket is required"
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
    std::fprintf(stderr, "pocket convert: %s\n", InFlagTerms(quant.status().message()).c_str());
    return kExitUsage;
  }
  ConvertOptions options;
  options.quant = *quant;
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
