#include "runtime/op_times.h"

#include <algorithm>

namespace pocket {

std::vector<LinearTime> LinearTimesByOutput(const Plan& plan, const OpTimes& times) {
  std::vector<LinearTime> out;
  const size_t n = std::min(plan.steps.size(), times.step_count.size());
  for (size_t i = 0; i < n; ++i) {
    const PlanStep& s = plan.steps[i];
    if (s.op != OpKind::kLinear || times.step_count[i] == 0) continue;
    // The executor times a group at its first step and skips the rest, so
    // the group is this step and the untimed Linears on its input after it.
    std::string name = plan.slot_names[static_cast<size_t>(s.out)];
    for (size_t j = i + 1; j < n; ++j) {
      const PlanStep& next = plan.steps[j];
      if (next.op != OpKind::kLinear || next.in[0] != s.in[0] || times.step_count[j] != 0) break;
      name += "+" + plan.slot_names[static_cast<size_t>(next.out)];
    }
    LinearTime* entry = nullptr;
    for (LinearTime& e : out) {
      if (e.outputs == name) entry = &e;
    }
    if (entry == nullptr) entry = &out.emplace_back(LinearTime{name, 0, 0});
    entry->seconds += times.step_seconds[i];
    entry->steps += times.step_count[i];
  }
  return out;
}

}  // namespace pocket
