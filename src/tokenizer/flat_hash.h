// Two small open-addressing hash tables for the BPE hot paths. They are
// built once when a tokenizer loads (65K entries in about a millisecond, no
// per-entry allocation) and only read afterwards, so lookups need no locks.
//
// A slot is one int32 index into arrays the tokenizer already holds (the
// merge triples, the token string pool), not a copy of the key: for a 65K
// vocabulary that is 0.5 MiB per table instead of 2 MiB, which matters when
// the whole engine must fit a phone's memory budget. Checking a key costs one
// extra load from those arrays, which stay cache-resident while encoding.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace pocket::tok {

// (left id, right id) -> (merge rank, merged id). Reads `triples`
// (left, right, result per rank), which must outlive the table and not move.
class MergeTable {
 public:
  void Build(const std::vector<int32_t>& triples);
  // Returns false when the pair does not merge.
  bool Find(int32_t left, int32_t right, int32_t* rank, int32_t* result) const {
    if (slots_.empty()) return false;
    const int32_t r = slots_[SlotOf(left, right)];
    if (r < 0) return false;
    *rank = r;
    *result = triples_[3 * static_cast<size_t>(r) + 2];
    return true;
  }

 private:
  // The slot holding the pair, or the empty slot where it would go.
  size_t SlotOf(int32_t left, int32_t right) const {
    for (size_t i = Hash(left, right) & mask_;; i = (i + 1) & mask_) {
      const int32_t r = slots_[i];
      if (r < 0) return i;
      const int32_t* t = triples_ + 3 * static_cast<size_t>(r);
      if (t[0] == left && t[1] == right) return i;
    }
  }
  static uint64_t Hash(int32_t a, int32_t b) {
    uint64_t x = (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
  }
  const int32_t* triples_ = nullptr;
  std::vector<int32_t> slots_;  // merge rank; -1: empty
  size_t mask_ = 0;
};

// Token string -> id over a string pool where id i is
// pool[offsets[i], offsets[i+1]). Pool and offsets must outlive the table and
// not move. The first id of a repeated string wins; empty strings are not
// indexed.
class StringTable {
 public:
  void Build(std::string_view pool, const std::vector<uint32_t>& offsets);
  int32_t Find(std::string_view key) const {  // -1 when absent
    if (slots_.empty() || key.empty()) return -1;
    return slots_[SlotOf(key)];
  }

 private:
  // The slot holding the key, or the empty slot where it would go.
  size_t SlotOf(std::string_view key) const {
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      const int32_t id = slots_[i];
      if (id < 0 || Key(id) == key) return i;
    }
  }
  static uint64_t Hash(std::string_view s);
  std::string_view Key(int32_t id) const {
    return std::string_view(pool_ + offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  const char* pool_ = nullptr;
  const uint32_t* offsets_ = nullptr;
  std::vector<int32_t> slots_;  // token id; -1: empty
  size_t mask_ = 0;
};

}  // namespace pocket::tok
