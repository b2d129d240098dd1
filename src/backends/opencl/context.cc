#include "backends/opencl/context.h"

#include <algorithm>

#include "backends/opencl/program.h"

namespace pocket::opencl {
namespace {

// 64 threads fill a SIMD group on every common GPU and leave most devices
// room for several groups per core; the tree reductions need a power of two.
constexpr size_t kPreferredWorkGroup = 64;

StatusOr<DeviceInfo> PickDevice(const ContextOptions& options) {
  POCKET_ASSIGN_OR_RETURN(std::vector<DeviceInfo> devices, ListDevices());
  if (options.platform >= 0 || options.device >= 0) {
    for (const DeviceInfo& d : devices) {
      if (d.platform_index == static_cast<size_t>(std::max(options.platform, 0)) &&
          d.device_index == static_cast<size_t>(std::max(options.device, 0))) {
        return d;
      }
    }
    return Errorf(StatusCode::kNotFound,
                  "OpenCL device %d.%d does not exist; this machine has %zu OpenCL devices, "
                  "numbered platform.device from 0.0",
                  options.platform, options.device, devices.size());
  }
  for (const DeviceInfo& d : devices) {
    if (d.is_gpu) return d;
  }
  return devices.front();
}

}  // namespace

Context::~Context() = default;

StatusOr<std::unique_ptr<Context>> Context::Create(const ContextOptions& options) {
  std::unique_ptr<Context> ctx(new Context());
  POCKET_ASSIGN_OR_RETURN(ctx->device_, PickDevice(options));
  const DeviceInfo& dev = ctx->device_;
  size_t wg = 1;
  while (wg * 2 <= std::min(kPreferredWorkGroup, dev.max_work_group)) wg *= 2;
  ctx->work_group_ = wg;

  cl_int err = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         reinterpret_cast<cl_context_properties>(dev.platform), 0};
  ctx->context_ = ContextHandle(clCreateContext(props, 1, &dev.device, nullptr, nullptr, &err));
  POCKET_RETURN_IF_ERROR(ClStatus(err, "creating the OpenCL context"));
  // clCreateCommandQueue is deprecated from OpenCL 2.0 but is the 1.2 call.
  ctx->queue_ = QueueHandle(clCreateCommandQueue(ctx->context_.get(), dev.device, 0, &err));
  POCKET_RETURN_IF_ERROR(ClStatus(err, "creating the OpenCL command queue"));

  POCKET_ASSIGN_OR_RETURN(
      ctx->program_,
      BuildProgram(ctx->context_.get(), dev, EmbeddedProgramSource(), ProgramOptions(dev, wg)));
  for (size_t i = 0; i < gpu::kNumSharedKernels; ++i) {
    ctx->kernels_[i] =
        KernelHandle(clCreateKernel(ctx->program_.get(), gpu::kKernelNames[i], &err));
    POCKET_RETURN_IF_ERROR(
        ClStatus(err, StringPrintf("creating OpenCL kernel '%s'", gpu::kKernelNames[i]).c_str()));
    size_t max_wg = 0;
    POCKET_RETURN_IF_ERROR(ClStatus(
        clGetKernelWorkGroupInfo(ctx->kernels_[i].get(), dev.device, CL_KERNEL_WORK_GROUP_SIZE,
                                 sizeof(max_wg), &max_wg, nullptr),
        "querying a kernel's work-group size"));
    if (max_wg < wg) {
      return Errorf(StatusCode::kUnsupported,
                    "OpenCL device '%s' runs kernel '%s' with at most %zu threads per group, "
                    "Pocket needs %zu; use backend=cpu",
                    dev.device_name.c_str(), gpu::kKernelNames[i], max_wg, wg);
    }
  }
  return ctx;
}

StatusOr<Buffer> Context::NewBuffer(size_t bytes) {
  cl_int err = CL_SUCCESS;
  // OpenCL has no empty buffers; a 4-byte one stands in.
  const size_t size = std::max<size_t>(bytes, 4);
  cl_mem mem = clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, size, nullptr, &err);
  POCKET_RETURN_IF_ERROR(
      ClStatus(err, StringPrintf("allocating %zu bytes on the OpenCL device", size).c_str()));
  return Buffer(mem, bytes);
}

Status Context::Write(const Buffer& dst, size_t offset, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  return ClStatus(clEnqueueWriteBuffer(queue_.get(), dst.mem(), CL_TRUE, offset, bytes, src, 0,
                                       nullptr, nullptr),
                  "writing to an OpenCL buffer");
}

Status Context::Read(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  return ClStatus(clEnqueueReadBuffer(queue_.get(), src.mem(), CL_TRUE, offset, bytes, dst, 0,
                                      nullptr, nullptr),
                  "reading an OpenCL buffer");
}

Status Context::Copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
                     size_t bytes) {
  if (bytes == 0) return Status::Ok();
  return ClStatus(clEnqueueCopyBuffer(queue_.get(), src.mem(), dst.mem(), src_offset, dst_offset,
                                      bytes, 0, nullptr, nullptr),
                  "copying between OpenCL buffers");
}

Status Context::Finish() {
  return ClStatus(clFinish(queue_.get()), "waiting for the OpenCL queue");
}

StatusOr<const Buffer*> Context::Scratch(ScratchId id, size_t bytes) {
  Buffer& b = scratch_[static_cast<size_t>(id)];
  if (b.bytes() < bytes) {
    // Grow by half again, so a slowly growing need (attention scores as the
    // context fills) reallocates O(log n) times. OpenCL keeps the old buffer
    // alive until the ops already enqueued on it have run.
    POCKET_ASSIGN_OR_RETURN(b, NewBuffer(std::max(bytes, b.bytes() + b.bytes() / 2)));
  }
  return &b;
}

size_t Context::scratch_bytes() const {
  size_t total = 0;
  for (const Buffer& b : scratch_) total += b.bytes();
  return total;
}

}  // namespace pocket::opencl
