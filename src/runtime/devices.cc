#include "runtime/devices.h"

#include "backends/cpu/kernel_target.h"
#include "backends/registry.h"

namespace pocket {

std::string DescribeDevices() { return DescribeBackendDevices(); }

void AllowCpuMatrixExtension(bool allow) { cpu::AllowMatrixExtension(allow); }

}  // namespace pocket
