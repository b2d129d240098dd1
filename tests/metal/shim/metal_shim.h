// The subset of the Metal Shading Language that Pocket's Metal kernels use
// (kernels/metal/prelude.metal, kernels/gpu/*.cl, kernels/metal/*.metal),
// declared in C++ so that those kernels compile with an ordinary C++
// compiler and run on the CPU (docs/metal.md). `#include <metal_stdlib>`
// finds this header through tests/metal/shim/metal_stdlib.
//
// Kept to C++14, the language the Metal Shading Language builds on. The
// meaning of each piece:
// - address spaces vanish (device, thread) or become const (constant);
//   threadgroup arrays get static storage: the harness runs one threadgroup
//   at a time, so that storage is shared by exactly the group's threads;
// - `kernel` marks nothing: the harness knows the entry points by name and
//   reads their [[buffer(n)]] / thread-position attributes from the
//   preprocessed source (tests/metal/harness/signature.h);
// - barriers and SIMD-group functions call into the harness
//   (tests/metal/shim/runtime.h), which runs each thread of a threadgroup
//   as an OS thread;
// - half is IEEE binary16 with round-to-nearest-even conversions, written
//   here independently of src/util/fp16.h (the reference's conversion).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime.h"

#define kernel
#define device
#define constant const
#define thread
#define threadgroup
#define POCKET_THREADGROUP_STORAGE static

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;

struct uint2 {
  uint x, y;
  uint operator[](int i) const { return i == 0 ? x : y; }
};

struct uint3 {
  uint x, y, z;
  uint operator[](int i) const { return i == 0 ? x : i == 1 ? y : z; }
};

namespace metal_shim {

inline uint16_t FloatToHalfBits(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000u : 0u;
  const double a = std::fabs(static_cast<double>(f));
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7E00u);
  if (a < std::ldexp(1.0, -14)) {  // subnormal: a multiple of 2^-24
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0)));
  }
  int e = 0;
  const double m = std::frexp(a, &e);     // a = m * 2^e, m in [0.5, 1)
  double q = std::nearbyint(m * 2048.0);  // 11 significant bits, to nearest even
  if (q == 2048.0) {
    q = 1024.0;
    ++e;
  }
  if (e - 1 > 15) return static_cast<uint16_t>(sign | 0x7C00u);
  return static_cast<uint16_t>(sign | (e - 1 + 15) << 10 | (static_cast<int>(q) - 1024));
}

inline float HalfBitsToFloat(uint16_t h) {
  const float sign = (h & 0x8000u) != 0 ? -1.0f : 1.0f;
  const int e = (h >> 10) & 31;
  const int m = h & 1023;
  if (e == 0) return sign * static_cast<float>(std::ldexp(m, -24));
  if (e == 31) return m == 0 ? sign * INFINITY : NAN;
  return sign * static_cast<float>(std::ldexp(1024 + m, e - 25));
}

}  // namespace metal_shim

struct half {
  uint16_t bits;
  half() = default;
  half(float f) : bits(metal_shim::FloatToHalfBits(f)) {}
  operator float() const { return metal_shim::HalfBitsToFloat(bits); }
};

namespace metal {

enum class mem_flags : uint { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<uint>(a) | static_cast<uint>(b));
}

inline void threadgroup_barrier(mem_flags) { metal_shim::ThreadgroupBarrier(); }
inline void simdgroup_barrier(mem_flags) { metal_shim::SimdgroupBarrier(); }

template <typename To, typename From>
To as_type(From from) {
  static_assert(sizeof(To) == sizeof(From), "as_type between types of different sizes");
  To to;
  std::memcpy(&to, &from, sizeof(to));
  return to;
}

template <typename T>
T min(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
T max(T a, T b) {
  return a < b ? b : a;
}
template <typename T>
T clamp(T x, T lo, T hi) {
  return min(max(x, lo), hi);
}
inline float exp(float x) { return std::exp(x); }
inline float sqrt(float x) { return std::sqrt(x); }
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline float fabs(float x) { return std::fabs(x); }
inline float abs(float x) { return std::fabs(x); }
inline float rint(float x) { return std::nearbyint(x); }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }

// SIMD-group matrices: every lane holds the whole matrix (Metal spreads
// it over the lanes), so loads and products give each lane the same
// values; a store writes from lane 0 only, and the kernel's barrier after
// it makes the values visible to the other lanes, as on a GPU.
template <typename T, int Cols, int Rows>
struct simdgroup_matrix {
  T e[Rows][Cols];
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;

template <typename T, int Cols, int Rows>
simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  for (int i = 0; i < Rows; ++i) {
    for (int j = 0; j < Cols; ++j) m.e[i][j] = value;
  }
  return m;
}

template <typename T, int Cols, int Rows>
void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, const T* src,
                    unsigned long elements_per_row = Cols) {
  for (int i = 0; i < Rows; ++i) {
    for (int j = 0; j < Cols; ++j) d.e[i][j] = src[i * elements_per_row + j];
  }
}

template <typename T, int Cols, int Rows>
void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, T* dst,
                     unsigned long elements_per_row = Cols) {
  if (metal_shim::SimdLane() != 0) return;
  for (int i = 0; i < Rows; ++i) {
    for (int j = 0; j < Cols; ++j) dst[i * elements_per_row + j] = a.e[i][j];
  }
}

// d = a * b + c.
template <typename T, int K, int Rows, int Cols>
void simdgroup_multiply_accumulate(simdgroup_matrix<T, Cols, Rows>& d,
                                   const simdgroup_matrix<T, K, Rows>& a,
                                   const simdgroup_matrix<T, Cols, K>& b,
                                   const simdgroup_matrix<T, Cols, Rows>& c) {
  simdgroup_matrix<T, Cols, Rows> r;
  for (int i = 0; i < Rows; ++i) {
    for (int j = 0; j < Cols; ++j) {
      T sum = c.e[i][j];
      for (int k = 0; k < K; ++k) sum += a.e[i][k] * b.e[k][j];
      r.e[i][j] = sum;
    }
  }
  d = r;
}

// SIMD-group functions over the active threads of the caller's SIMD-group.
inline float simd_sum(float x) { return metal_shim::SimdSum(x); }
inline float simd_max(float x) { return metal_shim::SimdMax(x); }
inline float simd_broadcast_first(float x) { return metal_shim::SimdBroadcastFirst(x); }

}  // namespace metal
