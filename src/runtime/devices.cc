#include "runtime/devices.h"

#include <thread>

#include "backends/cpu/core_plan.h"
#include "backends/cpu/kernel_target.h"
#include "util/status.h"
#ifdef POCKET_WITH_OPENCL
#include "backends/opencl/device_info.h"
#endif

namespace pocket {

std::string DescribeDevices() {
  const cpu::CorePlan plan = cpu::ThisProcessCorePlan();
  std::string order;
  for (const int core : plan.order) order += (order.empty() ? "" : " ") + std::to_string(core);
  // The matrix unit, where prompts use one (kernel_target.h), and bf16
  // attention too where it multiplies bf16 (x86's AMX-BF16).
  std::string matrix;
  if (cpu::MatrixExtensionChosen()) {
    matrix = std::string(", prompts by ") + cpu::MatrixExtensionName();
    if (cpu::MatrixExtensionMultipliesBf16()) {
      matrix += std::string(", bf16 attention by ") + cpu::MatrixExtensionName();
    }
  }
  std::string out = StringPrintf(
      "cpu         %s kernels%s, %u hardware threads (targets here: %s)\n"
      "            %zu compute threads by default; cores fastest first: %s\n",
      cpu::KernelTargetName(), matrix.c_str(), std::thread::hardware_concurrency(),
      cpu::KernelTargetList(" ").c_str(), plan.default_threads, order.c_str());
  std::string not_run;
  for (const std::string& name : cpu::KernelTargetsNotRunHere()) not_run += " " + name;
  if (!not_run.empty()) out += "            compiled, not run by this CPU:" + not_run + "\n";
#ifdef POCKET_WITH_OPENCL
  out += opencl::DescribeDevices();
  if (!out.empty() && out.back() != '\n') out += '\n';
#else
  out += "opencl      not built into this library (configure with -DPOCKET_OPENCL=ON)\n";
#endif
  return out;
}

void AllowCpuMatrixExtension(bool allow) { cpu::AllowMatrixExtension(allow); }

}  // namespace pocket
