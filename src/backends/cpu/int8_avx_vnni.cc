// The int8 kernels (the Linear's, attention's q8 products) once more, for
// AVX2 with AVX-VNNI (the VEX vpdpbusd: 32 u8 x s8 products summed into 8
// int32 lanes per instruction, where AVX2 needs maddubs, an int16 add and a
// widening madd). x86 CPUs without AVX-512 have it since Intel's Alder Lake
// (and AMD's Zen 5); Highway 1.0.3's AVX2 target does not assume it. CMake
// compiles this file with AVX2's flags and -mavxvnni (and defines
// POCKET_AVX2_VNNI_KERNELS); linear_int8.cc and attention.cc call these
// kernels instead of AVX2's when the CPU reports AVX-VNNI (kernel_target.h:
// the "AVX2_VNNI" target). Elsewhere this file is empty.

#if POCKET_AVX2_VNNI_KERNELS

#include <hwy/highway.h>

#if HWY_TARGET != HWY_AVX2 || !defined(__AVXVNNI__)
#error \
    "int8_avx_vnni.cc is the AVX2 target with AVX-VNNI: compile it with AVX2's flags and -mavxvnni"
#endif

#include "backends/cpu/int8_extension-inl.h"

#endif  // POCKET_AVX2_VNNI_KERNELS
