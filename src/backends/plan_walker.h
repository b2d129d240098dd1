// The walk over a Plan that every backend shares: which steps a run takes,
// which token rows each covers, where in each slot's buffer those rows are,
// which ops must compute through a temp buffer, which Linears run as one
// group, and where the wanted logits end up. A backend's session holds one
// buffer per slot (SlotRows rows of plan.slot_width[slot] floats), a temp
// buffer (TempFloats) and its KV cache, and writes only the switch over
// OpKind that WalkPlan calls for each step.
//
// Rows: a chunk of n tokens fills rows [0, n) of every slot. After the
// plan's row_wise_tail every op is row-wise, so when only the last token's
// logits are wanted (kLastRow) the tail runs on that row alone, and slots
// only the tail writes (plan.slot_tail_only, the logits) hold just that row
// unless every row's logits are wanted. kNone skips the tail.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

#include "backends/backend.h"
#include "backends/op_times.h"
#include "graph/plan.h"
#include "util/status.h"

namespace pocket {

// The most Linears a backend may ask to run as one group.
constexpr size_t kMaxWalkGroup = 4;

// Rows the tail-only slots need for a chunk of n tokens.
inline size_t TailRows(size_t n, BackendOutput output) {
  return output == BackendOutput::kAllRows ? n : 1;
}

// Rows slot `slot` needs for chunks of up to `rows` tokens, whose tail-only
// slots need `tail_rows`.
inline size_t SlotRows(const Plan& plan, size_t slot, size_t rows, size_t tail_rows) {
  return plan.slot_tail_only[slot] ? tail_rows : rows;
}

// Floats the temp buffer needs: the widest step's output, over the rows it
// covers.
inline size_t TempFloats(const Plan& plan, size_t rows, size_t tail_rows) {
  size_t floats = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    floats = std::max(floats, (i < plan.row_wise_tail ? rows : tail_rows) * plan.steps[i].width);
  }
  return floats;
}

// Floats every slot buffer and the temp buffer hold together for chunks of
// up to n tokens with `output`.
inline size_t SlotAndTempFloats(const Plan& plan, size_t n, BackendOutput output) {
  const size_t tail_rows = TailRows(n, output);
  size_t floats = TempFloats(plan, n, tail_rows);
  for (size_t s = 0; s < plan.slot_width.size(); ++s) {
    floats += SlotRows(plan, s, n, tail_rows) * plan.slot_width[s];
  }
  return floats;
}

// The row of the logits slot that holds the first wanted row of logits
// after a run of n tokens (kLastRow: the last token's; kAllRows: row 0).
// Copy vocab floats (kLastRow) or n * vocab (kAllRows) from there, unless
// the last step wrote them straight (WalkStep::writes_logits).
inline size_t LogitsRow(const Plan& plan, size_t n, BackendOutput output) {
  if (output != BackendOutput::kLastRow) return 0;
  return plan.slot_tail_only[static_cast<size_t>(plan.logits_slot)] ? 0 : n - 1;
}

// One step of a run, as the walker hands it to the backend.
struct WalkStep {
  size_t index = 0;  // in plan.steps; a group's first Linear
  size_t end = 0;    // the run stops before plan.steps[end]
  const PlanStep* step = nullptr;
  // kLinear: plan.steps[index, index + group) run as one group on the same
  // input, each writing its own slot (out_row[k] for member k).
  size_t group = 1;
  // The chunk's tokens this step covers: [r0, r0 + rows).
  size_t r0 = 0;
  size_t rows = 0;
  // The row of each input slot's buffer (in[k]; 0 where unused) and of each
  // member's output slot that holds token r0.
  size_t in_row[3] = {0, 0, 0};
  size_t out_row[kMaxWalkGroup] = {0, 0, 0, 0};
  // The op cannot write over the input its output aliases: compute into the
  // temp buffer (row 0), then copy rows * width floats to the output.
  bool via_temp = false;
  // head_rms_norm and rope work in place: when their input is another
  // slot, copy its rows to the output first.
  bool copy_input = false;
  // The plan's last step, writing exactly the logits rows the run wants: a
  // backend may write them straight into the caller's buffer instead of
  // the logits slot, and then skip the copy after the run.
  bool writes_logits = false;

  const PlanStep& member(const Plan& plan, size_t k) const { return plan.steps[index + k]; }
};

// Adds the wall time from its construction to its destruction to op's
// entry and step's in `times`, where there is one.
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

struct WalkOptions {
  // Consecutive Linears on one input that run as one group (1: each on its
  // own); at most kMaxWalkGroup.
  size_t max_linear_group = 1;
  // Each step's wall time goes here (null: not timed). Only meaningful for
  // backends whose steps finish before they return.
  OpTimes* times = nullptr;
};

// Calls run(const WalkStep&) -> Status for each step (or group) a run of n
// tokens with `output` takes, in order; stops at the first error.
template <typename RunStep>
Status WalkPlan(const Plan& plan, size_t n, BackendOutput output, const WalkOptions& options,
                RunStep&& run) {
  const size_t end = output == BackendOutput::kNone ? plan.row_wise_tail : plan.steps.size();
  const size_t max_group = std::min(std::max<size_t>(options.max_linear_group, 1), kMaxWalkGroup);
  if (options.times != nullptr) {
    ++options.times->runs;
    options.times->step_seconds.resize(plan.steps.size());
    options.times->step_count.resize(plan.steps.size());
  }
  WalkStep w;
  w.end = end;
  for (size_t i = 0; i < end; i += w.group) {
    const PlanStep& s = plan.steps[i];
    const bool tail = i >= plan.row_wise_tail;
    const bool last_only = output == BackendOutput::kLastRow && tail;
    w.index = i;
    w.step = &s;
    w.group = 1;
    w.r0 = last_only ? n - 1 : 0;
    w.rows = last_only ? 1 : n;
    const auto row_of = [&](int slot) {
      return last_only && plan.slot_tail_only[static_cast<size_t>(slot)] ? size_t{0} : w.r0;
    };
    for (int k = 0; k < 3; ++k) w.in_row[k] = s.in[k] >= 0 ? row_of(s.in[k]) : 0;
    w.out_row[0] = row_of(s.out);
    const auto aliased = [&](int k) { return s.in[k] == s.out; };
    w.via_temp = false;
    w.copy_input = false;
    switch (s.op) {
      case OpKind::kEmbed:
      case OpKind::kRmsNorm:
        break;
      case OpKind::kHeadRmsNorm:
      case OpKind::kRope:
        w.copy_input = !aliased(0);
        break;
      case OpKind::kLinear:
        w.via_temp = aliased(0);
        break;
      case OpKind::kAttention:
        w.via_temp = aliased(0) || aliased(1) || aliased(2);
        break;
      case OpKind::kSwiglu:
      case OpKind::kAdd:
        w.via_temp = aliased(1) && !aliased(0);
        break;
    }
    w.writes_logits =
        i + 1 == plan.steps.size() && s.out == plan.logits_slot &&
        (output == BackendOutput::kAllRows || (output == BackendOutput::kLastRow && w.rows == 1));
    if (s.op == OpKind::kLinear && !w.via_temp) {
      // The Linears that follow on the same input (q, k, v; gate, up), over
      // the same rows, each writing a slot of its own.
      while (w.group < max_group && i + w.group < end) {
        const PlanStep& next = plan.steps[i + w.group];
        const bool same_rows = (i + w.group >= plan.row_wise_tail) == tail;
        if (next.op != OpKind::kLinear || next.in[0] != s.in[0] || next.out == s.in[0] ||
            !same_rows) {
          break;
        }
        bool distinct = true;
        for (size_t k = 0; k < w.group; ++k)
          distinct = distinct && plan.steps[i + k].out != next.out;
        if (!distinct) break;
        w.out_row[w.group++] = row_of(next.out);
      }
    }
    const StepTimer timer(options.times, s.op, i);
    POCKET_RETURN_IF_ERROR(run(static_cast<const WalkStep&>(w)));
  }
  return Status::Ok();
}

}  // namespace pocket
