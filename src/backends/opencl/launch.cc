#include "backends/opencl/launch.h"

#include <limits>

namespace pocket::opencl {

void Launch::Set(size_t size, const void* value) {
  if (status_.ok()) {
    status_ = ClStatus(clSetKernelArg(kernel_, index_, size, value), "setting a kernel argument");
  }
  ++index_;
}

Launch& Launch::Arg(const Buffer& buffer, size_t offset) {
  if (offset != 0 && status_.ok()) {
    status_ = Errorf(StatusCode::kInvalidArgument,
                     "OpenCL kernel argument %u starts %zu bytes into its buffer; OpenCL binds "
                     "whole buffers",
                     index_, offset);
  }
  const cl_mem mem = buffer.mem();
  Set(sizeof(mem), &mem);
  return *this;
}

Launch& Launch::Arg(size_t value) {
  if (value > std::numeric_limits<cl_uint>::max() && status_.ok()) {
    status_ = Errorf(StatusCode::kOutOfRange,
                     "OpenCL kernel argument %u is %zu, beyond the kernels' 32-bit indices", index_,
                     value);
  }
  const cl_uint v = static_cast<cl_uint>(value);
  Set(sizeof(v), &v);
  return *this;
}

Launch& Launch::Arg(float value) {
  const cl_float v = value;
  Set(sizeof(v), &v);
  return *this;
}

Status Launch::RunThreads(size_t threads) {
  POCKET_RETURN_IF_ERROR(status_);
  if (threads == 0) return Status::Ok();
  // Round up to whole groups; the kernels ignore threads past the end.
  const size_t local = ctx_->work_group();
  const size_t global = (threads + local - 1) / local * local;
  return ClStatus(clEnqueueNDRangeKernel(ctx_->queue(), kernel_, 1, nullptr, &global, &local, 0,
                                         nullptr, nullptr),
                  "enqueueing an OpenCL kernel");
}

Status Launch::RunGroups(size_t groups0, size_t groups1) {
  POCKET_RETURN_IF_ERROR(status_);
  if (groups0 == 0 || groups1 == 0) return Status::Ok();
  const size_t local[2] = {ctx_->work_group(), 1};
  const size_t global[2] = {groups0 * local[0], groups1};
  return ClStatus(clEnqueueNDRangeKernel(ctx_->queue(), kernel_, 2, nullptr, global, local, 0,
                                         nullptr, nullptr),
                  "enqueueing an OpenCL kernel");
}

StatusOr<gpu::At<Buffer>> Stage(Context* ctx, gpu::Staged id, const void* data, size_t bytes) {
  const ScratchId scratch = id == gpu::Staged::kIds       ? ScratchId::kIds
                            : id == gpu::Staged::kRopeCos ? ScratchId::kRopeCos
                                                          : ScratchId::kRopeSin;
  POCKET_ASSIGN_OR_RETURN(const Buffer* buffer, ctx->Scratch(scratch, bytes));
  POCKET_RETURN_IF_ERROR(ctx->Write(*buffer, 0, data, bytes));
  return gpu::At<Buffer>{buffer, 0};
}

}  // namespace pocket::opencl
