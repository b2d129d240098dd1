// The Encoder (encoder.h) over one Metal command buffer: a step's ops are
// all encoded into it (compute dispatches in order, blits between them for
// copies) and Commit() runs them with no CPU round trip in between.
// Objective-C++: included by the backend's .mm files only.
#pragma once

#import <Metal/Metal.h>

#include <array>
#include <vector>

#include "backends/metal/context.h"
#include "backends/metal/encoder.h"

namespace pocket::metal {

// Buffers the ops use as scratch, owned by a session and kept across its
// steps (they only grow): the ops' scratch by id, and the arena that holds
// one command buffer's uploads (the next command buffer reuses it: each
// step waits for its command buffer).
// The smallest upload arena: a step's token ids and rope tables for short
// chunks.
constexpr size_t kMinUploadBytes = size_t{64} << 10;

struct ScratchBuffers {
  std::array<Buffer, kNumScratch> buffers;
  std::array<id<MTLBuffer>, kNumScratch> handles;
  id<MTLBuffer> upload = nil;
  Buffer upload_view;
  size_t bytes() const;
};

class CommandEncoder final : public Encoder {
 public:
  CommandEncoder(const Context* ctx, ScratchBuffers* scratch);
  ~CommandEncoder() override;

  size_t threads_per_group() const override { return kThreadsPerGroup; }
  size_t simd_width() const override { return ctx_->simd_width(); }
  void SetPipeline(Pipeline pipeline) override;
  void SetBuffer(uint32_t slot, const Buffer& buffer, size_t offset) override;
  void SetBytes(uint32_t slot, const void* data, size_t size) override;
  Status Dispatch(size_t groups0, size_t groups1, size_t threads_per_group) override;
  Status Copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
              size_t bytes) override;
  StatusOr<const Buffer*> Upload(const void* data, size_t bytes, size_t* offset) override;
  StatusOr<const Buffer*> Scratch(ScratchId id, size_t bytes) override;

  // Runs everything encoded and waits for it; Internal with Metal's reason
  // when the GPU reports an error.
  Status Commit();

 private:
  id<MTLComputeCommandEncoder> Compute();

  const Context* ctx_;
  ScratchBuffers* scratch_;
  id<MTLCommandBuffer> command_buffer_ = nil;
  id<MTLComputeCommandEncoder> compute_ = nil;
  Pipeline pipeline_ = Pipeline::kEmbed;
  // Uploads of this command buffer fill the session's arena from the
  // start, never overwriting what an earlier dispatch reads; an arena
  // outgrown on the way is kept here until the command buffer is done.
  size_t upload_used_ = 0;
  std::vector<id<MTLBuffer>> outgrown_;
};

// A Buffer describing a Metal buffer (shared storage).
inline Buffer ViewOf(id<MTLBuffer> buffer) {
  Buffer b;
  b.handle = (__bridge void*)buffer;
  b.contents = static_cast<uint8_t*>([buffer contents]);
  b.bytes = buffer.length;
  return b;
}

inline id<MTLBuffer> HandleOf(const Buffer& b) { return (__bridge id<MTLBuffer>)b.handle; }

}  // namespace pocket::metal
