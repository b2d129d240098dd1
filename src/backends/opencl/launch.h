// Sets a kernel's arguments in order and enqueues it: the one place the
// ops touch clSetKernelArg / clEnqueueNDRangeKernel. Errors (a failed
// call, a size that does not fit the kernels' 32-bit indices) are kept and
// reported by the Run* call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/opencl/context.h"

namespace pocket::opencl {

class Launch {
 public:
  Launch(Context* ctx, KernelId id) : ctx_(ctx), kernel_(ctx->kernel(id)) {}

  Launch& Arg(const Buffer& buffer);
  Launch& Arg(size_t value);  // passed as uint
  Launch& Arg(float value);

  // One thread per item of [0, threads).
  Status RunThreads(size_t threads);
  // groups0 x groups1 work-groups of ctx->work_group() threads along dim 0.
  Status RunGroups(size_t groups0, size_t groups1);

 private:
  void Set(size_t size, const void* value);

  Context* ctx_;
  cl_kernel kernel_;
  cl_uint index_ = 0;
  Status status_;
};

}  // namespace pocket::opencl
