// The int8 Linear's kernel entry points for one target, included once per
// Highway target by linear_int8.cc and once more for the build's int8
// extension (int8_extension-inl.h: NEON with sdot, AVX2 with
// AVX-VNNI), so every build runs the same source.

#if defined(POCKET_SRC_BACKENDS_CPU_LINEAR_INT8_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_SRC_BACKENDS_CPU_LINEAR_INT8_KERNELS_INL_H_
#undef POCKET_SRC_BACKENDS_CPU_LINEAR_INT8_KERNELS_INL_H_
#else
#define POCKET_SRC_BACKENDS_CPU_LINEAR_INT8_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include "backends/cpu/linear_int8.h"
#include "backends/cpu/rows16.h"
#include "kernels/cpu/int8_dot-inl.h"
#include "kernels/cpu/matvec_int8-inl.h"
#include "kernels/cpu/matvec_rows16-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

void DecodeRowsInt8(const QuantizedRows& w, const QuantizedActs& a, const float* bias, size_t r0,
                    size_t r1, float* out) {
#if POCKET_INT8_DOT
  LinearInt8DecodeRows(w, a, bias, r0, r1, out);
#endif
}

void PrefillRowsInt8(const QuantizedRows& w, const QuantizedActs& a, size_t n, const float* bias,
                     size_t r0, size_t r1, float* scratch, float* out) {
#if POCKET_INT8_DOT
  LinearInt8PrefillRows(w, a, n, bias, r0, r1, scratch, out);
#endif
}

void Rows16DecodeInt8(const Rows16Weights& w, const QuantizedActs& a, const float* bias, size_t r0,
                      size_t r1, float* out) {
#if POCKET_INT8_DOT
  Rows16GemvInt8(w, a, bias, r0, r1, out);
#endif
}

// q8's own entry points, so that the q4 kernels' functions hold nothing else.
void Rows16DecodeQ8(const Rows16Weights& w, const QuantizedActs& a, const float* bias, size_t r0,
                    size_t r1, float* out) {
#if POCKET_INT8_DOT
  Rows16GemvQ8(w, a, bias, r0, r1, out);
#endif
}

void Rows16PrefillInt8(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                       size_t r0, size_t r1, float* out) {
#if POCKET_INT8_DOT
  Rows16GemmInt8(w, a, n, bias, r0, r1, out);
#endif
}

void Rows16PrefillQ8(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                     size_t r0, size_t r1, float* out) {
#if POCKET_INT8_DOT
  Rows16GemmQ8(w, a, n, bias, r0, r1, out);
#endif
}

// A few tokens (ops.h: kBatchTokens), each rounded as decode
// rounds it.
void Rows16BatchInt8(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                     size_t r0, size_t r1, float* out) {
#if POCKET_INT8_DOT
  Rows16Batch<false>(w, a, n, bias, r0, r1, out);
#endif
}

void Rows16BatchQ8(const Rows16Weights& w, const QuantizedActs& a, size_t n, const float* bias,
                   size_t r0, size_t r1, float* out) {
#if POCKET_INT8_DOT
  Rows16Batch<true>(w, a, n, bias, r0, r1, out);
#endif
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_SRC_BACKENDS_CPU_LINEAR_INT8_KERNELS_INL_H_
