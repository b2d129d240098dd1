// Runs a Plan on an OpenCL device (ModelOptions.backend = "opencl"): the
// model's weights are uploaded once (OpenClModel, shared by its sessions)
// and each session keeps its activations and KV cache on the device
// (OpenClExecutor); only the logits come back to the host. The steps run
// exactly as Executor runs them on the CPU, op for op.
#pragma once

#ifdef POCKET_WITH_OPENCL

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/opencl/context.h"
#include "backends/opencl/kv_cache.h"
#include "backends/opencl/ops.h"
#include "backends/opencl/weights.h"
#include "runtime/executor.h"
#include "graph/plan.h"

namespace pocket {

// The device, and every weight of the plan on it.
class OpenClModel {
 public:
  // NotFound when the machine has no OpenCL device; BudgetExceeded when the
  // weights do not fit in its memory.
  static StatusOr<std::unique_ptr<OpenClModel>> Create(const Plan& plan);

  // Device copies of a plan step's weights (unused ones are null).
  struct StepWeights {
    opencl::DeviceWeight weight;
    const opencl::Buffer* norm = nullptr;
    const opencl::Buffer* bias = nullptr;
  };
  const StepWeights& step(size_t i) const { return steps_[i]; }

  // The context runs one session's ops at a time (kernel arguments are
  // shared state): hold mutex() while using it.
  opencl::Context* context() const { return ctx_.get(); }
  std::mutex& mutex() const { return mutex_; }
  size_t weight_bytes() const { return weights_->bytes(); }

 private:
  OpenClModel() = default;

  std::unique_ptr<opencl::Context> ctx_;
  std::unique_ptr<opencl::WeightStore> weights_;
  std::vector<StepWeights> steps_;
  mutable std::mutex mutex_;
};

// One session's device state: activation slots and the KV cache.
class OpenClExecutor {
 public:
  OpenClExecutor(const Plan* plan, const OpenClModel* device, KvType kv_type,
                 size_t max_tokens);

  // As Executor::Run; errors are device failures (e.g. out of memory), after
  // which positions from n_past on hold nothing valid.
  Status Run(const int32_t* tokens, size_t n, size_t n_past, Executor::Output output,
             float* logits);
  // Frees the KV cache (a truncation needs nothing: later appends overwrite).
  void Clear() { kv_.Clear(); }
  // Device bytes held by the KV cache and by the activations.
  size_t kv_bytes() const { return kv_.bytes(); }
  size_t scratch_bytes() const;

 private:
  Status EnsureRows(size_t n, Executor::Output output);
  Status RunStep(size_t i, size_t n, size_t n_past, bool last_only, const int32_t* tokens);

  const Plan* plan_;
  const OpenClModel* device_;
  opencl::DeviceKvCache kv_;
  size_t rows_ = 0;       // rows every slot can hold
  size_t tail_rows_ = 0;  // rows the tail-only slots can hold
  std::vector<opencl::Buffer> slots_;
  opencl::Buffer temp_;  // for ops whose output aliases an input
  std::vector<int32_t> positions_;
};

}  // namespace pocket

#endif  // POCKET_WITH_OPENCL
