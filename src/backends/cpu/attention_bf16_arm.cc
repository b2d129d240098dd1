// Attention's bf16 products (attention_bf16-inl.h's Arm Bf16Block) once
// more, for 64-bit Arm CPUs with BF16 (Armv8.6: BFDOT, two bf16 products
// into each f32 lane; Cortex-A510/A710/X2 and later, Neoverse V1/N2).
// Highway 1.0.3's Arm targets assume no BF16, and Clang's arm_neon.h
// declares the bf16 types only in files built for it, so CMake compiles
// this file with -march=armv8.2-a+bf16 where the baseline lacks BF16 (and
// defines POCKET_ARM_BF16_KERNELS). attention.cc hands bf16 groups to
// AttendGroupBf16 here when the CPU reports BF16 (HWCAP2_BF16). Everything
// the file defines lands in pocket::cpu::N_NEON_BF16, not in N_NEON, whose
// functions attention.cc defines without BF16: the linker must not take one
// for the other. Elsewhere this file is empty.

#if POCKET_ARM_BF16_KERNELS

#include <hwy/highway.h>

#if HWY_TARGET != HWY_NEON || !defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC)
#error "attention_bf16_arm.cc is the NEON target with BF16: compile it with -march=armv8.2-a+bf16"
#endif

// Highway's ops are internal to each file (static inline), so they are used
// from the NEON namespace as they are.
#undef HWY_NAMESPACE
#define HWY_NAMESPACE N_NEON_BF16
namespace hwy::N_NEON_BF16 {
using namespace hwy::N_NEON;  // NOLINT(build/namespaces)
}  // namespace hwy::N_NEON_BF16

#include "kernels/cpu/attention_bf16-inl.h"

#endif  // POCKET_ARM_BF16_KERNELS
