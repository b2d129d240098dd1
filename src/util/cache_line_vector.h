// Arrays whose storage starts on a cache line.
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
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

namespace pocket {

// Also what the thread pool pads its shared words to (thread_pool.h).
constexpr size_t kCacheLineBytes = 64;

// Owns `size()` elements of a trivial type starting on a cache line. The
// allocation reports failure instead of throwing: the executor's buffers
// are sized by the model and the prompt (megabytes for a long one), and
// where a process limit or the system's memory refuses them the run fails
// with a status rather than std::bad_alloc out of a library built without
// exceptions.
template <typename T>
class CacheLineBuffer {
  static_assert(std::is_trivial_v<T>, "CacheLineBuffer holds trivial types");

 public:
  // Replaces the contents with `size` zeroed elements; false, leaving the
  // buffer empty, where the memory cannot be had.
  bool Reset(size_t size) {
    data_.reset();
    size_ = 0;
    if (size == 0) return true;
    if (size > SIZE_MAX / sizeof(T)) return false;
    void* p = ::operator new (size * sizeof(T), std::align_val_t{kCacheLineBytes}, std::nothrow);
    if (p == nullptr) return false;
    std::memset(p, 0, size * sizeof(T));
    data_.reset(static_cast<T*>(p));
    size_ = size;
    return true;
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_.get()[i]; }
  const T& operator[](size_t i) const { return data_.get()[i]; }

 private:
  struct Free {
    void operator()(T* p) const { ::operator delete (p, std::align_val_t{kCacheLineBytes}); }
  };
  std::unique_ptr<T, Free> data_;
  size_t size_ = 0;
};

}  // namespace pocket
