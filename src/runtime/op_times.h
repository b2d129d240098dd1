// The Linears' share of a session's op times (OpTimes, backends/op_times.h)
// by the values they write, for `pocket bench --op-times`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/op_times.h"
#include "graph/plan.h"

namespace pocket {

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
