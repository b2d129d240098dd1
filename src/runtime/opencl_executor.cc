#include "runtime/opencl_executor.h"

#ifdef POCKET_WITH_OPENCL

#include <algorithm>
#include <utility>

#include "runtime/kv_cache.h"

namespace pocket {

using opencl::Span;

StatusOr<std::unique_ptr<OpenClModel>> OpenClModel::Create(const Plan& plan) {
  std::unique_ptr<OpenClModel> model(new OpenClModel());
  POCKET_ASSIGN_OR_RETURN(model->ctx_, opencl::Context::Create());
  model->weights_ = std::make_unique<opencl::WeightStore>(model->ctx_.get());
  opencl::WeightStore& store = *model->weights_;
  model->steps_.resize(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    StepWeights& w = model->steps_[i];
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
  return model;
}

OpenClExecutor::OpenClExecutor(const Plan* plan, const OpenClModel* device, KvType kv_type,
                               size_t max_tokens)
    : plan_(plan),
      device_(device),
      kv_(device->context(), plan->kv_row, plan->kv_head_dim, kv_type, KvCache::kDefaultPageTokens,
          max_tokens) {}

size_t OpenClExecutor::scratch_bytes() const {
  size_t total = temp_.bytes();
  for (const opencl::Buffer& b : slots_) total += b.bytes();
  return total;
}

Status OpenClExecutor::EnsureRows(size_t n, Executor::Output output) {
  // As Executor: slots only the row-wise tail writes (the logits) hold one
  // row unless every row's logits are wanted.
  const size_t tail_rows =
      std::max(tail_rows_, output == Executor::Output::kAllRows ? n : size_t{1});
  n = std::max(n, rows_);
  if (n == rows_ && tail_rows == tail_rows_) return Status::Ok();
  opencl::Context* ctx = device_->context();
  std::vector<opencl::Buffer> slots(plan_->slot_width.size());
  for (size_t s = 0; s < slots.size(); ++s) {
    const size_t rows = plan_->slot_tail_only[s] ? tail_rows : n;
    POCKET_ASSIGN_OR_RETURN(slots[s], ctx->NewBuffer(rows * plan_->slot_width[s] * sizeof(float)));
  }
  size_t temp_floats = 0;
  for (size_t i = 0; i < plan_->steps.size(); ++i) {
    const size_t rows = i < plan_->row_wise_tail ? n : tail_rows;
    temp_floats = std::max(temp_floats, rows * plan_->steps[i].width);
  }
  POCKET_ASSIGN_OR_RETURN(temp_, ctx->NewBuffer(temp_floats * sizeof(float)));
  slots_ = std::move(slots);
  rows_ = n;
  tail_rows_ = tail_rows;
  return Status::Ok();
}

Status OpenClExecutor::Run(const int32_t* tokens, size_t n, size_t n_past, Executor::Output output,
                           float* logits) {
  std::lock_guard<std::mutex> lock(device_->mutex());
  POCKET_RETURN_IF_ERROR(EnsureRows(n, output));
  POCKET_RETURN_IF_ERROR(kv_.Reserve(n_past + n));
  positions_.resize(n);
  for (size_t i = 0; i < n; ++i) positions_[i] = static_cast<int32_t>(n_past + i);

  const size_t end = output == Executor::Output::kNone ? plan_->row_wise_tail : plan_->steps.size();
  for (size_t i = 0; i < end; ++i) {
    // As in Executor::Run: after the last attention the ops are row-wise,
    // so when only the last token's logits are wanted they run on it alone.
    const bool last_only = output == Executor::Output::kLastRow && i >= plan_->row_wise_tail;
    POCKET_RETURN_IF_ERROR(RunStep(i, n, n_past, last_only, tokens));
  }

  // The blocking read waits for every op enqueued above.
  const opencl::Buffer& result = slots_[plan_->logits_slot];
  const size_t row_bytes = plan_->vocab * sizeof(float);
  if (output == Executor::Output::kLastRow) {
    const size_t last = plan_->slot_tail_only[static_cast<size_t>(plan_->logits_slot)] ? 0 : n - 1;
    return device_->context()->Read(result, last * row_bytes, logits, row_bytes);
  }
  if (output == Executor::Output::kAllRows) {
    return device_->context()->Read(result, 0, logits, n * row_bytes);
  }
  return device_->context()->Finish();
}

Status OpenClExecutor::RunStep(size_t i, size_t n, size_t n_past, bool last_only,
                               const int32_t* tokens) {
  opencl::Context* ctx = device_->context();
  const PlanStep& s = plan_->steps[i];
  const OpenClModel::StepWeights& w = device_->step(i);
  const size_t r0 = last_only ? n - 1 : 0;
  const size_t rows = last_only ? 1 : n;
  // Tail-only slots hold just that row then.
  auto row_of = [&](int slot) {
    return last_only && plan_->slot_tail_only[static_cast<size_t>(slot)] ? 0 : r0;
  };
  auto value = [&](int k, size_t width) { return Span{&slots_[s.in[k]], row_of(s.in[k]) * width}; };
  const Span dst{&slots_[s.out], row_of(s.out) * s.width};
  const Span temp{&temp_, 0};
  const size_t bytes = rows * s.width * sizeof(float);
  auto copy = [&](Span from, Span to) {
    return ctx->Copy(*from.buffer, from.offset * sizeof(float), *to.buffer,
                     to.offset * sizeof(float), bytes);
  };
  // Ops that cannot write over an input compute into temp_ and copy.
  auto aliased = [&](int k) { return s.in[k] == s.out; };

  switch (s.op) {
    case OpKind::kEmbed:
      return opencl::Embed(ctx, w.weight, tokens + r0, rows, dst);
    case OpKind::kRmsNorm:
      return opencl::RmsNorm(ctx, value(0, s.in_width), *w.norm, rows, s.in_width, s.eps, dst);
    case OpKind::kHeadRmsNorm:
      if (!aliased(0)) POCKET_RETURN_IF_ERROR(copy(value(0, s.in_width), dst));
      return opencl::HeadRmsNorm(ctx, dst, *w.norm, rows, s.width / s.head_dim, s.head_dim, s.eps);
    case OpKind::kRope:
      if (!aliased(0)) POCKET_RETURN_IF_ERROR(copy(value(0, s.in_width), dst));
      return opencl::Rope(ctx, dst, rows, s.width / s.head_dim, s.head_dim, positions_.data() + r0,
                          s.theta, s.style);
    case OpKind::kLinear: {
      const Span out = aliased(0) ? temp : dst;
      POCKET_RETURN_IF_ERROR(
          opencl::Linear(ctx, value(0, s.in_width), rows, w.weight, w.bias, out));
      return aliased(0) ? copy(temp, dst) : Status::Ok();
    }
    case OpKind::kAttention: {
      const size_t kv_width = s.n_kv_heads * s.head_dim;
      const opencl::DeviceKvView view = kv_.View(s.layer);
      POCKET_RETURN_IF_ERROR(
          opencl::KvAppend(ctx, view, n_past, value(1, kv_width), value(2, kv_width), n));
      const bool via_temp = aliased(0) || aliased(1) || aliased(2);
      POCKET_RETURN_IF_ERROR(opencl::Attention(ctx, value(0, s.in_width), n, n_past, view,
                                               s.n_heads, s.n_kv_heads, s.head_dim,
                                               via_temp ? temp : dst));
      return via_temp ? copy(temp, dst) : Status::Ok();
    }
    case OpKind::kSwiglu:
    case OpKind::kAdd: {
      // Element-wise: out may alias the first input, not the second.
      const bool via_temp = aliased(1) && !aliased(0);
      const Span out = via_temp ? temp : dst;
      const size_t count = rows * s.width;
      POCKET_RETURN_IF_ERROR(
          s.op == OpKind::kSwiglu
              ? opencl::Swiglu(ctx, value(0, s.in_width), value(1, s.in_width), count, out)
              : opencl::Add(ctx, value(0, s.in_width), value(1, s.in_width), count, out));
      return via_temp ? copy(temp, dst) : Status::Ok();
    }
  }
  return Errorf(StatusCode::kInternal, "plan step %zu has an unknown op", i);
}

}  // namespace pocket

#endif  // POCKET_WITH_OPENCL
