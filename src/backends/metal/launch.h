// Binds a kernel's arguments to slots 0, 1, 2, ... in the order given (the
// kernels number their [[buffer(n)]] slots in parameter order) and
// dispatches it: the one place the ops touch the encoder. A value that does
// not fit the kernels' 32-bit indices is kept as an error and reported by
// the Run* call.
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace pocket::metal
