// Machine ceilings that `pocket bench --roofline` compares decode and prefill
// against: how fast this machine streams memory, and how fast the int8 Linear
// kernels run when their weights stay in cache.
#pragma once

#include <cstddef>

namespace pocket::cpu {

class ThreadPool;

// Best of `passes` streaming reads of a `bytes` buffer (make it much larger
// than the last-level cache; held in huge pages where the OS has them)
// split over the pool's threads, in bytes per second; 0 if the buffer
// cannot be allocated.
double MeasureReadBandwidth(ThreadPool* pool, size_t bytes, int passes);

// Multiply-accumulates per second of Linear with QuantMath::kInt8 on a q4 g64
// weight of 512 x 896 (0.26 MB, resident in L2) for `tokens` tokens (1: the
// decode kernel, more: the prefill kernel), best of `passes`. Targets without
// an int8 dot product measure the f32 path they fall back to.
double MeasureInt8Peak(ThreadPool* pool, size_t tokens, int passes);

}  // namespace pocket::cpu
