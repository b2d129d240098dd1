#include "tools/pocket/gguf_model.h"

#include <cstdio>

#include "convert/gguf_import.h"
#include "convert/gguf_reader.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"

namespace pocket::cli {

int ConvertGgufForLoading(const std::string& path, std::string* converted) {
  converted->clear();
  if (!GgufFile::HasMagic(path)) return kExitOk;
  std::fprintf(stderr,
               "pocket: converting the GGUF file '%s' at load; `pocket convert` writes a "
               ".pocket file that loads without copying\n",
               path.c_str());
  auto tmp = ConvertGgufToTemporaryFile(path);
  if (!tmp.ok()) {
    std::fprintf(stderr, "error: %s\n", InFlagTerms(tmp.status()).c_str());
    return kExitError;
  }
  *converted = *tmp;
  return kExitOk;
}

}  // namespace pocket::cli
