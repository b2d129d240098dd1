// What the shared GPU ops (backends/gpu/ops.h) need from an OpenCL
// Context: the launcher, the one place they touch clSetKernelArg /
// clEnqueueNDRangeKernel, and the hooks they find by argument-dependent
// lookup. Launch errors (a failed call, a size that does not fit the
// kernels' 32-bit indices) are kept and reported by the Run* call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/gpu/ops.h"
#include "backends/opencl/context.h"

namespace pocket::opencl {

class Launch {
 public:
  Launch(Context* ctx, gpu::Kernel id) : ctx_(ctx), kernel_(ctx->kernel(id)) {}

  // OpenCL binds whole buffers (the kernels take element offsets as
  // arguments), so `offset` must be 0.
  Launch& Arg(const Buffer& buffer, size_t offset = 0);
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

// Declared only: names the buffer type of the ops over a Context.
const Buffer* DeviceBuffer(const Context* ctx);
inline size_t ByteSize(const Buffer& buffer) { return buffer.bytes(); }
inline Launch StartLaunch(Context* ctx, gpu::Kernel id) { return Launch(ctx, id); }
// Writes host data to its scratch buffer; the in-order queue runs the
// write after every launch enqueued before it.
StatusOr<gpu::At<Buffer>> Stage(Context* ctx, gpu::Staged id, const void* data, size_t bytes);
inline StatusOr<const Buffer*> ScoresScratch(Context* ctx, size_t bytes) {
  return ctx->Scratch(ScratchId::kScores, bytes);
}
// linear.cl for every batch.
inline gpu::LinearTiling PickLinear(const Context*, size_t, size_t) { return {}; }

}  // namespace pocket::opencl
