// A metal::Encoder that runs each dispatch at once on the CPU: the kernel
// compiled against the Metal shim (kernels.h), over the grid (grid.h), with
// each parameter taken from the slot its [[buffer(n)]] attribute names
// (signature.h) among the slots the op bound, so a slot that differs
// between an op and its kernel reads the wrong argument. A binding the
// kernel does not declare, or one of the wrong kind or size, fails the
// dispatch. Buffers are host memory of exactly the size asked for (so
// AddressSanitizer sees overruns).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/metal/encoder.h"

namespace pocket::metal::harness {

class ShimEncoder : public Encoder {
 public:
  ShimEncoder();

  size_t threads_per_group() const override;
  size_t simd_width() const override { return 32; }  // every Apple GPU's
  void SetPipeline(Pipeline pipeline) override;
  void SetBuffer(uint32_t slot, const Buffer& buffer, size_t offset) override;
  void SetBytes(uint32_t slot, const void* data, size_t size) override;
  Status Dispatch(size_t groups0, size_t groups1, size_t threads_per_group) override;
  Status Copy(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
              size_t bytes) override;
  StatusOr<const Buffer*> Upload(const void* data, size_t bytes, size_t* offset) override;
  StatusOr<const Buffer*> Scratch(ScratchId id, size_t bytes) override;

  // A zeroed buffer of `bytes`, alive as long as the encoder.
  Buffer* NewBuffer(size_t bytes);
  Buffer* NewFloats(const std::vector<float>& values);
  Buffer* NewBytes(const std::vector<uint8_t>& bytes);
  static std::vector<float> Floats(const Buffer& buffer, size_t offset, size_t count);

  // How often `pipeline` was dispatched.
  size_t dispatches(Pipeline pipeline) const { return dispatches_[static_cast<size_t>(pipeline)]; }

 private:
  struct Binding {
    const Buffer* buffer = nullptr;  // SetBuffer
    size_t offset = 0;
    std::vector<uint8_t> bytes;  // SetBytes
  };

  std::string text_;  // the preprocessed library source
  bool has_pipeline_ = false;
  Pipeline pipeline_ = Pipeline::kEmbed;
  std::map<uint32_t, Binding> bindings_;
  std::deque<std::unique_ptr<uint8_t[]>> storage_;
  std::deque<Buffer> buffers_;
  std::array<Buffer*, kNumScratch> scratch_{};
  std::array<size_t, gpu::kNumKernels> dispatches_{};
};

}  // namespace pocket::metal::harness
