// Which Highway target the CPU kernels dispatch to (for logs, benchmarks,
// and tests that check every target really ran), and a way to hold them to
// an older one.
#pragma once

#include <string>
#include <vector>

namespace pocket::cpu {

// e.g. "AVX2", "AVX3", "NEON", "EMU128".
const char* KernelTargetName();

// The targets the kernels can dispatch to now: compiled into this build,
// run by this CPU and not excluded by RestrictKernelTargets, best first,
// spelled as KernelTargetName.
std::vector<std::string> KernelTargets();
// The same names in one string, `separator` between them (for messages).
std::string KernelTargetList(const char* separator);

// From now on every CPU kernel of the process dispatches to the target named
// `name` (any case), one of KernelTargets(), instead of the best one: what a
// CPU without the newer extensions would run, measured on this one. Returns
// false and changes nothing for any other name. Call it before kernels run
// (it is not safe beside running ones); hwy::DisableTargets(0) lifts it.
bool RestrictKernelTargets(const std::string& name);

}  // namespace pocket::cpu
