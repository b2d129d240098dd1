// Where a run's time goes, by kind of plan step: the executor adds each
// step's wall time to the OpTimes its session was given (Session::
// set_op_times), and `pocket bench --op-times` reports them per token. A
// group of Linears on one input (q, k, v; gate, up) is one step.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/plan.h"

namespace pocket {

struct OpTimes {
  double seconds[kOpKindCount] = {};
  uint64_t steps[kOpKindCount] = {};
  uint64_t runs = 0;  // Executor::Run calls (chunks or decoded tokens)
};

}  // namespace pocket
