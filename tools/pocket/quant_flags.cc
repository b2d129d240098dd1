#include "tools/pocket/quant_flags.h"

#include <cstdio>
#include <limits>

#include "tools/pocket/option_flags.h"

namespace pocket::cli {

const FlagTable& QuantFlags() {
  static const FlagTable table{
      "quantization",
      {
          Text("--quant", "TYPE",
               "type of the weight matrices: q4, q8, f16, bf16 or f32 (default q4; convert "
               "keeps a GGUF's F32/F16/BF16/Q8_0/Q4_0/Q4_1 tensors exactly and makes the "
               "others q8)"),
          Int("--group", "N", "", 1, std::numeric_limits<int32_t>::max(),
              "q4 group size along the input dimension: 32, 64 or 128 (default 64)"),
          Text("--embed-quant", "TYPE",
               "type of token_embd and output (default: the same as --quant)"),
          Text("--layout", "LAYOUT",
               "q4 and q8 byte layout: rows16 (default; what the CPU int8 kernels read, for "
               "matrices whose rows 16 divides, docs/format.md) or row_major (planar)"),
      }};
  return table;
}

bool QuantOptionsFromArgs(const Args& args, const char* command, QuantOptions* out) {
  StatusOr<QuantOptions> quant =
      ParseQuantOptions(args.Get("--quant"), args.Get("--embed-quant"), args.Int("--group"));
  if (quant.ok()) {
    const Status layout = ParseLayoutOption(args.Get("--layout"), &quant.value());
    if (!layout.ok()) quant = layout;
  }
  if (!quant.ok()) {
    std::fprintf(stderr, "pocket %s: %s\n", command, InFlagTerms(quant.status().message()).c_str());
    return false;
  }
  *out = *quant;
  return true;
}

}  // namespace pocket::cli
