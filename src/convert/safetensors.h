// Bounds-checked reader of safetensors files (an 8-byte little-endian header
// length, a JSON header of {name: {dtype, shape, data_offsets}}, then the
// data) and of sharded checkpoints (model.safetensors.index.json's
// weight_map). Only F32, F16 and BF16 tensors are supported; values are
// returned as f32. Every error names the file and the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/status.h"

namespace pocket {

class MappedFile;

struct SafetensorsTensor {
  std::string name;
  std::string dtype;  // "F32" | "F16" | "BF16"
  std::vector<uint64_t> shape;
  uint64_t offset = 0;  // absolute byte offset in the file
  uint64_t nbytes = 0;
};

class SafetensorsFile {
 public:
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* Find(const std::string& name) const;
  // The tensor's values converted to f32.
  StatusOr<std::vector<float>> ReadF32(const SafetensorsTensor& t) const;
  // The whole file's bytes (for hashing without a second read).
  const uint8_t* data() const;
  uint64_t size() const;

 private:
  SafetensorsFile() = default;
  Status ParseHeader();
  Status CheckNoOverlap(uint64_t data_start) const;

  std::string path_;
  std::unique_ptr<MappedFile> file_;
  std::map<std::string, SafetensorsTensor> tensors_;
};

// A model directory's weights: model.safetensors, or the shards listed by
// model.safetensors.index.json.
class SafetensorsCheckpoint {
 public:
  static StatusOr<std::unique_ptr<SafetensorsCheckpoint>> Open(const std::string& dir);

  // All tensor names, sorted.
  std::vector<std::string> Names() const;
  // nullptr when absent; *file receives the shard that holds it.
  const SafetensorsTensor* Find(const std::string& name, const SafetensorsFile** file) const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  // Files read besides the shards (the index), for provenance.
  const std::vector<std::string>& extra_files() const { return extra_files_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> owner_;  // tensor name -> index in files_
  std::vector<std::string> extra_files_;
};

}  // namespace pocket
