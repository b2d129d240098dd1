// One OpenCL device ready to run Pocket's ops: context, in-order command
// queue, the compiled kernels, and the scratch buffers the ops reuse.
// A Context is used by one thread at a time (kernel arguments are state).
#pragma once

#include <array>
#include <cstddef>
#include <memory>

#include "backends/gpu/kernels.h"
#include "backends/opencl/cl.h"
#include "backends/opencl/device_info.h"
#include "util/status.h"

namespace pocket::opencl {

struct ContextOptions {
  // Indices as ListDevices() reports them; negative picks the first GPU, or
  // the first device when there is no GPU.
  int platform = -1;
  int device = -1;
};

// Host-written or temporary data of the ops, one buffer each, grown on demand.
enum class ScratchId { kIds, kRopeCos, kRopeSin, kScores };
constexpr size_t kNumScratch = 4;

class Context {
 public:
  // NotFound when the machine has no OpenCL device (or not the one asked
  // for), Unsupported when its compiler rejects the kernels (with the log).
  static StatusOr<std::unique_ptr<Context>> Create(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& device() const { return device_; }
  // Threads per work-group of the reducing kernels (POCKET_WG).
  size_t work_group() const { return work_group_; }
  // One of the kernels of kernels/gpu (the program has no others).
  cl_kernel kernel(gpu::Kernel id) const { return kernels_[static_cast<size_t>(id)].get(); }
  cl_command_queue queue() const { return queue_.get(); }

  StatusOr<Buffer> NewBuffer(size_t bytes);
  // Blocking copies between host memory and a buffer, ordered after every
  // op enqueued before them.
  Status Write(const Buffer& dst, size_t offset, const void* src, size_t bytes);
  Status Read(const Buffer& src, size_t offset, void* dst, size_t bytes);
  // Device-side copy of `bytes` from src at src_offset to dst at
  // dst_offset (byte offsets), enqueued.
  Status Copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
              size_t bytes);
  // Waits for every enqueued op.
  Status Finish();

  // Scratch buffer `id` with room for at least `bytes`. Ops run in queue
  // order, so an op may overwrite a scratch buffer an earlier op still reads.
  StatusOr<const Buffer*> Scratch(ScratchId id, size_t bytes);
  // Bytes held in scratch buffers.
  size_t scratch_bytes() const;

 private:
  Context() = default;

  DeviceInfo device_;
  size_t work_group_ = 0;
  ContextHandle context_;
  QueueHandle queue_;
  ProgramHandle program_;
  std::array<KernelHandle, gpu::kNumSharedKernels> kernels_;
  std::array<Buffer, kNumScratch> scratch_;
};

}  // namespace pocket::opencl
