#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "backends/cpu/ops.h"
#include "backends/cpu/parallel.h"

namespace pocket {

namespace {

// Rows the tail-only slots need for a chunk of n (plan.h).
size_t TailRows(size_t n, Executor::Output output) {
  return output == Executor::Output::kAllRows ? n : 1;
}

// Rope table floats per row: enough for the widest rotated head.
size_t RopeTableRowFloats(const Plan& plan) {
  size_t floats = 0;
  for (const PlanStep& s : plan.steps) {
    if (s.op == OpKind::kRope) floats = std::max(floats, cpu::RopeTableFloats(s.head_dim));
  }
  return floats;
}

size_t TempFloats(const Plan& plan, size_t rows, size_t tail_rows) {
  size_t floats = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    floats = std::max(floats, (i < plan.row_wise_tail ? rows : tail_rows) * plan.steps[i].width);
  }
  return floats;
}

// Resizes to exactly `size` floats when it must grow: scratch holds nothing
// between runs, and an exact size keeps the budget's count exact. False
// where the memory cannot be had.
bool Grow(CacheLineBuffer<float>* v, size_t size) { return v->size() >= size || v->Reset(size); }

}  // namespace

size_t Executor::ScratchBytesFor(const Plan& plan, size_t n, Output output) {
  const size_t tail_rows = TailRows(n, output);
  size_t floats = TempFloats(plan, n, tail_rows) + n * RopeTableRowFloats(plan);
  for (size_t s = 0; s < plan.slot_width.size(); ++s) {
    floats += (plan.slot_tail_only[s] ? tail_rows : n) * plan.slot_width[s];
  }
  return floats * sizeof(float) + n * sizeof(int32_t);
}

Status Executor::EnsureRows(size_t n, Output output) {
  const size_t tail_rows = std::max(tail_rows_, TailRows(n, output));
  n = std::max(n, rows_);
  if (n == rows_ && tail_rows == tail_rows_) return Status::Ok();
  slots_.resize(plan_->slot_width.size());
  bool grown = true;
  for (size_t s = 0; s < slots_.size() && grown; ++s) {
    grown = Grow(&slots_[s], (plan_->slot_tail_only[s] ? tail_rows : n) * plan_->slot_width[s]);
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

namespace {

// Rows per task below which a row-wise op runs on the calling thread: a
// decoded token (one row) is not worth waking the pool for.
constexpr size_t kMinRowsPerTask = 8;

// Adds the wall time from its construction to its destruction to op's entry
// and to step `step`'s in `times`, when there is one (its step vectors sized
// to the plan).
class StepTimer {
 public:
  StepTimer(OpTimes* times, OpKind op, size_t step)
      : times_(times), op_(static_cast<size_t>(op)), step_(step) {
    if (times_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~StepTimer() {
    if (times_ == nullptr) return;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    times_->seconds[op_] += s;
    ++times_->steps[op_];
    times_->step_seconds[step_] += s;
    ++times_->step_count[step_];
  }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

 private:
  OpTimes* times_;
  size_t op_;
  size_t step_;
  std::chrono::steady_clock::time_point start_;
};

// Calls fn(r0, r1) over slices of [0, rows) on the pool. Row-wise ops
// (embedding, norms, rope, swiglu, add) then take their share of a prefill
// instead of leaving the other threads waiting for the calling one.
template <typename Fn>
void ForRowSlices(cpu::ThreadPool* pool, size_t rows, const Fn& fn) {
  const size_t tasks = std::min(cpu::NumThreads(pool), rows / kMinRowsPerTask);
  if (tasks <= 1) return fn(size_t{0}, rows);
  cpu::ParallelOrInline(pool, tasks, [&](size_t task, size_t) {
    size_t r0, r1;
    cpu::SplitRange(rows, 1, tasks, task, &r0, &r1);
    if (r0 < r1) fn(r0, r1);
  });
}

}  // namespace

const float* Executor::RopeTableFor(const PlanStep& s, cpu::ThreadPool* pool) {
  if (s.head_dim != rope_head_dim_ || s.theta != rope_theta_ || s.style != rope_style_) {
    const size_t row = cpu::RopeTableFloats(s.head_dim);
    ForRowSlices(pool, positions_.size(), [&](size_t a, size_t b) {
      cpu::RopeTable(positions_.data() + a, b - a, s.head_dim, s.theta, s.style,
                     rope_table_.data() + a * row);
    });
    rope_head_dim_ = s.head_dim;
    rope_theta_ = s.theta;
    rope_style_ = s.style;
  }
  return rope_table_.data();
}

void Executor::WarmKvAppend(size_t from, size_t end, const KvCache& kv, size_t pos) const {
  for (size_t j = from; j < end; ++j) {
    const PlanStep& s = plan_->steps[j];
    if (s.op == OpKind::kLinear) return;
    if (s.op == OpKind::kAttention) {
      cpu::KvPrefetchAppend(kv.View(s.layer), pos);
      return;
    }
  }
}

Status Executor::Run(const int32_t* tokens, size_t n, size_t n_past, Output output, KvCache* kv,
                     cpu::ThreadPool* pool, float* logits) {
  POCKET_RETURN_IF_ERROR(EnsureRows(n, output));
  positions_.resize(n);
  for (size_t i = 0; i < n; ++i) positions_[i] = static_cast<int32_t>(n_past + i);
  rope_head_dim_ = 0;  // new positions: the first Rope step builds the table

  const size_t end = output == Output::kNone ? plan_->row_wise_tail : plan_->steps.size();
  bool logits_written = false;
  if (op_times_ != nullptr) {
    ++op_times_->runs;
    op_times_->step_seconds.resize(plan_->steps.size());
    op_times_->step_count.resize(plan_->steps.size());
  }
  for (size_t i = 0; i < end; ++i) {
    const PlanStep& s = plan_->steps[i];
    const StepTimer timer(op_times_, s.op, i);
    // After the last attention every op is row-wise, so when only the last
    // token's logits are wanted the tail runs on that row alone.
    const bool last_only = output == Output::kLastRow && i >= plan_->row_wise_tail;
    const size_t r0 = last_only ? n - 1 : 0;
    const size_t rows = last_only ? 1 : n;
    // Tail-only slots hold just that row then.
    auto row_of = [&](int slot) {
      return last_only && plan_->slot_tail_only[static_cast<size_t>(slot)] ? 0 : r0;
    };
    auto value = [&](int k, size_t width) {
      return slots_[s.in[k]].data() + row_of(s.in[k]) * width;
    };
    float* dst = slots_[s.out].data() + row_of(s.out) * s.width;
    // The plan's last step, when it makes the wanted logits, writes them
    // straight into the caller's buffer: copying a decoded token's 65,536
    // took 14 us, 0.3% of a 2-thread token.
    if (logits != nullptr && i + 1 == plan_->steps.size() && s.out == plan_->logits_slot &&
        (output == Output::kAllRows || (output == Output::kLastRow && rows == 1))) {
      dst = logits;
      logits_written = true;
    }
    const size_t count = rows * s.width;
    // Ops that cannot write over an input compute into temp_ and copy.
    auto aliased = [&](int k) { return s.in[k] == s.out; };

    switch (s.op) {
      case OpKind::kEmbed:
        // Each row gathers its own scattered table row (in the rows16
        // layout, one 4-byte lane in each 64-byte chunk): misses, shared out.
        ForRowSlices(pool, rows, [&](size_t a, size_t b) {
          cpu::Embed(s.weight, tokens + r0 + a, b - a, dst + a * s.width);
        });
        break;
      case OpKind::kRmsNorm: {
        const float* x = value(0, s.in_width);
        ForRowSlices(pool, rows, [&](size_t a, size_t b) {
          cpu::RmsNorm(x + a * s.in_width, s.norm, b - a, s.in_width, s.eps, dst + a * s.width);
        });
        break;
      }
      case OpKind::kHeadRmsNorm:
      case OpKind::kRope: {
        const float* x = aliased(0) ? nullptr : value(0, s.in_width);
        const float* table = s.op == OpKind::kRope ? RopeTableFor(s, pool) : nullptr;
        const size_t table_row = cpu::RopeTableFloats(s.head_dim);
        ForRowSlices(pool, rows, [&](size_t a, size_t b) {
          float* rows_out = dst + a * s.width;
          if (x) std::memcpy(rows_out, x + a * s.width, (b - a) * s.width * sizeof(float));
          if (s.op == OpKind::kHeadRmsNorm) {
            cpu::HeadRmsNorm(rows_out, s.norm, b - a, s.width / s.head_dim, s.head_dim, s.eps);
          } else {
            cpu::RopeApply(rows_out, b - a, s.width / s.head_dim, s.head_dim, s.style,
                           table + (r0 + a) * table_row);
          }
        });
        break;
      }
      case OpKind::kLinear: {
        if (aliased(0)) {
          cpu::Linear(value(0, s.in_width), rows, s.weight, s.bias, temp_.data(), pool, math_);
          std::memcpy(dst, temp_.data(), count * sizeof(float));
          break;
        }
        // The Linears that follow on the same input (q, k, v; gate, up) run
        // as one group.
        cpu::LinearOut group[cpu::kMaxLinearGroup] = {{s.weight, s.bias, dst}};
        size_t size = 1;
        while (size < cpu::kMaxLinearGroup && i + size < end) {
          const PlanStep& next = plan_->steps[i + size];
          const bool same_rows = (i + size >= plan_->row_wise_tail) == (i >= plan_->row_wise_tail);
          if (next.op != OpKind::kLinear || next.in[0] != s.in[0] || next.out == s.in[0] ||
              !same_rows) {
            break;
          }
          bool distinct = true;
          for (size_t k = 0; k < size; ++k)
            distinct = distinct && plan_->steps[i + k].out != next.out;
          if (!distinct) break;
          group[size++] = {next.weight, next.bias,
                           slots_[next.out].data() + row_of(next.out) * next.width};
        }
        if (n == 1) WarmKvAppend(i + size, end, *kv, n_past);
        cpu::LinearGroup(value(0, s.in_width), rows, group, size, pool, math_);
        i += size - 1;
        break;
      }
      case OpKind::kAttention: {
        const size_t kv_width = s.n_kv_heads * s.head_dim;
        const cpu::KvView view = kv->View(s.layer);
        cpu::KvAppend(view, n_past, value(1, kv_width), value(2, kv_width), n, pool);
        float* out = aliased(0) || aliased(1) || aliased(2) ? temp_.data() : dst;
        cpu::Attention(value(0, s.in_width), n, n_past, view, s.n_heads, s.n_kv_heads, s.head_dim,
                       out, pool, attention_math_);
        if (out != dst) std::memcpy(dst, out, count * sizeof(float));
        break;
      }
      case OpKind::kSwiglu:
      case OpKind::kAdd: {
        // Element-wise: out may alias the first input, not the second.
        float* out = aliased(1) && !aliased(0) ? temp_.data() : dst;
        const float* x0 = value(0, s.in_width);
        const float* x1 = value(1, s.in_width);
        ForRowSlices(pool, rows, [&](size_t a, size_t b) {
          const size_t at = a * s.width, len = (b - a) * s.width;
          if (s.op == OpKind::kSwiglu) {
            cpu::Swiglu(x0 + at, x1 + at, len, out + at);
          } else {
            cpu::Add(x0 + at, x1 + at, len, out + at);
          }
          if (out != dst) std::memcpy(dst + at, out + at, len * sizeof(float));
        });
        break;
      }
    }
  }

  if (logits_written) return Status::Ok();
  const float* result = slots_[plan_->logits_slot].data();
  if (output == Output::kLastRow) {
    const size_t last = plan_->slot_tail_only[static_cast<size_t>(plan_->logits_slot)] ? 0 : n - 1;
    std::memcpy(logits, result + last * plan_->vocab, plan_->vocab * sizeof(float));
  } else if (output == Output::kAllRows) {
    std::memcpy(logits, result, n * plan_->vocab * sizeof(float));
  }
  return Status::Ok();
}

}  // namespace pocket
