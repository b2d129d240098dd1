// Which Highway target the CPU kernels dispatch to (for logs, benchmarks,
// and tests that check every target really ran), and a way to hold them to
// an older one.
//
// One name is Pocket's own: "NEON_DOTPROD", NEON whose int8 Linear uses the
// ARMv8.2 dotprod extension (sdot; linear_int8_dotprod.cc). Highway 1.0.3
// has no such target, so on ARM CPUs that report dotprod it is listed before
// "NEON", which then names the ARMv8.0 kernels alone.
#pragma once

#include <string>
#include <vector>

namespace pocket::cpu {

// e.g. "AVX2", "AVX3", "NEON_DOTPROD", "NEON", "EMU128".
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
// (it is not safe beside running ones); LiftKernelTargetRestriction undoes it.
bool RestrictKernelTargets(const std::string& name);
void LiftKernelTargetRestriction();

// Whether this build has the NEON_DOTPROD kernels and this CPU runs them
// (whatever the restriction), and whether the kernels dispatch to them now.
bool NeonDotprodAvailable();
bool NeonDotprodChosen();
// Lets NEON dispatch use them (the default) or not; tests run both.
void AllowNeonDotprod(bool allow);

}  // namespace pocket::cpu
