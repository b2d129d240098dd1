// What the GPU backends share as a Backend: the capabilities of the GPU
// kernels, the plan with each step's weights on the device (step.h), and
// the mutex their sessions hold while they use the device, one at a time.
// A backend derives from DeviceBackend<its buffer>, fills plan_ and steps_
// in its Create, and writes its name, weight bytes and sessions.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "backends/backend.h"
#include "backends/gpu/kv_layout.h"
#include "backends/gpu/step.h"
#include "graph/plan.h"

namespace pocket::gpu {

template <class Buffer>
class DeviceBackend : public Backend {
 public:
  BackendCapabilities capabilities() const override {
    BackendCapabilities c;
    c.kv_types = kKvTypes;
    c.sliding_window = true;
    c.state_rows = true;
    return c;
  }
  KvType default_kv_type() const override { return KvType::kF16; }
  // The host thread that enqueues the kernels.
  int threads() const override { return 1; }

  const StepWeights<Buffer>& step(size_t i) const { return steps_[i]; }
  const Plan& plan() const { return *plan_; }
  std::mutex& mutex() const { return mutex_; }

 protected:
  const Plan* plan_ = nullptr;
  std::vector<StepWeights<Buffer>> steps_;
  mutable std::mutex mutex_;
};

}  // namespace pocket::gpu
