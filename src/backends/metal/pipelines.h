// The Metal backend's compute pipelines: one per kernel function of the
// Metal library (library_source.h), named as the function is.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pocket::metal {

enum class Pipeline : uint32_t {
  kEmbed,
  kLinear,
  kLinearRows,
  kLinearMma,
  kRmsNorm,
  kRope,
  kSwiglu,
  kAdd,
  kKvAppend,
  kKvAppendQ8,
  kKvShift,
  kKvShiftQ8,
  kAttention
};
constexpr size_t kNumPipelines = 13;

// Kernel function names, in Pipeline order.
inline constexpr const char* kPipelineNames[kNumPipelines] = {
    "embed", "linear",    "linear_rows",  "linear_mma", "rms_norm",    "rope",     "swiglu",
    "add",   "kv_append", "kv_append_q8", "kv_shift",   "kv_shift_q8", "attention"};

inline const char* PipelineName(Pipeline p) { return kPipelineNames[static_cast<size_t>(p)]; }

}  // namespace pocket::metal
