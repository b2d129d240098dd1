// SHA-256 (FIPS 180-4), used by the converter to record the digest of every
// source file in a model's provenance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"

namespace pocket {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  // Lowercase hex of the 32-byte digest; the object is spent afterwards.
  std::string HexDigest();

 private:
  void Compress(const uint8_t* block);

  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string Sha256Hex(const void* data, size_t size);

// Digest of a whole file, read in chunks; *bytes receives its size.
StatusOr<std::string> Sha256File(const std::string& path, uint64_t* bytes);

}  // namespace pocket
