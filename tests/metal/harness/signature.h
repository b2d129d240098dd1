// The parameters of a Metal kernel as the Metal compiler sees them: read
// from the library source after preprocessing (with the shim's macros, which
// keep every [[...]] attribute), so that the harness binds each parameter by
// its declared [[buffer(n)]] slot or thread-position attribute, not by its
// place in the C++ parameter list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pocket::metal::harness {

enum class ParamRole {
  kBuffer,                       // [[buffer(slot)]]
  kThreadPositionInGrid,         // [[thread_position_in_grid]]
  kThreadPositionInThreadgroup,  // [[thread_position_in_threadgroup]]
  kThreadgroupPositionInGrid,    // [[threadgroup_position_in_grid]]
  kThreadsPerThreadgroup,        // [[threads_per_threadgroup]]
  kThreadgroupsPerGrid,          // [[threadgroups_per_grid]]
  kThreadIndexInThreadgroup,     // [[thread_index_in_threadgroup]]
  kThreadIndexInSimdgroup,       // [[thread_index_in_simdgroup]]
  kSimdgroupIndexInThreadgroup,  // [[simdgroup_index_in_threadgroup]]
  kSimdgroupsPerThreadgroup,     // [[simdgroups_per_threadgroup]]
  kThreadsPerSimdgroup,          // [[threads_per_simdgroup]]
};

struct KernelParam {
  std::string name;
  ParamRole role = ParamRole::kBuffer;
  uint32_t slot = 0;  // kBuffer only
};

// The parameters of kernel function `kernel` in preprocessed source `text`
// (its definition: `void kernel(` followed by parameters with attributes).
// False with *error set when it is missing, or a parameter has no
// attribute or one the harness does not know.
bool ParseKernelParams(const std::string& text, const std::string& kernel,
                       std::vector<KernelParam>* params, std::string* error);

}  // namespace pocket::metal::harness
