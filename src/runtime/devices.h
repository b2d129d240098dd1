// The compute devices this build can run a model on, for
// `pocket inspect --devices` and hosts that let users pick a backend.
#pragma once

#include <string>

namespace pocket {

// Every registered backend's devices (backends/registry.h), one or more
// lines each, e.g.
//   "cpu         AVX3_DL kernels, prompts by AMX, bf16 attention by AMX, 2 hardware threads
//    (targets here: ...)"
//   "            2 compute threads by default; cores fastest first: 0 1"
//   "opencl:0.0  Portable Computing Language / pthread-... (...)"
//   "reference   the scalar reference ops on one thread, ..."
// with, for a backend with no usable device, the reason.
std::string DescribeDevices();

// Lets the CPU backend multiply prompts (and, with x86's AMX-BF16, bf16
// attention) with the CPU's matrix unit (Arm's I8MM, x86's AMX; the
// default) or not (cpu/kernel_target.h). Process-wide.
void AllowCpuMatrixExtension(bool allow);

}  // namespace pocket
