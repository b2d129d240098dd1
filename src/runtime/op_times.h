// Where a run's time goes, by kind of plan step and by step: the executor
// adds each step's wall time to the OpTimes its session was given
// (Session::set_op_times), and `pocket bench --op-times` reports them per
// token. A group of Linears on one input (q, k, v; gate, up) is one step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/plan.h"

namespace pocket {

struct OpTimes {
  double seconds[kOpKindCount] = {};
  uint64_t steps[kOpKindCount] = {};
  uint64_t runs = 0;  // Executor::Run calls (chunks or decoded tokens)
  // The same by plan step (indexed like Plan::steps; the executor sizes
  // them): a group of Linears is counted at its first step only.
  std::vector<double> step_seconds;
  std::vector<uint64_t> step_count;
};

// The Linears' share of `times` by the values they write, summed over the
// layers: "q+k+v" for a group on one input, "o", "logits". Entries come in
// plan order, one per distinct name; Linears that never ran are left out.
// Small Linears are where threads gain least (docs/performance.md), and the
// per-kind total hides them.
struct LinearTime {
  std::string outputs;
  double seconds = 0;
  uint64_t steps = 0;
};
std::vector<LinearTime> LinearTimesByOutput(const Plan& plan, const OpTimes& times);

}  // namespace pocket
