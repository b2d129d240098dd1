// Memory accounting for the budget (docs/memory.md): what a session holds,
// by category, and how the weights' share of the mapped file is counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pocket {

constexpr size_t kMiB = size_t{1} << 20;

struct MemoryUsage {
  // Bytes of the mapped file the plan reads (every tensor the graph names),
  // rounded out to whole OS pages: once a forward pass has run they are all
  // resident, so this is what the budget counts.
  size_t weights = 0;
  // Bytes of the whole mapping resident right now (mincore); informative,
  // it rises from 0 as the first passes touch the weights.
  size_t weights_resident = 0;
  // The model's own structures: the heap its tokenizer, config and plan
  // took at load, and the mapped file's other sections (read at load).
  size_t model = 0;
  size_t kv = 0;          // KV pages held
  size_t scratch = 0;     // executor buffers held
  size_t logits = 0;      // the next-token logits row and the sampler's candidates
  size_t budget = 0;      // 0 = unlimited
  size_t max_tokens = 0;  // positions the budget (and context) allows
  size_t tokens = 0;      // positions held

  size_t total() const { return weights + model + kv + scratch + logits; }
};

// Bytes of the `page_size` pages covering the union of `ranges` ([offset,
// offset + size) in a mapping that starts on a page boundary).
size_t PagesCovering(std::vector<std::pair<uint64_t, uint64_t>> ranges, size_t page_size);
// The OS page size.
size_t OsPageSize();
// Bytes of [data, data + size) resident in memory now; 0 when the OS cannot
// tell.
size_t ResidentBytes(const void* data, size_t size);
// Bytes the process's heap has handed out (glibc's mallinfo2); 0 where the
// C library cannot tell.
size_t HeapBytesInUse();
// A budget as messages print it, exactly: "300 MiB" when it is whole MiB,
// else its bytes ("3670016 bytes (3.50 MiB)", "1 byte"), so that no budget
// reads as the "0 MiB" that means unlimited.
std::string BudgetText(size_t bytes);

}  // namespace pocket
