// Finding the files of a model source and recording the digest of
// every file the converter reads, for the config's provenance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/file_io.h"  // ReadRegularFile, for the readers of source files
#include "util/status.h"

namespace pocket {

struct SourceFileRecord {
  std::string name;  // path relative to the source (or as given)
  std::string sha256;
  uint64_t bytes = 0;
};

// Whether anything (of any type) is at `path`: an optional source file that
// is there is then read with ReadRegularFile or MappedFile::Open, which
// refuse a FIFO, device or directory saying what it is, rather than taking
// it for absent.
bool PathExists(const std::string& path);

// Collects provenance: {"source", "converter", "files": [{name, sha256, bytes}]}.
class ProvenanceBuilder {
 public:
  explicit ProvenanceBuilder(std::string source) : source_(std::move(source)) {}
  void AddBytes(const std::string& name, const void* data, uint64_t size);
  Status AddFile(const std::string& name, const std::string& path);
  std::string ToJson() const;

 private:
  std::string source_;
  std::vector<SourceFileRecord> files_;
};

}  // namespace pocket
