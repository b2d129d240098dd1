// What the CPU backend's kernels run on this machine, for front ends that
// report or choose it (`pocket bench`, the CLI's `--cpu-target` and `-t`):
// the runtime's view of the CPU backend's dispatch and roofline probes, so
// that a front end includes no backend header.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"

namespace pocket {

// The most compute threads ModelOptions::threads takes.
size_t MaxCpuThreads();

// The targets ModelOptions::cpu_target takes here, best first, e.g.
// "AVX3_DL", "AVX2_VNNI", "AVX2" (backends/cpu/kernel_target.h).
std::vector<std::string> CpuKernelTargets();
// The target the CPU kernels dispatch to now.
const char* CpuKernelTarget();

// How the CPU multiplies for a session of `model` with `options`.
struct CpuKernelChoice {
  // Attention's q·k and weighted V: "bf16", "int8" or "f32".
  const char* attention_math = "f32";
  // The matrix unit the prompts' q4/q8 Linears multiply on ("I8MM" or
  // "AMX"), with QuantMath::kInt8 only; null where none does.
  const char* prefill_matrix_ext = nullptr;
  // The matrix unit attention's products are made on ("AMX"), or null.
  const char* attention_matrix_ext = nullptr;
};
CpuKernelChoice CpuKernelsFor(const Model& model, const SessionOptions& options);

// Roofline probes on the model's compute threads: the best of `passes`
// streaming reads of a `bytes` buffer, in bytes per second (0 if it cannot
// be allocated), and the multiply-accumulates per second of the int8 Linear
// on a q4 weight that stays in L2, for `tokens` tokens (1: decode's kernel,
// more: prefill's).
double MeasureReadBandwidth(const Model& model, size_t bytes, int passes);
double MeasureInt8Peak(const Model& model, size_t tokens, int passes);

}  // namespace pocket
