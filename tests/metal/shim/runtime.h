// What the Metal shim (metal_shim.h) asks of whoever runs the kernels: the
// harness (tests/metal/harness/grid.cc) implements these for the calling
// thread's threadgroup and SIMD-group. Plain C++, no shim macros, so the
// harness can include it beside std headers.
#pragma once

namespace metal_shim {

// Every thread of the caller's threadgroup (that has not returned) waits
// here until all have arrived.
void ThreadgroupBarrier();
// The same over the caller's SIMD-group.
void SimdgroupBarrier();
// Over the active threads of the caller's SIMD-group; every active thread
// gets the result. Sums add in lane order.
float SimdSum(float x);
float SimdMax(float x);
float SimdBroadcastFirst(float x);
// The caller's lane in its SIMD-group.
unsigned SimdLane();

}  // namespace metal_shim
