// std::vector whose storage starts on a cache line.
//
// The executor's activation buffers are written by several threads at once,
// each its own rows (a Linear's 16-row blocks, attention's kv heads). With
// malloc's 16-byte alignment the rows at a boundary would share a 64-byte
// line, and the threads would take turns owning it: decode attention adds
// into its output rows once per 64-position block, so on 2 threads a shared
// line moves between the cores about 8 times per layer, and a decode step
// over 512 positions takes 7.4-7.5 us instead of 6.4-6.6
// (docs/performance.md).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace pocket {

// Also what the thread pool pads its shared words to (thread_pool.h).
constexpr size_t kCacheLineBytes = 64;

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{kCacheLineBytes}); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const CacheLineAllocator<U>&) const {
    return false;
  }
};

template <typename T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace pocket
