#include "backends/metal/launch.h"

#include <limits>

namespace pocket::metal {

Launch& Launch::Arg(const Buffer& buffer, size_t offset) {
  encoder_->SetBuffer(slot_++, buffer, offset);
  return *this;
}

Launch& Launch::Arg(size_t value) {
  if (value > std::numeric_limits<uint32_t>::max() && status_.ok()) {
    status_ = Errorf(StatusCode::kInvalidArgument,
                     "%s: argument %u is %zu, beyond the kernels' 32-bit indices",
                     gpu::KernelName(pipeline_), slot_, value);
  }
  const uint32_t v = static_cast<uint32_t>(value);
  encoder_->SetBytes(slot_++, &v, sizeof(v));
  return *this;
}

Launch& Launch::Arg(float value) {
  encoder_->SetBytes(slot_++, &value, sizeof(value));
  return *this;
}

Status Launch::RunThreads(size_t threads) {
  const size_t group = encoder_->threads_per_group();
  return RunGroups((threads + group - 1) / group, 1);
}

Status Launch::RunGroups(size_t groups0, size_t groups1) {
  POCKET_RETURN_IF_ERROR(status_);
  if (groups0 == 0 || groups1 == 0) return Status::Ok();
  return encoder_->Dispatch(groups0, groups1, encoder_->threads_per_group());
}

StatusOr<gpu::At<Buffer>> Stage(Encoder* enc, gpu::Staged, const void* data, size_t bytes) {
  gpu::At<Buffer> at;
  POCKET_ASSIGN_OR_RETURN(at.buffer, enc->Upload(data, bytes, &at.offset));
  return at;
}

gpu::LinearTiling PickLinear(const Encoder* enc, size_t n, size_t cols) {
  const size_t simds = enc->threads_per_group() / enc->simd_width();
  if (n == 1) return {Pipeline::kLinearRows, simds, gpu::LinearTiling{}.tokens_per_group};
  if (cols % 8 == 0 && enc->simd_width() == 32) return {Pipeline::kLinearMma, 8 * simds, 8};
  return {};
}

}  // namespace pocket::metal
