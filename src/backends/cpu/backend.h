// The CPU backend (registry name "cpu"): the Highway kernels of ops.h on a
// thread pool, over weights read in place from the mapped file (or from a
// copy in huge pages), with the KV cache in host pages (kv_cache.h).
#pragma once

#include "backends/backend.h"
#include "backends/cpu/ops.h"
#include "format/model_config.h"
#include "graph/plan.h"
#include "graph/quant_math.h"

namespace pocket::cpu {

// How the CPU backend runs attention for `plan` with `math`: kBf16 with the
// int8 maths when the plan has q4/q8 Linears and a head size that is a
// multiple of 16 (so a model with plain weights keeps f32 maths
// throughout), kF32 otherwise; the kernels then use bf16 only where
// AttentionBf16Available().
AttentionMath ChooseAttentionMath(const Plan& plan, const ModelConfig& config, QuantMath math);

class ThreadPool;
// The thread pool a CPU backend's sessions compute on; null for a backend
// that is not the CPU's.
ThreadPool* ThreadPoolOf(const Backend& backend);

}  // namespace pocket::cpu
