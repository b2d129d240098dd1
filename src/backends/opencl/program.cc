#include "backends/opencl/program.h"

#include "backends/opencl/kernel_sources.h"

namespace pocket::opencl {

std::string EmbeddedProgramSource() {
  std::string source;
  for (size_t i = 0; i < kNumKernelSources; ++i) {
    // Line markers make compiler errors name the .cl file and its line.
    source += StringPrintf("#line 1 \"%s\"\n", kKernelSources[i].name);
    source += kKernelSources[i].text;
    source += "\n";
  }
  return source;
}

std::string ProgramOptions(const DeviceInfo& device, size_t work_group) {
  return StringPrintf(
      "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -DPOCKET_WG=%zuu "
      "-DPOCKET_HAS_FP16=%d -DPOCKET_HAS_SUBGROUPS=%d",
      work_group, device.fp16 ? 1 : 0, device.subgroups ? 1 : 0);
}

StatusOr<ProgramHandle> BuildProgram(cl_context context, const DeviceInfo& device,
                                     const std::string& source, const std::string& options) {
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int err = CL_SUCCESS;
  ProgramHandle program(clCreateProgramWithSource(context, 1, &text, &length, &err));
  POCKET_RETURN_IF_ERROR(ClStatus(err, "creating the OpenCL program"));
  err = clBuildProgram(program.get(), 1, &device.device, options.c_str(), nullptr, nullptr);
  if (err == CL_SUCCESS) return program;

  std::string log;
  size_t size = 0;
  if (clGetProgramBuildInfo(program.get(), device.device, CL_PROGRAM_BUILD_LOG, 0, nullptr,
                            &size) == CL_SUCCESS &&
      size > 0) {
    log.resize(size);
    if (clGetProgramBuildInfo(program.get(), device.device, CL_PROGRAM_BUILD_LOG, size, log.data(),
                              nullptr) != CL_SUCCESS) {
      log.clear();
    }
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  return Errorf(StatusCode::kUnsupported,
                "the OpenCL compiler of '%s' (%s) rejected Pocket's kernels (%s); use "
                "backend=cpu, and report this with the log:\n%s",
                device.device_name.c_str(), device.c_version.c_str(), ClErrorName(err).c_str(),
                log.empty() ? "(the driver gave no build log)" : log.c_str());
}

}  // namespace pocket::opencl
