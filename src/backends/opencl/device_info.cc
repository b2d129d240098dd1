#include "backends/opencl/device_info.h"

namespace pocket::opencl {
namespace {

std::string PlatformString(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetPlatformInfo(p, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}

std::string DeviceString(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetDeviceInfo(d, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}

template <typename T>
T DeviceValue(cl_device_id d, cl_device_info what) {
  T value{};
  if (clGetDeviceInfo(d, what, sizeof(T), &value, nullptr) != CL_SUCCESS) return T{};
  return value;
}

bool HasExtension(const std::string& extensions, const std::string& name) {
  return (" " + extensions + " ").find(" " + name + " ") != std::string::npos;
}

DeviceInfo Describe(cl_platform_id platform, cl_device_id device) {
  DeviceInfo info;
  info.platform = platform;
  info.device = device;
  info.platform_name = PlatformString(platform, CL_PLATFORM_NAME);
  info.device_name = DeviceString(device, CL_DEVICE_NAME);
  info.device_version = DeviceString(device, CL_DEVICE_VERSION);
  info.c_version = DeviceString(device, CL_DEVICE_OPENCL_C_VERSION);
  info.is_gpu = (DeviceValue<cl_device_type>(device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) != 0;
  const std::string extensions = DeviceString(device, CL_DEVICE_EXTENSIONS);
  info.fp16 = HasExtension(extensions, "cl_khr_fp16");
  info.subgroups = HasExtension(extensions, "cl_khr_subgroups");
  info.max_work_group = DeviceValue<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  info.global_mem_bytes = DeviceValue<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
  return info;
}

}  // namespace

StatusOr<std::vector<DeviceInfo>> ListDevices() {
  cl_uint n_platforms = 0;
  const cl_int err = clGetPlatformIDs(0, nullptr, &n_platforms);
  if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && n_platforms == 0)) {
    return Status(StatusCode::kNotFound,
                  "no OpenCL platform is installed (install a GPU driver's OpenCL ICD, or "
                  "pocl-opencl-icd for the CPU), or use backend=cpu");
  }
  POCKET_RETURN_IF_ERROR(ClStatus(err, "listing OpenCL platforms"));
  std::vector<cl_platform_id> platforms(n_platforms);
  POCKET_RETURN_IF_ERROR(ClStatus(clGetPlatformIDs(n_platforms, platforms.data(), nullptr),
                                  "listing OpenCL platforms"));
  std::vector<DeviceInfo> devices;
  for (size_t p = 0; p < platforms.size(); ++p) {
    cl_uint n_devices = 0;
    // A platform without devices answers CL_DEVICE_NOT_FOUND; skip it.
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &n_devices) != CL_SUCCESS) {
      continue;
    }
    std::vector<cl_device_id> ids(n_devices);
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, n_devices, ids.data(), nullptr) !=
        CL_SUCCESS) {
      continue;
    }
    for (size_t d = 0; d < ids.size(); ++d) {
      DeviceInfo info = Describe(platforms[p], ids[d]);
      info.platform_index = p;
      info.device_index = d;
      devices.push_back(std::move(info));
    }
  }
  if (devices.empty()) {
    return Status(StatusCode::kNotFound,
                  "OpenCL platforms are installed but none has a device; check the driver, "
                  "or use backend=cpu");
  }
  return devices;
}

std::string DescribeDevices() {
  auto devices = ListDevices();
  if (!devices.ok()) return devices.status().message() + "\n";
  std::string out;
  for (const DeviceInfo& d : *devices) {
    out += StringPrintf("opencl:%zu.%zu  %s / %s (%s, %s, %.1f GiB, work-group %zu%s%s)\n",
                        d.platform_index, d.device_index, d.platform_name.c_str(),
                        d.device_name.c_str(), d.is_gpu ? "gpu" : "not a gpu", d.c_version.c_str(),
                        static_cast<double>(d.global_mem_bytes) / (1024.0 * 1024.0 * 1024.0),
                        d.max_work_group, d.fp16 ? ", fp16" : "", d.subgroups ? ", subgroups" : "");
  }
  return out;
}

}  // namespace pocket::opencl
