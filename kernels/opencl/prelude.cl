// OpenCL C 1.2 definitions of the kernel prelude. Every file in kernels/gpu
// is written in the common subset of OpenCL C and the Metal Shading
// Language and reaches API-specific features only through these macros;
// kernels/metal/prelude.metal defines the same names for Metal
// (docs/gpu-kernels.md).
//
// The host defines, at build time:
//   POCKET_WG             work-group size of the reducing kernels (power of 2)
//   POCKET_HAS_SUBGROUPS  1 when the device reports cl_khr_subgroups
//   POCKET_HAS_FP16       1 when the device reports cl_khr_fp16

// The CPU backend rounds a*b+c as two operations; so must the kernels, or
// rope and the norms drift from it by an ulp and greedy decoding can fork.
#pragma OPENCL FP_CONTRACT OFF

#define KERNEL __kernel
#define GLOBAL __global
#define LOCAL __local
#define PRIVATE __private
#define INLINE inline
// Arrays shared by a work-group, declared at kernel scope.
#define LOCAL_ARRAY(type, name, count) __local type name[count]

// Kernel parameters. Metal binds each to an explicit slot and passes thread
// positions as parameters, so kernels declare them through these.
#define ARG_BUF(type, name, slot) __global type* name
#define ARG_VAL(type, name, slot) const type name
#define ARG_THREAD_POSITIONS

#define GLOBAL_ID(d) ((uint)get_global_id(d))
#define LOCAL_ID(d) ((uint)get_local_id(d))
#define GROUP_ID(d) ((uint)get_group_id(d))

#define BARRIER_LOCAL() barrier(CLK_LOCAL_MEM_FENCE)
#define BARRIER_GLOBAL() barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE)

#define AS_FLOAT(u) as_float(u)

// Half floats: vload_half / vstore_half are core OpenCL 1.2 and work on
// `half` pointers even without cl_khr_fp16, so f16 weights and KV rows need
// no extension; the store rounds to nearest even like the CPU backend.
#if POCKET_HAS_FP16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#define LOAD_F16(p, i) ((float)((GLOBAL const half*)(p))[(i)])
#else
#define LOAD_F16(p, i) vload_half((i), (GLOBAL const half*)(p))
#endif
#define STORE_F16(p, i, v) vstore_half_rte((v), (i), (GLOBAL half*)(p))

#if POCKET_HAS_SUBGROUPS
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#define SUBGROUP_SUM(x) sub_group_reduce_add(x)
#define SUBGROUP_MAX(x) sub_group_reduce_max(x)
#define SUBGROUP_LANE() ((uint)get_sub_group_local_id())
#define SUBGROUP_INDEX() ((uint)get_sub_group_id())
#define NUM_SUBGROUPS() ((uint)get_num_sub_groups())
#else
#define SUBGROUP_LANE() 0u
#define SUBGROUP_INDEX() 0u
#define NUM_SUBGROUPS() 1u
#endif
