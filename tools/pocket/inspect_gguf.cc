#include "tools/pocket/inspect_gguf.h"

#include <cstdio>
#include <map>
#include <memory>

#include "convert/gguf_reader.h"
#include "tools/pocket/commands.h"
#include "util/json_util.h"

namespace pocket::cli {
namespace {

// Strings longer than this (chat templates) and arrays longer than
// kArrayShown (vocabularies) are abbreviated in the description.
constexpr size_t kStringShown = 120;
constexpr uint64_t kArrayShown = 4;

Json StringJson(std::string_view s) {
  if (s.size() <= kStringShown) return Json(std::string(s));
  return Json(std::string(s.substr(0, kStringShown)) + StringPrintf("... (%zu bytes)", s.size()));
}

Json ScalarJson(const GgufValue& v) {
  switch (v.type) {
    case GgufType::kString:
      return StringJson(v.str);
    case GgufType::kBool:
      return Json(v.u != 0);
    case GgufType::kF32:
    case GgufType::kF64:
      return Json(v.f);
    case GgufType::kI8:
    case GgufType::kI16:
    case GgufType::kI32:
    case GgufType::kI64:
      return Json(v.i);
    default:
      return Json(v.u);
  }
}

Json ValueJson(const GgufValue& v) {
  if (v.type != GgufType::kArray) return ScalarJson(v);
  Json first = Json::array();
  for (uint64_t i = 0; i < v.count && i < kArrayShown; ++i) {
    if (v.elem == GgufType::kString) {
      first.push_back(StringJson(v.strings[i]));
    } else if (v.elem == GgufType::kF32 || v.elem == GgufType::kF64) {
      first.push_back(v.ArrayNumber(i));
    } else {
      first.push_back(static_cast<int64_t>(v.ArrayNumber(i)));
    }
  }
  Json out = Json::object();
  out["type"] = std::string("array of ") + GgufTypeName(v.elem);
  out["count"] = v.count;
  out["first"] = first;
  return out;
}

Json Describe(const std::string& path, const GgufFile& f) {
  Json out = Json::object();
  out["file"] = path;
  out["format"] = "gguf";
  out["file_size"] = f.size();
  out["version"] = f.version();
  out["alignment"] = f.alignment();
  out["data_offset"] = f.data_offset();
  Json meta = Json::object();
  for (const std::string& key : f.keys()) meta[key] = ValueJson(*f.Find(key));
  out["metadata"] = meta;
  struct Count {
    uint64_t tensors = 0, weights = 0, bytes = 0;
  };
  std::map<std::string, Count> by_type;
  for (const GgufTensor& t : f.tensors()) {
    Count& c = by_type[GgmlTypeName(t.type)];
    ++c.tensors;
    c.weights += t.Elements();
    c.bytes += t.nbytes;
  }
  Json types = Json::object();
  for (const auto& [name, c] : by_type) {
    types[name] = {{"tensors", c.tensors}, {"weights", c.weights}, {"bytes", c.bytes}};
  }
  out["tensor_count"] = f.tensors().size();
  out["tensor_types"] = types;
  return out;
}

void PrintText(const Json& d) {
  std::printf("file        %s (GGUF v%u, %llu bytes; alignment %llu, data at byte %llu)\n",
              d["file"].get<std::string>().c_str(), d["version"].get<unsigned>(),
              d["file_size"].get<unsigned long long>(), d["alignment"].get<unsigned long long>(),
              d["data_offset"].get<unsigned long long>());
  std::printf("metadata    %zu keys\n", d["metadata"].size());
  for (auto it = d["metadata"].begin(); it != d["metadata"].end(); ++it) {
    const Json& v = it.value();
    if (v.is_object()) {
      std::printf("  %s = [%s x %llu: %s%s]\n", it.key().c_str(),
                  v["type"].get<std::string>().substr(9).c_str(),
                  v["count"].get<unsigned long long>(), DumpJson(v["first"]).c_str(),
                  v["count"].get<uint64_t>() > v["first"].size() ? " ..." : "");
    } else {
      std::printf("  %s = %s\n", it.key().c_str(), DumpJson(v).c_str());
    }
  }
  std::printf("tensors     %llu\n", d["tensor_count"].get<unsigned long long>());
  for (auto it = d["tensor_types"].begin(); it != d["tensor_types"].end(); ++it) {
    const Json& c = it.value();
    std::printf("  %-8s %6llu tensors %14llu weights %14llu bytes\n", it.key().c_str(),
                c["tensors"].get<unsigned long long>(), c["weights"].get<unsigned long long>(),
                c["bytes"].get<unsigned long long>());
  }
}

}  // namespace

int InspectGguf(const std::string& path, bool json) {
  StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "pocket inspect: %s\n", file.status().ToString().c_str());
    return kExitError;
  }
  const Json d = Describe(path, **file);
  if (json) {
    std::printf("%s\n", DumpJson(d).c_str());
  } else {
    PrintText(d);
  }
  return kExitOk;
}

}  // namespace pocket::cli
