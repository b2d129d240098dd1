// `pocket verify FILE`: opens the file (header, table, metadata and tensor
// directory checks) and then checks every section's CRC32C, the tensor data
// included.
#include <cstdio>
#include <memory>
#include <string>

#include "format/reader.h"
#include "tools/pocket/args.h"
#include "tools/pocket/commands.h"

namespace pocket::cli {
namespace {

const char kVerifyUsage[] =
    "usage: pocket verify FILE\n"
    "\n"
    "Validates a .pocket file and checks the CRC32C of every section, the\n"
    "tensor data included. Exit status 0 when all match, 1 otherwise.\n";

}  // namespace

int CmdVerify(int argc, char** argv) {
  Args args({});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "pocket verify: %s\n\n%s", args.error().c_str(), kVerifyUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kVerifyUsage, args.Help().c_str());
    return kExitOk;
  }
  if (args.positional().size() != 1) {
    std::fprintf(stderr, "pocket verify: expected exactly one FILE\n\n%s", kVerifyUsage);
    return kExitUsage;
  }
  const std::string& path = args.positional()[0];
  StatusOr<std::unique_ptr<PocketFile>> file = PocketFile::Open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "pocket verify: %s\n", file.status().ToString().c_str());
    return kExitError;
  }
  Status s = (*file)->VerifyChecksums();
  if (!s.ok()) {
    std::fprintf(stderr, "pocket verify: %s: %s\n", path.c_str(), s.ToString().c_str());
    return kExitError;
  }
  std::printf("OK: %zu sections, all checksums match\n", (*file)->sections().size());
  return kExitOk;
}

}  // namespace pocket::cli
