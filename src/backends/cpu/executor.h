// The CPU backend's session: a KV cache in host pages (kv_cache.h) and the
// scratch buffers the plan's steps compute in. Values live in per-slot
// buffers sized for the chunk, which grow on demand and are kept across
// runs; the plan walker (backends/plan_walker.h) says which rows each step
// covers, and Run's switch calls the Highway kernels (ops.h) on the
// model's thread pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/kv_cache.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/thread_pool.h"
#include "backends/op_times.h"
#include "backends/plan_walker.h"
#include "graph/plan.h"
#include "util/cache_line_vector.h"

namespace pocket::cpu {

class Executor final : public BackendSession {
 public:
  // q4/q8 Linear steps multiply with `math`, attention with
  // `attention_math` (ops.h), on `pool` (shared with the model's other
  // sessions; internally synchronized).
  Executor(const Plan* plan, ThreadPool* pool, QuantMath math, AttentionMath attention_math,
           const BackendSessionOptions& options);

  Status Run(const int32_t* tokens, size_t n, size_t n_past, BackendOutput output,
             float* logits) override;

  Status Reserve(size_t n_tokens) override { return kv_.Reserve(n_tokens); }
  void Truncate(size_t n_tokens) override { kv_.Truncate(n_tokens); }
  void Clear() override { kv_.Clear(); }
  Status Drop(size_t begin, size_t count, size_t n_tokens) override {
    kv_.Drop(begin, count, n_tokens, plan_->kv_rope);
    return Status::Ok();
  }
  Status ExportRows(size_t n_tokens, const ByteSink& sink) const override {
    kv_.Write(n_tokens, sink);
    return Status::Ok();
  }
  Status ValidateRows(size_t n_tokens, const uint8_t* data, size_t size) const override {
    return kv_.Validate(n_tokens, data, size);
  }
  Status ImportRows(size_t n_tokens, const uint8_t* data) override {
    kv_.Read(n_tokens, data);
    return Status::Ok();
  }

  size_t kv_bytes() const override { return kv_.bytes(); }
  size_t KvBytesFor(size_t n_tokens) const override { return kv_.BytesFor(n_tokens); }
  size_t kv_page_tokens() const override { return kv_.page_tokens(); }
  size_t kv_page_bytes() const override { return kv_.page_bytes(); }
  size_t kv_commit_slack() const override { return kv_.commit_slack(); }

  size_t scratch_bytes() const override;
  size_t ScratchBytesFor(size_t n, BackendOutput output) const override {
    return ScratchBytesFor(*plan_, n, output);
  }
  // The same for any plan, before a session exists.
  static size_t ScratchBytesFor(const Plan& plan, size_t n, BackendOutput output);
  void ReleaseScratch() override;
  void set_op_times(OpTimes* times) override { op_times_ = times; }

  const KvCache& kv_cache() const { return kv_; }

 private:
  Status EnsureRows(size_t n, BackendOutput output);
  // The rope table of this run's positions for step s (row i: positions_[i]),
  // built on the pool when s's angles differ from the last Rope step's.
  const float* RopeTableFor(const PlanStep& s);
  // Decode: when the attention after step `from` comes before any other
  // Linear, starts fetching the K/V lines its KvAppend of position `pos`
  // writes (KvPrefetchAppend), to arrive during the Linear before `from`.
  void WarmKvAppend(size_t from, size_t end, size_t pos) const;
  // Runs one step of the walk over tokens at positions [n_past, n_past +
  // n); `dst` is where its (first) output goes.
  void RunStep(const WalkStep& w, const int32_t* tokens, size_t n, size_t n_past, float* dst);

  const Plan* plan_;
  ThreadPool* pool_;
  QuantMath math_;
  AttentionMath attention_math_;
  KvCache kv_;
  OpTimes* op_times_ = nullptr;
  size_t rows_ = 0;       // rows every buffer can hold
  size_t tail_rows_ = 0;  // rows the tail-only slots can hold
  std::vector<CacheLineBuffer<float>> slots_;
  CacheLineBuffer<float> temp_;  // for ops whose output aliases an input
  std::vector<int32_t> positions_;
  // Every layer rotates q and k at the same positions with the same angles,
  // so one table per run serves them all (RopeTable); the key says which
  // angles it holds, rope_head_dim_ 0 meaning none yet.
  CacheLineBuffer<float> rope_table_;
  size_t rope_head_dim_ = 0;
  float rope_theta_ = 0.0f;
  RopeStyle rope_style_ = RopeStyle::kNeox;
};

}  // namespace pocket::cpu
