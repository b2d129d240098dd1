#include "convert/source_files.h"

#include <sys/stat.h>

#include "convert/converter.h"
#include "util/json_util.h"
#include "util/sha256.h"

namespace pocket {

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void ProvenanceBuilder::AddBytes(const std::string& name, const void* data, uint64_t size) {
  files_.push_back({name, Sha256Hex(data, size), size});
}

Status ProvenanceBuilder::AddFile(const std::string& name, const std::string& path) {
  SourceFileRecord r;
  r.name = name;
  POCKET_ASSIGN_OR_RETURN(r.sha256, Sha256File(path, &r.bytes));
  files_.push_back(std::move(r));
  return Status::Ok();
}

std::string ProvenanceBuilder::ToJson() const {
  Json j;
  j["source"] = source_;
  j["converter"] = kConverterVersion;
  Json files = Json::array();
  for (const SourceFileRecord& f : files_) {
    files.push_back({{"name", f.name}, {"sha256", f.sha256}, {"bytes", f.bytes}});
  }
  j["files"] = std::move(files);
  return DumpJson(j);
}

}  // namespace pocket
