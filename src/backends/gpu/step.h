// One step of the plan walk (backends/plan_walker.h) on a GPU backend: the
// switch over OpKind that its session hands WalkPlan, written once over the
// shared ops (ops.h). The session keeps the buffers; this launches the
// step's ops on them, in order, and returns before they finish.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/gpu/ops.h"
#include "backends/plan_walker.h"
#include "graph/plan.h"
#include "util/status.h"

namespace pocket::gpu {

// A plan step's weights on the device (unused ones are null).
template <class Buffer>
struct StepWeights {
  DeviceWeight<Buffer> weight;
  const Buffer* norm = nullptr;
  const Buffer* bias = nullptr;
};

// A session's activations: one buffer per plan slot, and the temp buffer
// of ops whose output aliases an input.
template <class Buffer>
struct Activations {
  const std::vector<Buffer>* slots = nullptr;
  const Buffer* temp = nullptr;
};

// The run the step belongs to: its n tokens (host memory) at positions
// [n_past, n_past + n), listed in `positions`.
struct RunTokens {
  const int32_t* tokens = nullptr;
  const int32_t* positions = nullptr;
  size_t n = 0;
  size_t n_past = 0;
};

// `kv` is the session's KV cache: kv.View(layer) gives a DeviceKvView.
template <class Device, class KvCache>
Status RunStep(Device* dev, const WalkStep& w, const StepWeights<BufferOf<Device>>& weights,
               const Activations<BufferOf<Device>>& act, const KvCache& kv, const RunTokens& run) {
  using Buffer = BufferOf<Device>;
  const PlanStep& s = *w.step;
  const std::vector<Buffer>& slots = *act.slots;
  const size_t rows = w.rows;
  auto value = [&](int k, size_t width) {
    return Span<Buffer>{&slots[s.in[k]], w.in_row[k] * width};
  };
  const Span<Buffer> dst{&slots[s.out], w.out_row[0] * s.width};
  const Span<Buffer> temp{act.temp, 0};
  const Span<Buffer> out = w.via_temp ? temp : dst;
  const size_t bytes = rows * s.width * sizeof(float);
  auto copy = [&](Span<Buffer> from, Span<Buffer> to) {
    return dev->Copy(*from.buffer, from.offset * sizeof(float), *to.buffer,
                     to.offset * sizeof(float), bytes);
  };
  if (w.copy_input) POCKET_RETURN_IF_ERROR(copy(value(0, s.in_width), dst));

  switch (s.op) {
    case OpKind::kEmbed:
      POCKET_RETURN_IF_ERROR(Embed(dev, weights.weight, run.tokens + w.r0, rows, out));
      break;
    case OpKind::kRmsNorm:
      POCKET_RETURN_IF_ERROR(
          RmsNorm(dev, value(0, s.in_width), *weights.norm, rows, s.in_width, s.eps, out));
      break;
    case OpKind::kHeadRmsNorm:
      POCKET_RETURN_IF_ERROR(
          HeadRmsNorm(dev, dst, *weights.norm, rows, s.width / s.head_dim, s.head_dim, s.eps));
      break;
    case OpKind::kRope:
      POCKET_RETURN_IF_ERROR(Rope(dev, dst, rows, s.width / s.head_dim, s.head_dim,
                                  run.positions + w.r0, s.theta, s.style));
      break;
    case OpKind::kLinear:
      POCKET_RETURN_IF_ERROR(
          Linear(dev, value(0, s.in_width), rows, weights.weight, weights.bias, out));
      break;
    case OpKind::kAttention: {
      const size_t kv_width = s.n_kv_heads * s.head_dim;
      const DeviceKvView<Buffer> view = kv.View(s.layer);
      POCKET_RETURN_IF_ERROR(
          KvAppend(dev, view, run.n_past, value(1, kv_width), value(2, kv_width), run.n));
      POCKET_RETURN_IF_ERROR(Attention(dev, value(0, s.in_width), run.n, run.n_past, view,
                                       s.n_heads, s.n_kv_heads, s.head_dim, out));
      break;
    }
    case OpKind::kSwiglu:
      POCKET_RETURN_IF_ERROR(
          Swiglu(dev, value(0, s.in_width), value(1, s.in_width), rows * s.width, out));
      break;
    case OpKind::kAdd:
      POCKET_RETURN_IF_ERROR(
          Add(dev, value(0, s.in_width), value(1, s.in_width), rows * s.width, out));
      break;
  }
  return w.via_temp ? copy(temp, dst) : Status::Ok();
}

}  // namespace pocket::gpu
