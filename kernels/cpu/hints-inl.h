// Hints for the compiler and the memory system that the hot loops need and
// that Highway 1.0.3 has no op for: keeping values in registers, and
// prefetching into L2.

#if defined(POCKET_KERNELS_CPU_HINTS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POCKET_KERNELS_CPU_HINTS_INL_H_
#undef POCKET_KERNELS_CPU_HINTS_INL_H_
#else
#define POCKET_KERNELS_CPU_HINTS_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pocket::cpu::HWY_NAMESPACE {

// The register pins are empty asm statements on AVX-512 with GCC or Clang,
// where they measured faster; elsewhere they compile to nothing.
#undef POCKET_PIN_REGISTERS
#if HWY_ARCH_X86 && defined(__GNUC__) && HWY_TARGET <= HWY_AVX3
#define POCKET_PIN_REGISTERS 1
#else
#define POCKET_PIN_REGISTERS 0
#endif

// InRegister for a raw intrinsic vector (__m512, __m512i), for kernels
// written in intrinsics.
template <typename Raw>
HWY_INLINE Raw RawInRegister(Raw v) {
#if POCKET_PIN_REGISTERS
  asm("" : "+v"(v));
#endif
  return v;
}

// Keeps a loaded vector in a register. GCC otherwise folds the load into
// every multiply-add that uses it, and the loads then cap the rate at which
// the multiply-adds run (one 512-bit load per cycle on Zen 4; AVX2's 256-bit
// loads measured no such limit, so other targets leave it to the compiler).
template <class V>
HWY_INLINE V InRegister(V v) {
#if POCKET_PIN_REGISTERS  // SVE's sizeless vectors have no .raw
  v.raw = RawInRegister(v.raw);
#endif
  return v;
}

// Marks accumulators as live in registers at this point of a loop body.
// GCC otherwise rotates the int32 sums of the rows16 GEMM tile through
// register copies and a stack spill on every step; pinned, each keeps its
// register and the step is just its loads and dot products.
template <class... V>
HWY_INLINE void KeepInRegisters(V&... v) {
  ((v = InRegister(v)), ...);
}

// Asks for the lines of [p, p + bytes) into L1, one hint per line: the
// paced hints of attention's blocks, for the lines the next block's step
// will load.
HWY_INLINE void PrefetchLines(const void* p, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; i += 64) hwy::Prefetch(b + i);
}

// Prefetches the `bytes` from p into L2 (not L1, where they would evict the
// data being computed on), one hint per cache line.
HWY_INLINE void PrefetchBytes(const void* p, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; i += 64) {
#if defined(__GNUC__)
    __builtin_prefetch(b + i, /*rw=*/0, /*locality=*/2);  // x86 prefetcht1, ARM PLDL2KEEP
#else
    hwy::Prefetch(b + i);
#endif
  }
}

}  // namespace pocket::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POCKET_KERNELS_CPU_HINTS_INL_H_
