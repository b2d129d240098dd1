// What the shared GPU ops (backends/gpu/ops.h) need from a Metal Encoder:
// the launcher, which binds a kernel's arguments to slots 0, 1, 2, ... in
// the order given (the kernels number their [[buffer(n)]] slots in
// parameter order) and dispatches it, the one place the ops touch the
// encoder; and the hooks they find by argument-dependent lookup. A value
// that does not fit the kernels' 32-bit indices is kept as an error and
// reported by the Run* call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/gpu/ops.h"
#include "backends/metal/encoder.h"

namespace pocket::metal {

class Launch {
 public:
  Launch(Encoder* encoder, Pipeline pipeline) : encoder_(encoder), pipeline_(pipeline) {
    encoder_->SetPipeline(pipeline);
  }

  Launch& Arg(const Buffer& buffer, size_t offset = 0);
  Launch& Arg(size_t value);  // bound as uint
  Launch& Arg(float value);

  // One thread per item of [0, threads), in threadgroups of
  // threads_per_group().
  Status RunThreads(size_t threads);
  // groups0 x groups1 threadgroups of threads_per_group() threads along x.
  Status RunGroups(size_t groups0, size_t groups1);

 private:
  Encoder* encoder_;
  Pipeline pipeline_;
  uint32_t slot_ = 0;
  Status status_;
};

// Declared only: names the buffer type of the ops over an Encoder.
const Buffer* DeviceBuffer(const Encoder* enc);
inline size_t ByteSize(const Buffer& buffer) { return buffer.bytes; }
inline Launch StartLaunch(Encoder* enc, Pipeline pipeline) { return Launch(enc, pipeline); }
// Copies host data into the command buffer's upload memory.
StatusOr<gpu::At<Buffer>> Stage(Encoder* enc, gpu::Staged id, const void* data, size_t bytes);
inline StatusOr<const Buffer*> ScoresScratch(Encoder* enc, size_t bytes) {
  return enc->Scratch(ScratchId::kScores, bytes);
}
// Decode: linear_rows, one SIMD-group per output row. Prefill: linear_mma,
// SIMD-group matrices over 8-token tiles (8 rows per SIMD-group of 32);
// else linear, one threadgroup per row and block of LINEAR_TOKENS tokens.
gpu::LinearTiling PickLinear(const Encoder* enc, size_t n, size_t cols);

}  // namespace pocket::metal
