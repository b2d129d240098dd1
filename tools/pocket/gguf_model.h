// Running a GGUF file directly (`pocket run -m model.gguf`, and every
// command that takes -m): the model is converted to a temporary .pocket
// file, which the caller loads and then removes (the mapping keeps it
// readable), so nothing is left behind.
#pragma once

#include <string>

namespace pocket::cli {

// When `path` is a GGUF file: notes on stderr that a converted .pocket file
// loads without this step, converts it (ConvertGgufToTemporaryFile) and
// sets *converted to the temporary file. Otherwise leaves *converted empty.
// Returns an exit status (1 with the reason on stderr).
int ConvertGgufForLoading(const std::string& path, std::string* converted);

}  // namespace pocket::cli
