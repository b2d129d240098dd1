#include "tokenizer/flat_hash.h"

#include <cstring>

namespace pocket::tok {
namespace {

// A power of two at least twice `n`, so probe chains stay short.
size_t TableSize(size_t n) {
  size_t size = 16;
  while (size < 2 * n) size <<= 1;
  return size;
}

}  // namespace

void MergeTable::Build(const std::vector<int32_t>& triples) {
  const size_t n = triples.size() / 3;
  slots_.assign(TableSize(n), Slot{0, -1, -1});
  mask_ = slots_.size() - 1;
  for (size_t r = 0; r < n; ++r) {
    const uint64_t key = Key(triples[3 * r], triples[3 * r + 1]);
    size_t i = Hash(key) & mask_;
    // A repeated pair keeps its first (lowest) rank, like HF.
    while (slots_[i].rank >= 0 && slots_[i].key != key) i = (i + 1) & mask_;
    if (slots_[i].rank < 0) {
      slots_[i] = Slot{key, static_cast<int32_t>(r), triples[3 * r + 2]};
    }
  }
}

void StringTable::Reset(size_t expected) {
  slots_.assign(TableSize(expected), Slot{nullptr, 0, -1});
  mask_ = slots_.size() - 1;
}

uint64_t StringTable::Hash(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h ^ (h >> 29);
}

void StringTable::Insert(std::string_view key, int32_t id) {
  if (key.empty()) return;  // no token is the empty string
  for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.id < 0) {
      s = Slot{key.data(), static_cast<uint32_t>(key.size()), id};
      return;
    }
    if (s.size == key.size() && std::memcmp(s.data, key.data(), key.size()) == 0) return;
  }
}

int32_t StringTable::Find(std::string_view key) const {
  if (slots_.empty() || key.empty()) return -1;
  for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.size == key.size() && std::memcmp(s.data, key.data(), key.size()) == 0) return s.id;
  }
}

}  // namespace pocket::tok
