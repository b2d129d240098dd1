#include "backends/metal/command_encoder.h"

#include <cstring>
#include <memory>

namespace pocket::metal {

size_t ScratchBuffers::bytes() const {
  size_t total = 0;
  for (const Buffer& b : buffers) total += b.bytes;
  return total;
}

CommandEncoder::CommandEncoder(const Context* ctx, ScratchBuffers* scratch)
    : ctx_(ctx), scratch_(scratch), command_buffer_([ctx->queue() commandBuffer]) {}

CommandEncoder::~CommandEncoder() {
  if (compute_ != nil) [compute_ endEncoding];
}

id<MTLComputeCommandEncoder> CommandEncoder::Compute() {
  if (compute_ == nil) compute_ = [command_buffer_ computeCommandEncoder];
  return compute_;
}

void CommandEncoder::SetPipeline(Pipeline pipeline) {
  pipeline_ = pipeline;
  [Compute() setComputePipelineState:ctx_->pipeline(pipeline)];
}

void CommandEncoder::SetBuffer(uint32_t slot, const Buffer& buffer, size_t offset) {
  [Compute() setBuffer:HandleOf(buffer) offset:offset atIndex:slot];
}

void CommandEncoder::SetBytes(uint32_t slot, const void* data, size_t size) {
  [Compute() setBytes:data length:size atIndex:slot];
}

Status CommandEncoder::Dispatch(size_t groups0, size_t groups1, size_t threads_per_group) {
  [Compute() dispatchThreadgroups:MTLSizeMake(groups0, groups1, 1)
            threadsPerThreadgroup:MTLSizeMake(threads_per_group, 1, 1)];
  return Status::Ok();
}

Status CommandEncoder::Copy(const Buffer& src, size_t src_offset, const Buffer& dst,
                            size_t dst_offset, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  // A blit runs between compute passes: end the current one (a later
  // dispatch opens the next), so the copy sees every dispatch before it.
  if (compute_ != nil) {
    [compute_ endEncoding];
    compute_ = nil;
  }
  id<MTLBlitCommandEncoder> blit = [command_buffer_ blitCommandEncoder];
  [blit copyFromBuffer:HandleOf(src)
           sourceOffset:src_offset
               toBuffer:HandleOf(dst)
      destinationOffset:dst_offset
                   size:bytes];
  [blit endEncoding];
  return Status::Ok();
}

StatusOr<const Buffer*> CommandEncoder::Upload(const void* data, size_t bytes, size_t* offset) {
  POCKET_ASSIGN_OR_RETURN(id<MTLBuffer> buffer, ctx_->NewBuffer(bytes));
  if (bytes > 0) std::memcpy([buffer contents], data, bytes);
  uploads_.push_back(buffer);
  upload_views_.push_back(std::make_unique<Buffer>(ViewOf(buffer)));
  *offset = 0;
  return upload_views_.back().get();
}

StatusOr<const Buffer*> CommandEncoder::Scratch(ScratchId id, size_t bytes) {
  const size_t i = static_cast<size_t>(id);
  if (scratch_->buffers[i].bytes < bytes) {
    // The command buffer keeps the old buffer alive for the dispatches
    // already encoded with it.
    POCKET_ASSIGN_OR_RETURN(scratch_->handles[i], ctx_->NewBuffer(bytes));
    scratch_->buffers[i] = ViewOf(scratch_->handles[i]);
  }
  return &scratch_->buffers[i];
}

Status CommandEncoder::Commit() {
  if (compute_ != nil) {
    [compute_ endEncoding];
    compute_ = nil;
  }
  [command_buffer_ commit];
  [command_buffer_ waitUntilCompleted];
  if (command_buffer_.status != MTLCommandBufferStatusCompleted) {
    NSError* error = command_buffer_.error;
    return Errorf(StatusCode::kInternal, "the Metal command buffer failed: %s",
                  error != nil ? error.localizedDescription.UTF8String : "no reason given");
  }
  return Status::Ok();
}

}  // namespace pocket::metal
