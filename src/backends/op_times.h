// Where a run's time goes, by kind of plan step and by step: a backend
// session given an OpTimes (BackendSession::set_op_times) adds each step's
// wall time to it (the plan walker times them), and `pocket bench
// --op-times` reports them per token. A group of Linears on one input (q,
// k, v; gate, up) is one step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/plan.h"

namespace pocket {

struct OpTimes {
  double seconds[kOpKindCount] = {};
  uint64_t steps[kOpKindCount] = {};
  uint64_t runs = 0;  // BackendSession::Run calls (chunks or decoded tokens)
  // The same by plan step (indexed like Plan::steps; the walker sizes
  // them): a group of Linears is counted at its first step only.
  std::vector<double> step_seconds;
  std::vector<uint64_t> step_count;
};

}  // namespace pocket
