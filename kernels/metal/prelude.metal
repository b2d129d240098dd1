// Metal Shading Language definitions of the kernel prelude: the same names
// as kernels/opencl/prelude.cl, so the Metal backend compiles this file
// followed by the op bodies of kernels/gpu/*.cl unchanged
// (docs/gpu-kernels.md). Compile with -fno-fast-math: the kernels must round
// like the CPU backend (no contraction of a*b+c, exact division and sqrt).
//
// The host defines POCKET_WG, POCKET_HAS_SUBGROUPS (1: every Apple GPU has
// SIMD-groups) and POCKET_HAS_FP16 (1: half is core in Metal) as for OpenCL.
#include <metal_stdlib>
using namespace metal;

#define KERNEL kernel
#define GLOBAL device
#define LOCAL threadgroup
#define PRIVATE thread
#define INLINE inline

// Arrays shared by a threadgroup, declared at kernel scope. The Metal
// compiler sees an empty POCKET_THREADGROUP_STORAGE; the CPU shim that runs
// these kernels as C++ (tests/metal/shim) gives them static storage.
#ifndef POCKET_THREADGROUP_STORAGE
#define POCKET_THREADGROUP_STORAGE
#endif
#define LOCAL_ARRAY(type, name, count) POCKET_THREADGROUP_STORAGE threadgroup type name[count]

// Metal binds buffers and scalars to explicit slots, and thread positions
// arrive as kernel parameters; ARG_THREAD_POSITIONS follows the last
// argument of every kernel (hence its leading comma).
#define ARG_BUF(type, name, slot) device type* name [[buffer(slot)]]
#define ARG_VAL(type, name, slot) constant type& name [[buffer(slot)]]
#define ARG_THREAD_POSITIONS                                   \
  , uint3 pocket_gid [[thread_position_in_grid]],              \
      uint3 pocket_lid [[thread_position_in_threadgroup]],     \
      uint3 pocket_tgid [[threadgroup_position_in_grid]],      \
      uint pocket_lane [[thread_index_in_simdgroup]],          \
      uint pocket_simd [[simdgroup_index_in_threadgroup]],     \
      uint pocket_nsimd [[simdgroups_per_threadgroup]]

#define GLOBAL_ID(d) pocket_gid[d]
#define LOCAL_ID(d) pocket_lid[d]
#define GROUP_ID(d) pocket_tgid[d]

#define BARRIER_LOCAL() threadgroup_barrier(mem_flags::mem_threadgroup)
#define BARRIER_GLOBAL() threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)

#define AS_FLOAT(u) as_type<float>(u)

#define LOAD_F16(p, i) ((float)((GLOBAL const half*)(p))[(i)])
// Metal's float-to-half conversion rounds to nearest even, as the CPU does.
#define STORE_F16(p, i, v) (((GLOBAL half*)(p))[(i)] = (half)(v))

#if POCKET_HAS_SUBGROUPS
#define SUBGROUP_SUM(x) simd_sum(x)
#define SUBGROUP_MAX(x) simd_max(x)
#define SUBGROUP_LANE() pocket_lane
#define SUBGROUP_INDEX() pocket_simd
#define NUM_SUBGROUPS() pocket_nsimd
#else
#define SUBGROUP_LANE() 0u
#define SUBGROUP_INDEX() 0u
#define NUM_SUBGROUPS() 1u
#endif
