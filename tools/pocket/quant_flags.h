// The quantization flags `pocket convert` and `pocket synth` share (--quant,
// --group, --embed-quant, --layout) and the QuantOptions they give.
#pragma once

#include "convert/converter.h"
#include "tools/pocket/args.h"

namespace pocket::cli {

const FlagTable& QuantFlags();

// The flags' QuantOptions; prints "pocket <command>: <why>" and returns
// false for a type, group or layout the converter does not take.
bool QuantOptionsFromArgs(const Args& args, const char* command, QuantOptions* out);

}  // namespace pocket::cli
