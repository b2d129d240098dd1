// How q4/q8 Linears multiply: a model option every backend reads (a backend
// without a faster path computes kF32 for both).
#pragma once

#include <cstdint>

namespace pocket {

// How Linear multiplies q4/q8 weights (plain dtypes always use f32 maths).
enum class QuantMath : uint8_t {
  // Activations stay f32: the reference-accurate path (docs/kernels.md).
  kF32 = 0,
  // Activations are quantized to int8 per weight group and multiplied with
  // the codes in integer SIMD (maddubs / VNNI / sdot). Faster; adds an error
  // bounded per group by (scale_x / 2) * sum |w - min| (docs/kernels.md).
  // Targets without an int8 dot product fall back to kF32.
  kInt8 = 1,
};

}  // namespace pocket
