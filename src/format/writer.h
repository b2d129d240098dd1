// Writes .pocket files. Tensors are appended in order; Finish() lays out the
// data section on a 16 KiB boundary with each tensor on 64 bytes, writes
// "<path>.tmp" and renames it over <path> only when everything succeeded,
// so a failed conversion never leaves a half-written model behind. A <path>
// that exists and is not a regular file (a device node, FIFO or directory)
// is refused, never replaced (util/file_io.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/pocket_file.h"
#include "util/status.h"

namespace pocket {

class PocketWriter {
 public:
  void SetConfigJson(std::string json) { config_ = std::move(json); }
  void SetGraphJson(std::string json) { graph_ = std::move(json); }
  void SetTokenizerBlob(std::string blob) { tokenizer_ = std::move(blob); }

  // `info.offset` is ignored (the writer assigns it); `info.nbytes` must
  // equal bytes.size() and match dtype/shape/group. Names must be unique.
  Status AddTensor(TensorInfo info, std::vector<uint8_t> bytes);

  // Writes the file. Deterministic: same inputs => same bytes.
  Status Finish(const std::string& path);

 private:
  std::string config_, graph_, tokenizer_;
  std::vector<TensorInfo> infos_;
  std::vector<std::vector<uint8_t>> data_;
};

}  // namespace pocket
