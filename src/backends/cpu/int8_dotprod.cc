// The int8 kernels (the Linear's, attention's q8 products) once more, for
// ARM NEON with the dotprod extension (ARMv8.2+: sdot, 16 int8 products
// into 4 int32 lanes per instruction). Highway 1.0.3's NEON target assumes
// only ARMv8.0, so its kernels multiply with vmull/vpadal (int8_dot-inl.h);
// nearly every phone core of recent years (Cortex-A55/A76 and later, Apple
// A12 and later) has sdot. CMake compiles this file with
// -march=armv8.2-a+dotprod where the baseline lacks it (and defines
// POCKET_NEON_DOTPROD_KERNELS); linear_int8.cc and attention.cc call these
// kernels instead of NEON's when the CPU reports dotprod (kernel_target.h:
// the "NEON_DOTPROD" target). Elsewhere this file is empty.

#if POCKET_NEON_DOTPROD_KERNELS

#include <hwy/highway.h>

#if HWY_TARGET != HWY_NEON || !defined(__ARM_FEATURE_DOTPROD)
#error "int8_dotprod.cc is the NEON target with dotprod: compile it with -march=armv8.2-a+dotprod"
#endif

#include "backends/cpu/int8_extension-inl.h"

#endif  // POCKET_NEON_DOTPROD_KERNELS
