// Runs a kernel over a grid on the CPU the way a Metal GPU would: each
// threadgroup's threads as real threads that meet at real barriers
// (threadgroup_barrier), in SIMD-groups whose reductions (simd_sum, ...)
// combine the values of their active lanes. Threadgroups run one after
// another, so the shim's static threadgroup arrays are shared by exactly one
// group's threads at a time (tests/metal/shim/metal_shim.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace pocket::metal::harness {

// A thread's place in the grid, as Metal's thread-position attributes
// report it: [[thread_position_in_grid]] is .grid, and so on.
struct ThreadPositions {
  uint32_t grid[3];               // thread_position_in_grid
  uint32_t in_group[3];           // thread_position_in_threadgroup
  uint32_t group[3];              // threadgroup_position_in_grid
  uint32_t threads_per_group[3];  // threads_per_threadgroup
  uint32_t groups[3];             // threadgroups_per_grid
  uint32_t index_in_group;        // thread_index_in_threadgroup
  uint32_t lane;                  // thread_index_in_simdgroup
  uint32_t simd_group;            // simdgroup_index_in_threadgroup
  uint32_t simd_groups;           // simdgroups_per_threadgroup
  uint32_t simd_width;            // threads_per_simdgroup
};

// groups[0] x groups[1] x groups[2] threadgroups of threads_per_group
// threads (along x) in SIMD-groups of simd_width; body runs once per thread.
// A barrier that not every live thread of its group (or SIMD-group)
// reaches within a few seconds aborts the process, naming the kernel,
// rather than hanging the test.
void RunGrid(const char* kernel, const size_t groups[3], size_t threads_per_group,
             size_t simd_width, const std::function<void(const ThreadPositions&)>& body);

}  // namespace pocket::metal::harness
