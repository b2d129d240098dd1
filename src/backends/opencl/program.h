// Builds the kernel program from the sources embedded at build time.
#pragma once

#include <string>

#include "backends/opencl/cl.h"
#include "backends/opencl/device_info.h"
#include "util/status.h"

namespace pocket::opencl {

// kernels/opencl/prelude.cl and kernels/gpu/*.cl in program order, as one source text.
std::string EmbeddedProgramSource();

// Compiler options for `device`: the prelude's feature switches
// (POCKET_WG, POCKET_HAS_FP16, POCKET_HAS_SUBGROUPS) and exact division and
// sqrt (the CPU backend's rounding).
std::string ProgramOptions(const DeviceInfo& device, size_t work_group);

// Compiles `source` for `device`. When the compiler rejects it the Status
// (Unsupported) names the device and carries the compiler's build log.
StatusOr<ProgramHandle> BuildProgram(cl_context context, const DeviceInfo& device,
                                     const std::string& source, const std::string& options);

}  // namespace pocket::opencl
