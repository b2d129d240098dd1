// OpenCL device discovery: what platforms and devices this machine has and
// what each supports, for device selection and `pocket inspect --devices`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/opencl/cl.h"
#include "util/status.h"

namespace pocket::opencl {

struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  size_t platform_index = 0;
  size_t device_index = 0;  // within its platform
  std::string platform_name;
  std::string device_name;
  std::string device_version;  // "OpenCL 3.0 ..."
  std::string c_version;       // "OpenCL C 1.2 ..."
  bool is_gpu = false;
  bool fp16 = false;       // cl_khr_fp16
  bool subgroups = false;  // cl_khr_subgroups
  size_t max_work_group = 0;
  uint64_t global_mem_bytes = 0;
};

// Every device of every platform. NotFound (saying how to get one) when no
// OpenCL platform or device is installed.
StatusOr<std::vector<DeviceInfo>> ListDevices();

// A human-readable listing, one device a line:
//   "opencl:0.0  Portable Computing Language / pthread-... (not a gpu, OpenCL C 1.2 PoCL, 62.8 GiB,
//   ...)"
// or the reason no device is available.
std::string DescribeDevices();

}  // namespace pocket::opencl
