// Which Highway target the CPU kernels dispatch to right now (for logs,
// benchmarks, and tests that check every target really ran).
#pragma once

namespace pocket::cpu {

// e.g. "AVX2", "AVX3", "NEON", "EMU128".
const char* KernelTargetName();

}  // namespace pocket::cpu
