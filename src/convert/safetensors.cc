#include "convert/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "convert/source_files.h"
#include "util/fp16.h"
#include "util/json_util.h"
#include "util/mapped_file.h"

namespace pocket {
namespace {

// A header larger than this is not a plausible safetensors file.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

int ElementSize(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 0;
}

// Parses one header entry; `where` names the file and tensor.
Status ParseEntry(const std::string& name, const Json& e, uint64_t data_start, uint64_t file_size,
                  const std::string& where, SafetensorsTensor* t) {
  if (!e.is_object()) {
    return Errorf(StatusCode::kCorruptFile, "%s: entry is not an object", where.c_str());
  }
  t->name = name;
  POCKET_RETURN_IF_ERROR(GetString(e, "dtype", &t->dtype, where.c_str()));
  const int esize = ElementSize(t->dtype);
  if (esize == 0) {
    return Errorf(StatusCode::kUnsupported, "%s: dtype %s is not supported (F32, F16, BF16)",
                  where.c_str(), t->dtype.c_str());
  }
  std::vector<int64_t> shape, offsets;
  POCKET_RETURN_IF_ERROR(GetIntArray(e, "shape", &shape, where.c_str()));
  POCKET_RETURN_IF_ERROR(GetIntArray(e, "data_offsets", &offsets, where.c_str()));
  uint64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements)) {
      return Errorf(StatusCode::kCorruptFile, "%s: invalid shape", where.c_str());
    }
    t->shape.push_back(static_cast<uint64_t>(d));
  }
  if (offsets.size() != 2 || offsets[0] < 0 || offsets[1] < offsets[0]) {
    return Errorf(StatusCode::kCorruptFile, "%s: data_offsets must be [begin, end]", where.c_str());
  }
  const uint64_t begin = static_cast<uint64_t>(offsets[0]), end = static_cast<uint64_t>(offsets[1]);
  t->nbytes = end - begin;
  uint64_t want = 0;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(esize), &want) || want != t->nbytes) {
    return Errorf(StatusCode::kCorruptFile,
                  "%s: data_offsets span %llu bytes but shape and dtype need %llu", where.c_str(),
                  static_cast<unsigned long long>(t->nbytes),
                  static_cast<unsigned long long>(want));
  }
  t->offset = data_start + begin;
  if (end > file_size - data_start) {
    return Errorf(StatusCode::kCorruptFile,
                  "%s: data ends at byte %llu but the file has %llu bytes (truncated?)",
                  where.c_str(), static_cast<unsigned long long>(data_start + end),
                  static_cast<unsigned long long>(file_size));
  }
  return Status::Ok();
}

}  // namespace

SafetensorsFile::~SafetensorsFile() = default;

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile);
  f->path_ = path;
  POCKET_ASSIGN_OR_RETURN(f->file_, MappedFile::Open(path, "safetensors file"));
  POCKET_RETURN_IF_ERROR(f->ParseHeader());
  return f;
}

Status SafetensorsFile::ParseHeader() {
  const uint64_t size = file_->size();
  if (size < 8) {
    return Errorf(StatusCode::kCorruptFile,
                  "'%s': %llu bytes is too short for a safetensors header", path_.c_str(),
                  static_cast<unsigned long long>(size));
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file_->data()[i];
  if (header_len > kMaxHeaderBytes || header_len > size - 8) {
    return Errorf(StatusCode::kCorruptFile,
                  "'%s': header length %llu exceeds the file size %llu (truncated?)", path_.c_str(),
                  static_cast<unsigned long long>(header_len),
                  static_cast<unsigned long long>(size));
  }
  const std::string what = "safetensors header of '" + path_ + "'";
  POCKET_ASSIGN_OR_RETURN(
      Json header,
      ParseJson(std::string_view(reinterpret_cast<const char*>(file_->data()) + 8, header_len),
                what.c_str()));
  if (!header.is_object()) {
    return Errorf(StatusCode::kCorruptFile, "%s is not a JSON object", what.c_str());
  }
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string where = "'" + path_ + "', tensor '" + it.key() + "'";
    SafetensorsTensor t;
    POCKET_RETURN_IF_ERROR(ParseEntry(it.key(), it.value(), 8 + header_len, size, where, &t));
    tensors_[it.key()] = std::move(t);
  }
  return CheckNoOverlap(8 + header_len);
}

// Two tensors sharing bytes would convert as one another's weights.
Status SafetensorsFile::CheckNoOverlap(uint64_t data_start) const {
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& [name, t] : tensors_) {
    if (t.nbytes != 0) by_offset.push_back(&t);
  }
  std::sort(
      by_offset.begin(), by_offset.end(),
      [](const SafetensorsTensor* a, const SafetensorsTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsTensor& a = *by_offset[i - 1];
    const SafetensorsTensor& b = *by_offset[i];
    if (a.offset + a.nbytes > b.offset) {
      const auto begin = [data_start](const SafetensorsTensor& t) {
        return static_cast<unsigned long long>(t.offset - data_start);
      };
      return Errorf(StatusCode::kCorruptFile,
                    "'%s': tensors '%s' (data_offsets [%llu, %llu]) and '%s' (data_offsets "
                    "[%llu, %llu]) overlap",
                    path_.c_str(), a.name.c_str(), begin(a), begin(a) + a.nbytes, b.name.c_str(),
                    begin(b), begin(b) + b.nbytes);
    }
  }
  return Status::Ok();
}

const SafetensorsTensor* SafetensorsFile::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const uint8_t* SafetensorsFile::data() const { return file_->data(); }
uint64_t SafetensorsFile::size() const { return file_->size(); }

StatusOr<std::vector<float>> SafetensorsFile::ReadF32(const SafetensorsTensor& t) const {
  // Entries were bounds-checked against this file in ParseHeader.
  const uint8_t* p = file_->data() + t.offset;
  const uint64_t n = t.nbytes / ElementSize(t.dtype);
  std::vector<float> out(n);
  if (t.dtype == "F32") {
    std::memcpy(out.data(), p, t.nbytes);
  } else {
    const bool half = t.dtype == "F16";
    for (uint64_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      out[i] = half ? F16ToF32(v) : BF16ToF32(v);
    }
  }
  return out;
}

StatusOr<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::Open(
    const std::string& dir) {
  auto ckpt = std::make_unique<SafetensorsCheckpoint>();
  const std::string index_path = dir + "/model.safetensors.index.json";
  std::vector<std::string> shards;
  if (PathExists(index_path)) {
    POCKET_ASSIGN_OR_RETURN(
        std::string text,
        ReadRegularFile(index_path, "model.safetensors.index.json", kMaxTextFileBytes));
    POCKET_ASSIGN_OR_RETURN(Json index, ParseJson(text, index_path.c_str()));
    const Json* map = index.is_object() ? FindMember(index, "weight_map") : nullptr;
    if (!map || !map->is_object()) {
      return Errorf(StatusCode::kCorruptFile, "'%s' has no \"weight_map\" object",
                    index_path.c_str());
    }
    std::set<std::string> seen;
    for (auto it = map->begin(); it != map->end(); ++it) {
      if (!it.value().is_string()) {
        return Errorf(StatusCode::kCorruptFile, "'%s': weight_map entry '%s' is not a file name",
                      index_path.c_str(), it.key().c_str());
      }
      const std::string& shard = it.value().get_ref<const std::string&>();
      if (shard.find('/') != std::string::npos) {
        return Errorf(StatusCode::kCorruptFile, "'%s': shard name '%s' must be a plain file name",
                      index_path.c_str(), shard.c_str());
      }
      if (seen.insert(shard).second) shards.push_back(shard);
    }
    ckpt->extra_files_.push_back(index_path);
  } else if (PathExists(dir + "/model.safetensors")) {
    shards.push_back("model.safetensors");
  } else {
    return Errorf(StatusCode::kNotFound,
                  "'%s' has neither model.safetensors nor model.safetensors.index.json",
                  dir.c_str());
  }
  for (const std::string& shard : shards) {
    POCKET_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(dir + "/" + shard));
    for (const auto& [name, t] : file->tensors()) {
      if (ckpt->owner_.count(name)) {
        return Errorf(StatusCode::kCorruptFile, "tensor '%s' appears in two shards (second: '%s')",
                      name.c_str(), file->path().c_str());
      }
      ckpt->owner_[name] = ckpt->files_.size();
    }
    ckpt->files_.push_back(std::move(file));
  }
  return ckpt;
}

std::vector<std::string> SafetensorsCheckpoint::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, index] : owner_) names.push_back(name);
  return names;
}

const SafetensorsTensor* SafetensorsCheckpoint::Find(const std::string& name,
                                                     const SafetensorsFile** file) const {
  auto it = owner_.find(name);
  if (it == owner_.end()) return nullptr;
  if (file) *file = files_[it->second].get();
  return files_[it->second]->Find(name);
}

}  // namespace pocket
