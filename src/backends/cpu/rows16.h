// A q4 or q8 weight in the rows16 layout (format/dtype.h) as the kernels of
// kernels/cpu/matvec_rows16-inl.h read it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/ops.h"

namespace pocket::cpu {

struct Rows16Weights {
  explicit Rows16Weights(const WeightView& w)
      : q8(w.dtype == DType::kQ8),
        group(q8 ? kQ8Group : w.group),
        groups(w.cols / group),
        cols(w.cols),
        rows(w.rows),
        code_bytes(q8 ? 16 * group : 8 * group),
        record_bytes(code_bytes + (q8 ? 2 : 4) * kRows16Block),
        data(w.data) {}

  // The record of 16-row block `block` and group g: codes, scales (and q4's
  // mins).
  const uint8_t* Record(size_t block, size_t g) const {
    return data + (block * groups + g) * record_bytes;
  }

  bool q8;        // int8 codes, 4 per lane (else q4 nibbles, 8 per lane, and mins)
  size_t group;   // weights per group
  size_t groups;  // groups per row
  size_t cols, rows;
  size_t code_bytes;  // per record, before its f16 scales
  size_t record_bytes;
  const uint8_t* data;
  // Decode's GEMV asks for the lines this many bytes past the record it
  // reads into L2 (0: none; DecodeReadAhead in kernel_target.h).
  size_t read_ahead = 0;
};

}  // namespace pocket::cpu
