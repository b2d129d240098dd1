// The OpenCL backend (registry name "opencl"): the model's weights are
// uploaded once (OpenClBackend, shared by its sessions) and each session
// keeps its activations and KV cache on the device (OpenClSession); only
// the logits come back to the host. The plan walker gives the steps and
// their rows, as on the CPU, op for op.
#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/gpu/device_backend.h"
#include "backends/gpu/session.h"
#include "backends/gpu/step.h"
#include "backends/opencl/context.h"
#include "backends/opencl/device_info.h"
#include "backends/opencl/kv_cache.h"
#include "backends/opencl/ops.h"
#include "backends/opencl/weights.h"
#include "backends/plan_walker.h"
#include "backends/registry.h"

namespace pocket {
namespace opencl {
namespace {

// Positions the KV buffers grow by.
constexpr size_t kKvGrowTokens = 64;

// The device, and every weight of the plan on it.
class OpenClBackend final : public gpu::DeviceBackend<Buffer> {
 public:
  // NotFound when the machine has no OpenCL device; BudgetExceeded when the
  // weights do not fit in its memory.
  static StatusOr<std::unique_ptr<Backend>> Create(const BackendContext& context);

  const char* name() const override { return "opencl"; }
  size_t device_weight_bytes() const override { return weights_->bytes(); }
  std::unique_ptr<BackendSession> NewSession(const BackendSessionOptions& options) const override;

  // The context runs one session's ops at a time (kernel arguments are
  // shared state): hold mutex() while using it.
  Context* context() const { return ctx_.get(); }

 private:
  OpenClBackend() = default;

  std::unique_ptr<Context> ctx_;
  std::unique_ptr<WeightStore> weights_;
};

StatusOr<std::unique_ptr<Backend>> OpenClBackend::Create(const BackendContext& context) {
  const Plan& plan = *context.plan;
  std::unique_ptr<OpenClBackend> backend(new OpenClBackend());
  backend->plan_ = &plan;
  POCKET_ASSIGN_OR_RETURN(backend->ctx_, Context::Create());
  backend->weights_ = std::make_unique<WeightStore>(backend->ctx_.get());
  WeightStore& store = *backend->weights_;
  backend->steps_.resize(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    gpu::StepWeights<Buffer>& w = backend->steps_[i];
    if (s.op == OpKind::kEmbed || s.op == OpKind::kLinear) {
      POCKET_ASSIGN_OR_RETURN(w.weight, store.Upload(s.weight));
    }
    if (s.norm != nullptr) {
      const size_t count = s.op == OpKind::kHeadRmsNorm ? s.head_dim : s.in_width;
      POCKET_ASSIGN_OR_RETURN(w.norm, store.UploadF32(s.norm, count));
    }
    if (s.bias != nullptr) {
      POCKET_ASSIGN_OR_RETURN(w.bias, store.UploadF32(s.bias, s.width));
    }
  }
  return std::unique_ptr<Backend>(std::move(backend));
}

// One session's device state: activation slots and the KV cache.
class OpenClSession final : public gpu::KvSession<DeviceKvCache> {
 public:
  OpenClSession(const OpenClBackend* device, const BackendSessionOptions& options)
      : KvSession("opencl", &device->mutex(), options.kv_type, device->context(),
                  device->plan().kv_row, device->plan().kv_head_dim, options.kv_type, kKvGrowTokens,
                  options.max_tokens),
        plan_(device->plan()),
        device_(device) {}

  // Errors are device failures (e.g. out of memory), after which positions
  // from n_past on hold nothing valid.
  Status Run(const int32_t* tokens, size_t n, size_t n_past, BackendOutput output,
             float* logits) override;

  // Exactly the steps n_tokens needs: the runtime reserves only what its
  // budget allows, and doubling could pass it.
  Status Reserve(size_t n_tokens) override {
    POCKET_RETURN_IF_ERROR(CheckType());
    std::lock_guard<std::mutex> lock(device_->mutex());
    return kv_.Reserve(n_tokens, n_tokens);
  }
  Status Drop(size_t begin, size_t count, size_t n_tokens) override {
    std::lock_guard<std::mutex> lock(device_->mutex());
    return kv_.Drop(begin, count, n_tokens, plan_.kv_rope);
  }
  Status ExportRows(size_t n_tokens, const ByteSink& sink) const override {
    std::lock_guard<std::mutex> lock(device_->mutex());
    return kv_.Write(n_tokens, sink);
  }
  Status ValidateRows(size_t n_tokens, const uint8_t* data, size_t size) const override {
    return kv_.Validate(n_tokens, data, size);
  }
  Status ImportRows(size_t n_tokens, const uint8_t* data) override {
    std::lock_guard<std::mutex> lock(device_->mutex());
    return kv_.Read(n_tokens, data);
  }

  // Device bytes held by the activations.
  size_t scratch_bytes() const override {
    size_t total = temp_.bytes();
    for (const Buffer& b : slots_) total += b.bytes();
    return total;
  }
  size_t ScratchBytesFor(size_t n, BackendOutput output) const override {
    return SlotAndTempFloats(plan_, n, output) * sizeof(float);
  }
  void ReleaseScratch() override {
    std::lock_guard<std::mutex> lock(device_->mutex());
    slots_ = std::vector<Buffer>();
    temp_ = Buffer();
    rows_ = tail_rows_ = 0;
  }

 private:
  Status EnsureRows(size_t n, BackendOutput output);

  const Plan& plan_;
  const OpenClBackend* device_;
  size_t rows_ = 0;       // rows every slot can hold
  size_t tail_rows_ = 0;  // rows the tail-only slots can hold
  std::vector<Buffer> slots_;
  Buffer temp_;  // for ops whose output aliases an input
  std::vector<int32_t> positions_;
};

std::unique_ptr<BackendSession> OpenClBackend::NewSession(
    const BackendSessionOptions& options) const {
  return std::make_unique<OpenClSession>(this, options);
}

Status OpenClSession::EnsureRows(size_t n, BackendOutput output) {
  const size_t tail_rows = std::max(tail_rows_, TailRows(n, output));
  n = std::max(n, rows_);
  if (n == rows_ && tail_rows == tail_rows_) return Status::Ok();
  Context* ctx = device_->context();
  std::vector<Buffer> slots(plan_.slot_width.size());
  for (size_t s = 0; s < slots.size(); ++s) {
    const size_t floats = SlotRows(plan_, s, n, tail_rows) * plan_.slot_width[s];
    POCKET_ASSIGN_OR_RETURN(slots[s], ctx->NewBuffer(floats * sizeof(float)));
  }
  POCKET_ASSIGN_OR_RETURN(temp_, ctx->NewBuffer(TempFloats(plan_, n, tail_rows) * sizeof(float)));
  slots_ = std::move(slots);
  rows_ = n;
  tail_rows_ = tail_rows;
  return Status::Ok();
}

Status OpenClSession::Run(const int32_t* tokens, size_t n, size_t n_past, BackendOutput output,
                          float* logits) {
  POCKET_RETURN_IF_ERROR(CheckType());
  std::lock_guard<std::mutex> lock(device_->mutex());
  POCKET_RETURN_IF_ERROR(EnsureRows(n, output));
  POCKET_RETURN_IF_ERROR(kv_.Reserve(n_past + n));
  positions_.resize(n);
  for (size_t i = 0; i < n; ++i) positions_[i] = static_cast<int32_t>(n_past + i);
  Context* ctx = device_->context();
  const gpu::RunTokens run{tokens, positions_.data(), n, n_past};
  POCKET_RETURN_IF_ERROR(WalkPlan(plan_, n, output, WalkOptions(), [&](const WalkStep& w) {
    return gpu::RunStep(ctx, w, device_->step(w.index), {&slots_, &temp_}, kv_, run);
  }));

  // The blocking read waits for every op enqueued above.
  if (output == BackendOutput::kNone) return ctx->Finish();
  const size_t row_bytes = plan_.vocab * sizeof(float);
  const size_t rows = output == BackendOutput::kAllRows ? n : 1;
  return ctx->Read(slots_[plan_.logits_slot], LogitsRow(plan_, n, output) * row_bytes, logits,
                   rows * row_bytes);
}

}  // namespace
}  // namespace opencl

BackendEntry OpenClBackendEntry() {
  return {"opencl", &opencl::OpenClBackend::Create, &opencl::DescribeDevices};
}

}  // namespace pocket
