// The Metal backend (registry name "metal"): the model's weights stay in
// the mapped file, wrapped without a copy as one shared-storage buffer
// (MetalBackend), and each session keeps its activations and KV cache in
// shared-storage buffers (MetalSession). A run encodes every step of the
// plan into one command buffer and waits once; the logits are read from
// shared memory.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/gpu/device_backend.h"
#include "backends/gpu/session.h"
#include "backends/gpu/step.h"
#include "backends/metal/command_encoder.h"
#include "backends/metal/context.h"
#include "backends/metal/kv_cache.h"
#include "backends/metal/kv_rows.h"
#include "backends/metal/ops.h"
#include "backends/plan_walker.h"
#include "backends/registry.h"
#include "format/pocket_file.h"
#include "format/reader.h"
#include "quant/rows16.h"

namespace pocket {
namespace metal {
namespace {

// Positions the KV buffers grow by.
constexpr size_t kKvGrowTokens = 64;

// Bound on the attention scores scratch (gpu/ops-inl.h batches queries under it).
constexpr size_t kMaxScoreBytes = size_t{16} << 20;

class MetalBackend final : public gpu::DeviceBackend<Buffer> {
 public:
  static StatusOr<std::unique_ptr<Backend>> Create(const BackendContext& context);

  const char* name() const override { return "metal"; }
  // Only what had to be copied: rows16 weights unpacked for the planar
  // kernels, and a file whose data section is not page aligned.
  size_t device_weight_bytes() const override { return copied_bytes_; }
  std::unique_ptr<BackendSession> NewSession(const BackendSessionOptions& options) const override;

  const Context* context() const { return ctx_.get(); }

 private:
  MetalBackend() = default;

  // The buffer and byte offset holding `bytes` at `data`: inside the file's
  // buffer where it lies there, else a copy (counted in copied_bytes_).
  StatusOr<std::pair<const Buffer*, size_t>> Place(const void* data, size_t bytes);
  StatusOr<const Buffer*> Copied(const void* key, const void* data, size_t bytes);

  std::unique_ptr<Context> ctx_;
  const uint8_t* file_data_ = nullptr;
  size_t file_data_size_ = 0;
  id<MTLBuffer> file_buffer_ = nil;
  Buffer file_view_;
  std::map<const void*, id<MTLBuffer>> copies_;
  std::map<const void*, std::unique_ptr<Buffer>> copy_views_;
  size_t copied_bytes_ = 0;
};

StatusOr<const Buffer*> MetalBackend::Copied(const void* key, const void* data, size_t bytes) {
  auto it = copy_views_.find(key);
  if (it != copy_views_.end()) return it->second.get();
  id<MTLBuffer> buffer = [ctx_->device() newBufferWithBytes:data
                                                     length:bytes
                                                    options:MTLResourceStorageModeShared];
  if (buffer == nil) {
    return Errorf(StatusCode::kBudgetExceeded, "the Metal device will not hold %zu more bytes",
                  bytes);
  }
  copies_[key] = buffer;
  copied_bytes_ += bytes;
  return (copy_views_[key] = std::make_unique<Buffer>(ViewOf(buffer))).get();
}

StatusOr<std::pair<const Buffer*, size_t>> MetalBackend::Place(const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (file_buffer_ != nil && p >= file_data_ && p + bytes <= file_data_ + file_data_size_) {
    return std::make_pair(static_cast<const Buffer*>(&file_view_),
                          static_cast<size_t>(p - file_data_));
  }
  POCKET_ASSIGN_OR_RETURN(const Buffer* copy, Copied(data, data, bytes));
  return std::make_pair(copy, size_t{0});
}

StatusOr<std::unique_ptr<Backend>> MetalBackend::Create(const BackendContext& context) {
  const Plan& plan = *context.plan;
  std::unique_ptr<MetalBackend> b(new MetalBackend());
  b->plan_ = &plan;
  POCKET_ASSIGN_OR_RETURN(b->ctx_, Context::Create());
  // The data section starts on a 16 KiB boundary of the file (Apple's page
  // size), so a mapped file's section is page aligned and Metal can use
  // its pages in place; its last page is whole in the mapping.
  const PocketFile& file = *context.file;
  b->file_data_ = file.bytes() + file.data_offset();
  b->file_data_size_ = static_cast<size_t>(file.data_size());
  if (reinterpret_cast<uintptr_t>(b->file_data_) % kDataAlignment == 0) {
    const size_t length =
        (b->file_data_size_ + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
    b->file_buffer_ =
        [b->ctx_->device() newBufferWithBytesNoCopy:const_cast<uint8_t*>(b->file_data_)
                                             length:length
                                            options:MTLResourceStorageModeShared
                                        deallocator:nil];
    if (b->file_buffer_ != nil) b->file_view_ = ViewOf(b->file_buffer_);
  }
  b->steps_.resize(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    gpu::StepWeights<Buffer>& w = b->steps_[i];
    if (s.op == OpKind::kEmbed || s.op == OpKind::kLinear) {
      const WeightView& v = s.weight;
      uint64_t bytes = 0;
      if (v.data == nullptr || !TensorByteSize(v.dtype, v.rows, v.cols, v.group, &bytes)) {
        return Errorf(StatusCode::kInvalidArgument, "step %zu: its weight has no valid size", i);
      }
      w.weight.dtype = v.dtype;
      w.weight.group = v.group;
      w.weight.rows = v.rows;
      w.weight.cols = v.cols;
      if (v.layout == TensorLayout::kRows16) {
        // The kernels read planar q4 and q8: a rows16 weight is unpacked
        // once into a copy of its own.
        const std::vector<uint8_t> planar = v.dtype == DType::kQ8
                                                ? UnpackQ8Rows16(v.data, v.rows, v.cols)
                                                : UnpackQ4Rows16(v.data, v.rows, v.cols, v.group);
        POCKET_ASSIGN_OR_RETURN(w.weight.buffer, b->Copied(v.data, planar.data(), planar.size()));
      } else {
        POCKET_ASSIGN_OR_RETURN(auto placed, b->Place(v.data, static_cast<size_t>(bytes)));
        w.weight.buffer = placed.first;
        w.weight.offset = placed.second;
      }
    }
    // Norm and bias vectors are f32 in the file; ops bind them at offset 0,
    // so each gets a buffer of its own.
    if (s.norm != nullptr) {
      const size_t count = s.op == OpKind::kHeadRmsNorm ? s.head_dim : s.in_width;
      POCKET_ASSIGN_OR_RETURN(w.norm, b->Copied(s.norm, s.norm, count * sizeof(float)));
    }
    if (s.bias != nullptr) {
      POCKET_ASSIGN_OR_RETURN(w.bias, b->Copied(s.bias, s.bias, s.width * sizeof(float)));
    }
  }
  return std::unique_ptr<Backend>(std::move(b));
}

class MetalSession final : public gpu::KvSession<KvCache> {
 public:
  MetalSession(const MetalBackend* backend, const BackendSessionOptions& options)
      : KvSession("metal", &backend->mutex(), options.kv_type, backend->context(),
                  backend->plan().kv_row, backend->plan().kv_head_dim, options.kv_type,
                  kKvGrowTokens, options.max_tokens),
        plan_(backend->plan()),
        backend_(backend),
        max_tokens_(options.max_tokens) {}

  Status Run(const int32_t* tokens, size_t n, size_t n_past, BackendOutput output,
             float* logits) override;

  Status Reserve(size_t n_tokens) override {
    POCKET_RETURN_IF_ERROR(CheckType());
    std::lock_guard<std::mutex> lock(backend_->mutex());
    return kv_.Reserve(n_tokens);
  }
  Status Drop(size_t begin, size_t count, size_t n_tokens) override;
  // The GPU is idle between calls (every run waits for its command
  // buffer), so the rows are CPU copies of shared memory.
  Status ExportRows(size_t n_tokens, const ByteSink& sink) const override {
    std::lock_guard<std::mutex> lock(backend_->mutex());
    return ExportKvRows(kv_.Views(), n_tokens, sink);
  }
  Status ValidateRows(size_t n_tokens, const uint8_t* data, size_t size) const override {
    return ValidateKvRows(kv_.Views(), n_tokens, data, size);
  }
  Status ImportRows(size_t n_tokens, const uint8_t* data) override {
    std::lock_guard<std::mutex> lock(backend_->mutex());
    return ImportKvRows(kv_.Views(), n_tokens, data);
  }

  size_t scratch_bytes() const override {
    size_t total = temp_.bytes + scratch_.bytes();
    for (const Buffer& b : slots_) total += b.bytes;
    return total;
  }
  size_t ScratchBytesFor(size_t n, BackendOutput output) const override {
    return SlotAndTempFloats(plan_, n, output) * sizeof(float) + ScoreBytesFor(n) +
           UploadBytesFor(n);
  }
  void ReleaseScratch() override {
    std::lock_guard<std::mutex> lock(backend_->mutex());
    slots_.clear();
    slot_handles_.clear();
    temp_ = Buffer();
    temp_handle_ = nil;
    scratch_ = ScratchBuffers();
    rows_ = tail_rows_ = 0;
  }

 private:
  // The attention scores of n queries over up to max_tokens positions.
  size_t ScoreBytesFor(size_t n) const {
    size_t heads = 0;
    for (const PlanStep& s : plan_.steps) heads = std::max(heads, s.n_heads);
    return std::min(kMaxScoreBytes, n * heads * max_tokens_ * sizeof(float));
  }
  // The upload arena after runs of n tokens: their token ids and every rope
  // step's tables, doubled as the arena grows.
  size_t UploadBytesFor(size_t n) const {
    size_t bytes = n * sizeof(int32_t) + 16;
    for (const PlanStep& s : plan_.steps) {
      if (s.op == OpKind::kRope) bytes += 2 * (n * (s.head_dim / 2) * sizeof(float) + 16);
    }
    return std::max(2 * bytes, kMinUploadBytes);
  }
  Status EnsureRows(size_t n, BackendOutput output);

  const Plan& plan_;
  const MetalBackend* backend_;
  size_t max_tokens_;
  size_t rows_ = 0;
  size_t tail_rows_ = 0;
  std::vector<id<MTLBuffer>> slot_handles_;
  std::vector<Buffer> slots_;
  id<MTLBuffer> temp_handle_ = nil;
  Buffer temp_;  // for ops whose output aliases an input
  ScratchBuffers scratch_;
  std::vector<int32_t> positions_;
};

std::unique_ptr<BackendSession> MetalBackend::NewSession(
    const BackendSessionOptions& options) const {
  return std::make_unique<MetalSession>(this, options);
}

Status MetalSession::EnsureRows(size_t n, BackendOutput output) {
  const size_t tail_rows = std::max(tail_rows_, TailRows(n, output));
  n = std::max(n, rows_);
  if (n == rows_ && tail_rows == tail_rows_) return Status::Ok();
  const Context* ctx = backend_->context();
  std::vector<id<MTLBuffer>> handles(plan_.slot_width.size());
  std::vector<Buffer> slots(handles.size());
  for (size_t s = 0; s < slots.size(); ++s) {
    const size_t floats = SlotRows(plan_, s, n, tail_rows) * plan_.slot_width[s];
    POCKET_ASSIGN_OR_RETURN(handles[s], ctx->NewBuffer(floats * sizeof(float)));
    slots[s] = ViewOf(handles[s]);
  }
  POCKET_ASSIGN_OR_RETURN(temp_handle_,
                          ctx->NewBuffer(TempFloats(plan_, n, tail_rows) * sizeof(float)));
  temp_ = ViewOf(temp_handle_);
  slot_handles_ = std::move(handles);
  slots_ = std::move(slots);
  rows_ = n;
  tail_rows_ = tail_rows;
  return Status::Ok();
}

Status MetalSession::Run(const int32_t* tokens, size_t n, size_t n_past, BackendOutput output,
                         float* logits) {
  POCKET_RETURN_IF_ERROR(CheckType());
  std::lock_guard<std::mutex> lock(backend_->mutex());
  @autoreleasepool {
    POCKET_RETURN_IF_ERROR(EnsureRows(n, output));
    POCKET_RETURN_IF_ERROR(kv_.Reserve(n_past + n));
    positions_.resize(n);
    for (size_t i = 0; i < n; ++i) positions_[i] = static_cast<int32_t>(n_past + i);
    CommandEncoder enc(backend_->context(), &scratch_);
    const gpu::RunTokens run{tokens, positions_.data(), n, n_past};
    POCKET_RETURN_IF_ERROR(WalkPlan(plan_, n, output, WalkOptions(), [&](const WalkStep& w) {
      return gpu::RunStep(&enc, w, backend_->step(w.index), {&slots_, &temp_}, kv_, run);
    }));
    POCKET_RETURN_IF_ERROR(enc.Commit());
  }
  if (output == BackendOutput::kNone) return Status::Ok();
  const size_t row_bytes = plan_.vocab * sizeof(float);
  const size_t rows = output == BackendOutput::kAllRows ? n : 1;
  std::memcpy(logits,
              slots_[static_cast<size_t>(plan_.logits_slot)].contents +
                  LogitsRow(plan_, n, output) * row_bytes,
              rows * row_bytes);
  return Status::Ok();
}

Status MetalSession::Drop(size_t begin, size_t count, size_t n_tokens) {
  if (count == 0 || begin + count > n_tokens) return Status::Ok();
  std::lock_guard<std::mutex> lock(backend_->mutex());
  @autoreleasepool {
    CommandEncoder enc(backend_->context(), &scratch_);
    for (size_t l = 0; l < kv_.layers(); ++l) {
      if (kv_.row(l) == 0) continue;
      POCKET_RETURN_IF_ERROR(KvShift(&enc, kv_.View(l), begin, begin + count,
                                     n_tokens - begin - count,
                                     l < plan_.kv_rope.size() ? plan_.kv_rope[l] : KvRope()));
    }
    return enc.Commit();
  }
}

}  // namespace
}  // namespace metal

BackendEntry MetalBackendEntry() {
  return {"metal", &metal::MetalBackend::Create, &metal::DescribeDevices};
}

}  // namespace pocket
