#include "metal/device/device_test_encoder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>

#include "backends/metal/command_encoder.h"
#include "backends/metal/context.h"

namespace pocket::metal::device {

struct DeviceTestEncoder::Impl {
  std::unique_ptr<Context> ctx;
  ScratchBuffers scratch;
  std::unique_ptr<CommandEncoder> pending;  // the dispatch being encoded
  Pipeline pipeline = Pipeline::kEmbed;     // the last one set
  std::deque<id<MTLBuffer>> handles;
  std::deque<Buffer> buffers;

  CommandEncoder* Pending() {
    if (pending == nullptr) pending = std::make_unique<CommandEncoder>(ctx.get(), &scratch);
    return pending.get();
  }
  Status Flush() {
    if (pending == nullptr) return Status::Ok();
    const Status s = pending->Commit();
    pending.reset();
    return s;
  }
};

DeviceTestEncoder::DeviceTestEncoder() : impl_(std::make_unique<Impl>()) {
  auto ctx = Context::Create();
  // A Mac without a usable Metal device fails the tests, not skips them.
  if (!ctx.ok()) ADD_FAILURE() << ctx.status().ToString();
  if (ctx.ok()) impl_->ctx = std::move(ctx).value();
}

DeviceTestEncoder::~DeviceTestEncoder() = default;

size_t DeviceTestEncoder::threads_per_group() const { return kThreadsPerGroup; }
size_t DeviceTestEncoder::simd_width() const { return impl_->ctx->simd_width(); }

void DeviceTestEncoder::SetPipeline(Pipeline pipeline) {
  impl_->pipeline = pipeline;
  impl_->Pending()->SetPipeline(pipeline);
}

void DeviceTestEncoder::SetBuffer(uint32_t slot, const Buffer& buffer, size_t offset) {
  impl_->Pending()->SetBuffer(slot, buffer, offset);
}

void DeviceTestEncoder::SetBytes(uint32_t slot, const void* data, size_t size) {
  impl_->Pending()->SetBytes(slot, data, size);
}

Status DeviceTestEncoder::Dispatch(size_t groups0, size_t groups1, size_t threads_per_group) {
  POCKET_RETURN_IF_ERROR(impl_->Pending()->Dispatch(groups0, groups1, threads_per_group));
  ++dispatches_[static_cast<size_t>(impl_->pipeline)];
  return impl_->Flush();
}

Status DeviceTestEncoder::Copy(const Buffer& src, size_t src_offset, const Buffer& dst,
                               size_t dst_offset, size_t bytes) {
  POCKET_RETURN_IF_ERROR(impl_->Pending()->Copy(src, src_offset, dst, dst_offset, bytes));
  return impl_->Flush();
}

StatusOr<const Buffer*> DeviceTestEncoder::Upload(const void* data, size_t bytes, size_t* offset) {
  Buffer* b = NewBuffer(bytes);
  if (bytes > 0) std::memcpy(b->contents, data, bytes);
  *offset = 0;
  return b;
}

StatusOr<const Buffer*> DeviceTestEncoder::Scratch(ScratchId id, size_t bytes) {
  return impl_->Pending()->Scratch(id, bytes);
}

Buffer* DeviceTestEncoder::NewBuffer(size_t bytes) {
  auto handle = impl_->ctx->NewBuffer(bytes);
  EXPECT_TRUE(handle.ok()) << handle.status().ToString();
  impl_->handles.push_back(handle.ok() ? *handle : nil);
  impl_->buffers.push_back(ViewOf(impl_->handles.back()));
  impl_->buffers.back().bytes = bytes;  // the size asked for, as the ops check it
  return &impl_->buffers.back();
}

Buffer* DeviceTestEncoder::NewFloats(const std::vector<float>& values) {
  Buffer* b = NewBuffer(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(b->contents, values.data(), b->bytes);
  return b;
}

Buffer* DeviceTestEncoder::NewBytes(const std::vector<uint8_t>& bytes) {
  Buffer* b = NewBuffer(bytes.size());
  if (!bytes.empty()) std::memcpy(b->contents, bytes.data(), bytes.size());
  return b;
}

std::vector<float> DeviceTestEncoder::Floats(const Buffer& buffer, size_t offset, size_t count) {
  std::vector<float> v(count);
  if (count > 0) std::memcpy(v.data(), buffer.contents + offset * sizeof(float), count * 4);
  return v;
}

}  // namespace pocket::metal::device
