// The compute kernels of the GPU backends, by the names their sources give
// them: first the op bodies of kernels/gpu, which every GPU backend
// compiles, then the entry points a backend adds for its own hardware
// (kernels/<backend>/). A backend indexes its compiled kernels by Kernel.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pocket::gpu {

enum class Kernel : uint32_t {
  kEmbed,
  kLinear,
  kRmsNorm,
  kRope,
  kSwiglu,
  kAdd,
  kKvAppend,
  kKvAppendQ8,
  kKvShift,
  kKvShiftQ8,
  kAttention,
  kLinearRows,
  kLinearMma
};
// Kernels of kernels/gpu: those before kLinearRows.
constexpr size_t kNumSharedKernels = 11;
constexpr size_t kNumKernels = 13;

// Kernel function names, in Kernel order.
inline constexpr const char* kKernelNames[kNumKernels] = {
    "embed",        "linear",   "rms_norm",    "rope",      "swiglu",      "add",       "kv_append",
    "kv_append_q8", "kv_shift", "kv_shift_q8", "attention", "linear_rows", "linear_mma"};

inline const char* KernelName(Kernel k) { return kKernelNames[static_cast<size_t>(k)]; }

}  // namespace pocket::gpu
