// A weight matrix as every backend receives it: a view of the bytes stored
// in the file, in their stored dtype and layout (format/dtype.h). Backends
// read it in place (CPU) or upload it (GPUs).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/dtype.h"

namespace pocket {

// A weight matrix [rows, cols] as stored in the file (format/dtype.h).
struct WeightView {
  const uint8_t* data = nullptr;
  DType dtype = DType::kF32;
  uint32_t group = 0;
  size_t rows = 0;
  size_t cols = 0;
  TensorLayout layout = TensorLayout::kRowMajor;  // kRows16: q4 or q8 for the int8 kernels
};

}  // namespace pocket
