#include "backends/cpu/executor.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/parallel.h"

namespace pocket::cpu {

namespace {

// Rope table floats per row: enough for the widest rotated head.
size_t RopeTableRowFloats(const Plan& plan) {
  size_t floats = 0;
  for (const PlanStep& s : plan.steps) {
    if (s.op == OpKind::kRope) floats = std::max(floats, RopeTableFloats(s.head_dim));
  }
  return floats;
}

// Resizes to exactly `size` floats when it must grow: scratch holds nothing
// between runs, and an exact size keeps the budget's count exact. False
// where the memory cannot be had.
bool Grow(CacheLineBuffer<float>* v, size_t size) { return v->size() >= size || v->Reset(size); }

// Rows per task below which a row-wise op runs on the calling thread: a
// decoded token (one row) is not worth waking the pool for.
constexpr size_t kMinRowsPerTask = 8;

// Calls fn(r0, r1) over slices of [0, rows) on the pool. Row-wise ops
// (embedding, norms, rope, swiglu, add) then take their share of a prefill
// instead of leaving the other threads waiting for the calling one.
template <typename Fn>
void ForRowSlices(ThreadPool* pool, size_t rows, const Fn& fn) {
  const size_t tasks = std::min(NumThreads(pool), rows / kMinRowsPerTask);
  if (tasks <= 1) return fn(size_t{0}, rows);
  ParallelOrInline(pool, tasks, [&](size_t task, size_t) {
    size_t r0, r1;
    SplitRange(rows, 1, tasks, task, &r0, &r1);
    if (r0 < r1) fn(r0, r1);
  });
}

}  // namespace

Executor::Executor(const Plan* plan, ThreadPool* pool, QuantMath math, AttentionMath attention_math,
                   const BackendSessionOptions& options)
    : plan_(plan),
      pool_(pool),
      math_(math),
      attention_math_(attention_math),
      kv_(plan->kv_row, plan->kv_head_dim, options.kv_type, options.kv_page_tokens,
          options.max_tokens) {}

size_t Executor::ScratchBytesFor(const Plan& plan, size_t n, BackendOutput output) {
  return (SlotAndTempFloats(plan, n, output) + n * RopeTableRowFloats(plan)) * sizeof(float) +
         n * sizeof(int32_t);
}

Status Executor::EnsureRows(size_t n, BackendOutput output) {
  const size_t tail_rows = std::max(tail_rows_, TailRows(n, output));
  n = std::max(n, rows_);
  if (n == rows_ && tail_rows == tail_rows_) return Status::Ok();
  slots_.resize(plan_->slot_width.size());
  bool grown = true;
  for (size_t s = 0; s < slots_.size() && grown; ++s) {
    grown = Grow(&slots_[s], SlotRows(*plan_, s, n, tail_rows) * plan_->slot_width[s]);
  }
  grown = grown && Grow(&temp_, TempFloats(*plan_, n, tail_rows)) &&
          Grow(&rope_table_, n * RopeTableRowFloats(*plan_));
  if (!grown) {
    // What did grow is given back too: the next run starts from nothing.
    ReleaseScratch();
    return Errorf(StatusCode::kBudgetExceeded,
                  "out of memory: the scratch buffers for %zu tokens need %zu bytes, which the "
                  "process or the system cannot give; free memory or raise the process's limit "
                  "(ulimit -v)",
                  n, ScratchBytesFor(*plan_, n, output));
  }
  positions_.reserve(n);
  rows_ = n;
  tail_rows_ = tail_rows;
  return Status::Ok();
}

void Executor::ReleaseScratch() {
  // Moved-from temporaries: assigning {} would keep the capacity.
  slots_ = std::vector<CacheLineBuffer<float>>();
  temp_ = CacheLineBuffer<float>();
  rope_table_ = CacheLineBuffer<float>();
  positions_ = std::vector<int32_t>();
  rows_ = 0;
  tail_rows_ = 0;
  rope_head_dim_ = 0;
}

size_t Executor::scratch_bytes() const {
  size_t floats = temp_.size();
  for (const auto& s : slots_) floats += s.size();
  floats += rope_table_.size();
  return floats * sizeof(float) + positions_.capacity() * sizeof(int32_t);
}

const float* Executor::RopeTableFor(const PlanStep& s) {
  if (s.head_dim != rope_head_dim_ || s.theta != rope_theta_ || s.style != rope_style_) {
    const size_t row = RopeTableFloats(s.head_dim);
    ForRowSlices(pool_, positions_.size(), [&](size_t a, size_t b) {
      RopeTable(positions_.data() + a, b - a, s.head_dim, s.theta, s.style,
                rope_table_.data() + a * row);
    });
    rope_head_dim_ = s.head_dim;
    rope_theta_ = s.theta;
    rope_style_ = s.style;
  }
  return rope_table_.data();
}

void Executor::WarmKvAppend(size_t from, size_t end, size_t pos) const {
  for (size_t j = from; j < end; ++j) {
    const PlanStep& s = plan_->steps[j];
    if (s.op == OpKind::kLinear) return;
    if (s.op == OpKind::kAttention) {
      KvPrefetchAppend(kv_.View(s.layer), pos);
      return;
    }
  }
}

Status Executor::Run(const int32_t* tokens, size_t n, size_t n_past, BackendOutput output,
                     float* logits) {
  POCKET_RETURN_IF_ERROR(kv_.Reserve(n_past + n));
  POCKET_RETURN_IF_ERROR(EnsureRows(n, output));
  positions_.resize(n);
  for (size_t i = 0; i < n; ++i) positions_[i] = static_cast<int32_t>(n_past + i);
  rope_head_dim_ = 0;  // new positions: the first Rope step builds the table

  bool logits_written = false;
  WalkOptions walk;
  walk.max_linear_group = kMaxLinearGroup;
  walk.times = op_times_;
  POCKET_RETURN_IF_ERROR(WalkPlan(*plan_, n, output, walk, [&](const WalkStep& w) {
    float* dst = slots_[w.step->out].data() + w.out_row[0] * w.step->width;
    // The plan's last step, when it makes the wanted logits, writes them
    // straight into the caller's buffer: copying a decoded token's 65,536
    // took 14 us, 0.3% of a 2-thread token.
    if (w.writes_logits && logits != nullptr) {
      dst = logits;
      logits_written = true;
    }
    RunStep(w, tokens, n, n_past, dst);
    return Status::Ok();
  }));

  if (logits_written || output == BackendOutput::kNone) return Status::Ok();
  const size_t count = output == BackendOutput::kAllRows ? n * plan_->vocab : plan_->vocab;
  std::memcpy(logits,
              slots_[plan_->logits_slot].data() + LogitsRow(*plan_, n, output) * plan_->vocab,
              count * sizeof(float));
  return Status::Ok();
}

void Executor::RunStep(const WalkStep& w, const int32_t* tokens, size_t n, size_t n_past,
                       float* dst) {
  const PlanStep& s = *w.step;
  const size_t rows = w.rows;
  auto value = [&](int k, size_t width) { return slots_[s.in[k]].data() + w.in_row[k] * width; };
  const size_t count = rows * s.width;

  switch (s.op) {
    case OpKind::kEmbed:
      // Each row gathers its own scattered table row (in the rows16
      // layout, one 4-byte lane in each 64-byte chunk): misses, shared out.
      ForRowSlices(pool_, rows, [&](size_t a, size_t b) {
        Embed(s.weight, tokens + w.r0 + a, b - a, dst + a * s.width);
      });
      break;
    case OpKind::kRmsNorm: {
      const float* x = value(0, s.in_width);
      ForRowSlices(pool_, rows, [&](size_t a, size_t b) {
        RmsNorm(x + a * s.in_width, s.norm, b - a, s.in_width, s.eps, dst + a * s.width);
      });
      break;
    }
    case OpKind::kHeadRmsNorm:
    case OpKind::kRope: {
      const float* x = w.copy_input ? value(0, s.in_width) : nullptr;
      const float* table = s.op == OpKind::kRope ? RopeTableFor(s) : nullptr;
      const size_t table_row = RopeTableFloats(s.head_dim);
      ForRowSlices(pool_, rows, [&](size_t a, size_t b) {
        float* rows_out = dst + a * s.width;
        if (x) std::memcpy(rows_out, x + a * s.width, (b - a) * s.width * sizeof(float));
        if (s.op == OpKind::kHeadRmsNorm) {
          HeadRmsNorm(rows_out, s.norm, b - a, s.width / s.head_dim, s.head_dim, s.eps);
        } else {
          RopeApply(rows_out, b - a, s.width / s.head_dim, s.head_dim, s.style,
                    table + (w.r0 + a) * table_row);
        }
      });
      break;
    }
    case OpKind::kLinear: {
      if (w.via_temp) {
        Linear(value(0, s.in_width), rows, s.weight, s.bias, temp_.data(), pool_, math_);
        std::memcpy(dst, temp_.data(), count * sizeof(float));
        break;
      }
      // The Linears that follow on the same input (q, k, v; gate, up) run
      // as one group.
      LinearOut group[kMaxLinearGroup] = {{s.weight, s.bias, dst}};
      for (size_t k = 1; k < w.group; ++k) {
        const PlanStep& m = w.member(*plan_, k);
        group[k] = {m.weight, m.bias, slots_[m.out].data() + w.out_row[k] * m.width};
      }
      if (n == 1) WarmKvAppend(w.index + w.group, w.end, n_past);
      LinearGroup(value(0, s.in_width), rows, group, w.group, pool_, math_);
      break;
    }
    case OpKind::kAttention: {
      const size_t kv_width = s.n_kv_heads * s.head_dim;
      const KvView view = kv_.View(s.layer);
      KvAppend(view, n_past, value(1, kv_width), value(2, kv_width), n, pool_);
      float* out = w.via_temp ? temp_.data() : dst;
      Attention(value(0, s.in_width), n, n_past, view, s.n_heads, s.n_kv_heads, s.head_dim, out,
                pool_, attention_math_);
      if (out != dst) std::memcpy(dst, out, count * sizeof(float));
      break;
    }
    case OpKind::kSwiglu:
    case OpKind::kAdd: {
      float* out = w.via_temp ? temp_.data() : dst;
      const float* x0 = value(0, s.in_width);
      const float* x1 = value(1, s.in_width);
      ForRowSlices(pool_, rows, [&](size_t a, size_t b) {
        const size_t at = a * s.width, len = (b - a) * s.width;
        if (s.op == OpKind::kSwiglu) {
          Swiglu(x0 + at, x1 + at, len, out + at);
        } else {
          Add(x0 + at, x1 + at, len, out + at);
        }
        if (out != dst) std::memcpy(dst + at, out + at, len * sizeof(float));
      });
      break;
    }
  }
}

}  // namespace pocket::cpu
