// Two small open-addressing hash tables for the BPE hot paths. They are
// built once when a tokenizer loads (65K entries in about a millisecond, no
// per-entry allocation) and only read afterwards, so lookups need no locks.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace pocket::tok {

// (left id, right id) -> (merge rank, merged id).
class MergeTable {
 public:
  void Build(const std::vector<int32_t>& triples);  // left,right,result per rank
  // Returns false when the pair does not merge.
  bool Find(int32_t left, int32_t right, int32_t* rank, int32_t* result) const {
    if (slots_.empty()) return false;
    const uint64_t key = Key(left, right);
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.rank < 0) return false;
      if (s.key == key) {
        *rank = s.rank;
        *result = s.result;
        return true;
      }
    }
  }

 private:
  struct Slot {
    uint64_t key;
    int32_t rank;  // -1: empty
    int32_t result;
  };
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t Hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// Token string -> id. The strings live elsewhere (the tokenizer's pool) and
// must outlive the table. The first id inserted for a string wins.
class StringTable {
 public:
  void Reset(size_t expected);
  void Insert(std::string_view key, int32_t id);
  int32_t Find(std::string_view key) const;  // -1 when absent

 private:
  struct Slot {
    const char* data;
    uint32_t size;
    int32_t id;  // -1: empty
  };
  static uint64_t Hash(std::string_view s);
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace pocket::tok
