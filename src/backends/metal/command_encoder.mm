#include "backends/metal/command_encoder.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace pocket::metal {

size_t ScratchBuffers::bytes() const {
  size_t total = upload_view.bytes;
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
  // 16-byte steps: setBuffer offsets stay aligned for any element type.
  size_t at = (upload_used_ + 15) / 16 * 16;
  if (scratch_->upload == nil || at + bytes > scratch_->upload_view.bytes) {
    if (scratch_->upload != nil) outgrown_.push_back(scratch_->upload);
    at = 0;
    const size_t size = std::max({2 * bytes, 2 * scratch_->upload_view.bytes, kMinUploadBytes});
    POCKET_ASSIGN_OR_RETURN(scratch_->upload, ctx_->NewBuffer(size));
    scratch_->upload_view = ViewOf(scratch_->upload);
  }
  if (bytes > 0) std::memcpy(scratch_->upload_view.contents + at, data, bytes);
  upload_used_ = at + bytes;
  *offset = at;
  return &scratch_->upload_view;
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
