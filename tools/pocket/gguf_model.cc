#include "tools/pocket/gguf_model.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>

#include "convert/converter.h"
#include "convert/gguf_reader.h"
#include "tools/pocket/commands.h"

namespace pocket::cli {

int ConvertGgufForLoading(const std::string& path, std::string* converted) {
  converted->clear();
  if (!GgufFile::HasMagic(path)) return kExitOk;
  const char* dir = std::getenv("TMPDIR");
  std::string tmp =
      std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/pocket-gguf-XXXXXX.pocket";
  const int fd = ::mkstemps(tmp.data(), 7);
  if (fd < 0) {
    std::fprintf(stderr, "error: cannot create a temporary file to convert '%s' into: %s\n",
                 path.c_str(), tmp.c_str());
    return kExitError;
  }
  ::close(fd);
  std::fprintf(stderr,
               "pocket: converting the GGUF file '%s' at load; `pocket convert` writes a "
               ".pocket file that loads without copying\n",
               path.c_str());
  ConvertOptions options;
  options.quant.keep_source_types = true;
  auto stats = ConvertModel(path, tmp, options);
  if (!stats.ok()) {
    std::remove(tmp.c_str());
    std::fprintf(stderr, "error: %s\n", stats.status().ToString().c_str());
    return kExitError;
  }
  *converted = tmp;
  return kExitOk;
}

}  // namespace pocket::cli
