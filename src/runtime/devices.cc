#include "runtime/devices.h"

#include <thread>

#include "backends/cpu/kernel_target.h"
#include "util/status.h"
#ifdef POCKET_WITH_OPENCL
#include "backends/opencl/device_info.h"
#endif

namespace pocket {

std::string DescribeDevices() {
  std::string out = StringPrintf("cpu         %s kernels, %u hardware threads (targets here: %s)\n",
                                 cpu::KernelTargetName(), std::thread::hardware_concurrency(),
                                 cpu::KernelTargetList(" ").c_str());
#ifdef POCKET_WITH_OPENCL
  out += opencl::DescribeDevices();
  if (!out.empty() && out.back() != '\n') out += '\n';
#else
  out += "opencl      not built into this library (configure with -DPOCKET_OPENCL=ON)\n";
#endif
  return out;
}

}  // namespace pocket
