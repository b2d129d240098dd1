// What the Metal ops (ops.h) need from a compute command encoder. The host
// implements it over MTLComputeCommandEncoder (one command buffer per
// step); the CPU harness of tests/metal runs each dispatch through the
// Metal shim instead. Both bind arguments by the slot the ops give them,
// which is the [[buffer(n)]] slot the kernel declares.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/metal/pipelines.h"
#include "util/status.h"

namespace pocket::metal {

// A buffer in shared storage: `contents` is its CPU address. `handle` is
// the host's MTLBuffer (bridged), or the harness's own memory.
struct Buffer {
  void* handle = nullptr;
  uint8_t* contents = nullptr;
  size_t bytes = 0;
};

// Device scratch the ops reuse: each is written and read within one
// dispatch, and dispatches run in encoding order.
enum class ScratchId { kScores };
constexpr size_t kNumScratch = 1;

class Encoder {
 public:
  virtual ~Encoder() = default;

  // Threads per threadgroup of the reducing kernels (POCKET_WG of the
  // library).
  virtual size_t threads_per_group() const = 0;
  // Threads per SIMD-group (the pipelines' threadExecutionWidth).
  virtual size_t simd_width() const = 0;

  virtual void SetPipeline(Pipeline pipeline) = 0;
  // setBuffer:offset:atIndex: (offset in bytes).
  virtual void SetBuffer(uint32_t slot, const Buffer& buffer, size_t offset) = 0;
  // setBytes:length:atIndex: (a scalar argument).
  virtual void SetBytes(uint32_t slot, const void* data, size_t size) = 0;
  // dispatchThreadgroups: groups0 x groups1 threadgroups of
  // threads_per_group threads along x.
  virtual Status Dispatch(size_t groups0, size_t groups1, size_t threads_per_group) = 0;

  // A copy of `bytes` between (or within, not overlapping) buffers,
  // ordered after the dispatches encoded before it and before those after.
  virtual Status Copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
                      size_t bytes) = 0;

  // Host data a later dispatch of this command buffer reads (token ids,
  // rope tables), copied now into memory that nothing else encoded in the
  // same command buffer overwrites; *offset is where it starts in the
  // returned buffer.
  virtual StatusOr<const Buffer*> Upload(const void* data, size_t bytes, size_t* offset) = 0;
  // Scratch buffer `id` with room for at least `bytes`.
  virtual StatusOr<const Buffer*> Scratch(ScratchId id, size_t bytes) = 0;
};

}  // namespace pocket::metal
