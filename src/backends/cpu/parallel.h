// How the ops spread work: over the pool when there is one, else inline on
// the calling thread (pool == nullptr is the single-threaded mode of ops.h).
#pragma once

#include <cstddef>

#include "backends/cpu/thread_pool.h"

namespace pocket::cpu {

inline size_t NumThreads(const ThreadPool* pool) { return pool ? pool->NumThreads() : 1; }

// Calls fn(task, thread) for every task in [0, num_tasks).
template <typename Fn>
void ParallelOrInline(ThreadPool* pool, size_t num_tasks, const Fn& fn) {
  if (pool != nullptr && num_tasks > 1) {
    pool->ParallelFor(num_tasks, fn);
    return;
  }
  for (size_t task = 0; task < num_tasks; ++task) fn(task, 0);
}

// Calls fn(begin, end, thread) on pieces of [0, units) of at most `piece`
// units (ThreadPool::ParallelRanges), or on all of it inline.
template <typename Fn>
void ParallelRangesOrInline(ThreadPool* pool, size_t units, size_t piece, const Fn& fn) {
  if (pool != nullptr && pool->NumThreads() > 1) {
    pool->ParallelRanges(units, piece, fn);
    return;
  }
  if (units > 0) fn(size_t{0}, units, size_t{0});
}

// [begin, end) of part `part` of `parts` near-equal contiguous slices of
// [0, count), each a multiple of `align` except the last.
inline void SplitRange(size_t count, size_t align, size_t parts, size_t part, size_t* begin,
                       size_t* end) {
  const size_t blocks = (count + align - 1) / align;
  *begin = blocks * part / parts * align;
  const size_t e = blocks * (part + 1) / parts * align;
  *end = e < count ? e : count;
}

}  // namespace pocket::cpu
