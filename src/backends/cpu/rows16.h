// A q4 weight in the rows16 layout (format/dtype.h) as the kernels of
// kernels/cpu/matvec_rows16-inl.h read it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/ops.h"

namespace pocket::cpu {

struct Rows16Weights {
  explicit Rows16Weights(const WeightView& w)
      : group(w.group),
        groups(w.cols / w.group),
        cols(w.cols),
        rows(w.rows),
        record_bytes(8 * w.group + 4 * kRows16Block),
        data(w.data) {}

  // The record of 16-row block `block` and group g: codes, scales, mins.
  const uint8_t* Record(size_t block, size_t g) const {
    return data + (block * groups + g) * record_bytes;
  }

  size_t group;   // weights per group
  size_t groups;  // groups per row
  size_t cols, rows;
  size_t record_bytes;
  const uint8_t* data;
};

}  // namespace pocket::cpu
