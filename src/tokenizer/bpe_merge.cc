#include "tokenizer/bpe_merge.h"

#include <functional>
#include <queue>
#include <tuple>

namespace pocket::tok {
namespace {

struct Candidate {
  int32_t rank;
  int32_t pos;  // index of the left symbol
  int32_t left, right, result;
  bool operator>(const Candidate& o) const { return std::tie(rank, pos) > std::tie(o.rank, o.pos); }
};

}  // namespace

void BpeMerge(const MergeTable& merges, std::vector<int32_t>* symbols) {
  std::vector<int32_t>& ids = *symbols;
  const int32_t n = static_cast<int32_t>(ids.size());
  if (n < 2) return;
  // Doubly linked list over the symbols; merged-away symbols get id -1.
  std::vector<int32_t> prev(n), next(n);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0) return;
    int32_t rank, result;
    if (merges.Find(ids[pos], ids[next[pos]], &rank, &result)) {
      queue.push(Candidate{rank, pos, ids[pos], ids[next[pos]], result});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    // Entries go stale when a neighbour merged first; skip those.
    const int32_t r = next[c.pos];
    if (ids[c.pos] != c.left || r < 0 || ids[r] != c.right) continue;
    ids[c.pos] = c.result;
    ids[r] = -1;
    next[c.pos] = next[r];
    if (next[r] >= 0) prev[next[r]] = c.pos;
    consider(prev[c.pos]);
    consider(c.pos);
  }
  int32_t out = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (ids[i] >= 0) ids[out++] = ids[i];
  }
  ids.resize(out);
}

}  // namespace pocket::tok
