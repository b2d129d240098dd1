// Runs a Plan over one chunk of tokens on the CPU backend. The executor owns
// nothing but reusable scratch: values live in per-slot buffers sized for
// the chunk, which grow on demand and are kept across calls. Slots only the
// row-wise tail writes (the logits) hold one row unless every row's logits
// are wanted, so a prefill chunk does not cost chunk x vocab floats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/thread_pool.h"
#include "runtime/kv_cache.h"
#include "runtime/op_times.h"
#include "graph/plan.h"
#include "util/cache_line_vector.h"

namespace pocket {

class Executor {
 public:
  // q4/q8 Linear steps multiply with `math`, attention with
  // `attention_math` (backends/cpu/ops.h; Model::attention_math).
  Executor(const Plan* plan, QuantMath math, cpu::AttentionMath attention_math)
      : plan_(plan), math_(math), attention_math_(attention_math) {}

  // Runs tokens[0, n) at positions [n_past, n_past + n). The KV cache must
  // already hold pages for n_past + n positions. Logits:
  //   kNone: none are computed (the row-wise tail of the plan is skipped);
  //   kLastRow: the last token's [vocab] go to logits[0, vocab);
  //   kAllRows: [n, vocab] go to logits.
  // Fails with BudgetExceeded, before computing anything, where the scratch
  // buffers must grow for n rows and the memory cannot be had.
  enum class Output { kNone, kLastRow, kAllRows };
  Status Run(const int32_t* tokens, size_t n, size_t n_past, Output output, KvCache* kv,
             cpu::ThreadPool* pool, float* logits);

  // Adds every step's wall time to *times from the next Run on (null: no
  // timing, the default). Not owned.
  void set_op_times(OpTimes* times) { op_times_ = times; }

  // Bytes held by the scratch buffers.
  size_t scratch_bytes() const;
  // Frees the scratch buffers; the next Run allocates them again.
  void ReleaseScratch();
  // Bytes the scratch buffers hold after running chunks of up to n tokens
  // with `output` (for planning a memory budget before running anything).
  static size_t ScratchBytesFor(const Plan& plan, size_t n, Output output);

 private:
  Status EnsureRows(size_t n, Output output);
  // The rope table of this run's positions for step s (row i: positions_[i]),
  // built on the pool when s's angles differ from the last Rope step's.
  const float* RopeTableFor(const PlanStep& s, cpu::ThreadPool* pool);
  // Decode: when the attention after step `from` comes before any other
  // Linear, starts fetching the K/V lines its KvAppend of position `pos`
  // writes (cpu::KvPrefetchAppend), to arrive during the Linear at `from`.
  void WarmKvAppend(size_t from, size_t end, const KvCache& kv, size_t pos) const;

  const Plan* plan_;
  OpTimes* op_times_ = nullptr;
  QuantMath math_;
  cpu::AttentionMath attention_math_;
  size_t rows_ = 0;       // rows every buffer can hold
  size_t tail_rows_ = 0;  // rows the tail-only slots can hold
  std::vector<CacheLineBuffer<float>> slots_;
  CacheLineBuffer<float> temp_;  // for ops whose output aliases an input
  std::vector<int32_t> positions_;
  // Every layer rotates q and k at the same positions with the same angles,
  // so one table per run serves them all (cpu::RopeTable); the key says
  // which angles it holds, rope_head_dim_ 0 meaning none yet.
  CacheLineBuffer<float> rope_table_;
  size_t rope_head_dim_ = 0;
  float rope_theta_ = 0.0f;
  RopeStyle rope_style_ = RopeStyle::kNeox;
};

}  // namespace pocket
