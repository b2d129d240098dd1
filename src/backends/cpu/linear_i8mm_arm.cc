// Prefill's q4 and q8 Linear over rows16 weights (matmul_rows16_i8mm-inl.h)
// for 64-bit Arm CPUs with the int8 matrix multiply (Armv8.6 FEAT_I8MM:
// SMMLA, 32 int8 multiply-adds an instruction against sdot's 16;
// Cortex-A510/A710/X2 and later, so Snapdragon 8 Gen 1, Dimensity 9000 and
// later, Neoverse V1/N2, Apple M2/A15 and later). Highway 1.0.3's Arm
// targets assume no I8MM, so CMake compiles this file with
// -march=armv8.2-a+dotprod+i8mm where the baseline lacks it (and defines
// POCKET_ARM_I8MM_KERNELS); linear_int8.cc hands the prompt's rows16 Linears
// to it when the CPU reports I8MM (kernel_target.h: MatrixExtensionChosen).
// Everything it defines lands in pocket::cpu::N_NEON_I8MM, not in N_NEON,
// whose functions linear_int8.cc defines without I8MM: the linker must not
// take one for the other. Elsewhere this file is empty.

#if POCKET_ARM_I8MM_KERNELS

#include <hwy/highway.h>

#if HWY_TARGET != HWY_NEON || !defined(__ARM_FEATURE_MATMUL_INT8) || !defined(__ARM_FEATURE_DOTPROD)
#error \
    "linear_i8mm_arm.cc is the NEON target with I8MM: compile it with -march=armv8.2-a+dotprod+i8mm"
#endif

// Highway's ops are internal to each file (static inline), so they are used
// from the NEON namespace as they are.
#undef HWY_NAMESPACE
#define HWY_NAMESPACE N_NEON_I8MM
namespace hwy::N_NEON_I8MM {
using namespace hwy::N_NEON;  // NOLINT(build/namespaces)
}  // namespace hwy::N_NEON_I8MM

#include "kernels/cpu/matmul_rows16_i8mm-inl.h"

#endif  // POCKET_ARM_I8MM_KERNELS
