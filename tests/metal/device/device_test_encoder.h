// The op tests' encoder on a Mac (POCKET_METAL_DEVICE_TESTS): the host's
// CommandEncoder on the default Metal device, committing and waiting after
// every dispatch and copy, so a test reads an op's results from shared
// memory as soon as the op returns. The same test-facing calls as the
// shim's harness::ShimEncoder. Plain C++ outside; Metal inside the .mm.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/metal/encoder.h"

namespace pocket::metal::device {

class DeviceTestEncoder : public Encoder {
 public:
  DeviceTestEncoder();
  ~DeviceTestEncoder() override;

  size_t threads_per_group() const override;
  size_t simd_width() const override;
  void SetPipeline(Pipeline pipeline) override;
  void SetBuffer(uint32_t slot, const Buffer& buffer, size_t offset) override;
  void SetBytes(uint32_t slot, const void* data, size_t size) override;
  Status Dispatch(size_t groups0, size_t groups1, size_t threads_per_group) override;
  Status Copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
              size_t bytes) override;
  StatusOr<const Buffer*> Upload(const void* data, size_t bytes, size_t* offset) override;
  StatusOr<const Buffer*> Scratch(ScratchId id, size_t bytes) override;

  // A zeroed shared-storage buffer of `bytes`, alive as long as the encoder.
  Buffer* NewBuffer(size_t bytes);
  Buffer* NewFloats(const std::vector<float>& values);
  Buffer* NewBytes(const std::vector<uint8_t>& bytes);
  static std::vector<float> Floats(const Buffer& buffer, size_t offset, size_t count);

  size_t dispatches(Pipeline pipeline) const { return dispatches_[static_cast<size_t>(pipeline)]; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::array<size_t, gpu::kNumKernels> dispatches_{};
};

}  // namespace pocket::metal::device
