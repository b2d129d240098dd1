// `pocket inspect FILE` for a GGUF file: its header, every metadata key
// (long strings and arrays abbreviated) and its tensors per ggml type.
#pragma once

#include <string>

namespace pocket::cli {

// Prints the description (text, or one JSON object with `json`) and
// returns the exit status: 1 with the reason on stderr when the file does
// not parse.
int InspectGguf(const std::string& path, bool json);

}  // namespace pocket::cli
