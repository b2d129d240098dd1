// Prefill's q4 and q8 Linear over rows16 weights (matmul_rows16_amx-inl.h)
// for x86 CPUs with AMX-INT8 (Intel Xeon since Sapphire Rapids). CMake
// compiles this file with AVX-512's flags and -mamx-tile -mamx-int8 where
// the baseline lacks AMX (and defines POCKET_X86_AMX_KERNELS); linear_int8.cc
// hands the prompt's rows16 Linears to it where AVX3_DL is the target and the
// CPU and the OS grant AMX (kernel_target.h: MatrixExtensionChosen).
// Nothing here is Highway's or the standard library's, so no inline
// function compiled with these flags can stand in for another file's copy.
// Elsewhere this file is empty.

#if POCKET_X86_AMX_KERNELS

// GCC's AMX macros, then Clang's.
#if !(defined(__AMX_INT8__) || defined(__AMXINT8__)) ||                          \
    !(defined(__AMX_TILE__) || defined(__AMXTILE__)) || !defined(__AVX512F__) || \
    !defined(__F16C__) || !defined(__FMA__)
#error "linear_amx_x86.cc needs AVX-512, F16C, FMA and AMX: compile it with -mamx-tile -mamx-int8"
#endif

// GCC 12's AVX-512 conversions pass _mm512_undefined_ps(), which it then
// warns is used uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/cpu/matmul_rows16_amx-inl.h"

namespace pocket::cpu::amx {

void Rows16PrefillQ4(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                     size_t r0, size_t r1, uint8_t* tiles, float* out) {
  Rows16Matmul<Q4Codes>(w, a, n, bias, r0, r1, tiles, out);
}

void Rows16PrefillQ8(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                     size_t r0, size_t r1, uint8_t* tiles, float* out) {
  Rows16Matmul<Q8Codes>(w, a, n, bias, r0, r1, tiles, out);
}

}  // namespace pocket::cpu::amx

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // POCKET_X86_AMX_KERNELS
