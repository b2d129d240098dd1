#include "tokenizer/flat_hash.h"

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
  triples_ = triples.data();
  slots_.assign(TableSize(n), -1);
  mask_ = slots_.size() - 1;
  for (size_t r = 0; r < n; ++r) {
    // A repeated pair keeps its first (lowest) rank, like HF.
    int32_t& slot = slots_[SlotOf(triples[3 * r], triples[3 * r + 1])];
    if (slot < 0) slot = static_cast<int32_t>(r);
  }
}

uint64_t StringTable::Hash(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h ^ (h >> 29);
}

void StringTable::Build(std::string_view pool, const std::vector<uint32_t>& offsets) {
  const size_t n = offsets.empty() ? 0 : offsets.size() - 1;
  pool_ = pool.data();
  offsets_ = offsets.data();
  slots_.assign(TableSize(n), -1);
  mask_ = slots_.size() - 1;
  for (size_t id = 0; id < n; ++id) {
    const std::string_view key = Key(static_cast<int32_t>(id));
    if (key.empty()) continue;            // no token is the empty string
    int32_t& slot = slots_[SlotOf(key)];  // the first id of a repeated string wins
    if (slot < 0) slot = static_cast<int32_t>(id);
  }
}

}  // namespace pocket::tok
