// The int8-activation path of Linear (QuantMath::kInt8): the views its
// kernels (kernels/cpu/matvec_int8-inl.h) take, and the entry Linear calls.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/ops.h"

namespace pocket::cpu {

// A q4 or q8 weight in the planar layout of format/dtype.h.
struct QuantizedRows {
  explicit QuantizedRows(const WeightView& w)
      : group(w.dtype == DType::kQ8 ? kQ8Group : w.group),
        groups(w.cols / group),
        cols(w.cols),
        rows(w.rows),
        code_bytes(w.dtype == DType::kQ8 ? w.cols : w.cols / 2),
        codes(w.data),
        scales(w.data + w.rows * code_bytes),
        mins(w.dtype == DType::kQ4 ? scales + w.rows * groups * 2 : nullptr) {}

  const uint8_t* Codes(size_t row, size_t g) const {
    return codes + row * code_bytes + g * (code_bytes / groups);
  }
  const uint8_t* Scales(size_t row) const { return scales + row * groups * 2; }  // f16
  const uint8_t* Mins(size_t row) const { return mins + row * groups * 2; }      // f16

  size_t group;   // weights per group
  size_t groups;  // groups per row
  size_t cols, rows;
  size_t code_bytes;  // per row
  const uint8_t* codes;
  const uint8_t* scales;
  const uint8_t* mins;  // q4 only; nullptr for q8
};

// Tokens quantized per weight group (kernels/cpu/act_quant-inl.h): token t
// has codes q[t * cols, (t + 1) * cols), scales d and exact sums s at
// [t * groups, (t + 1) * groups), and the sums of each group's codes qs at
// the same place, which the q8 rows16 prefill kernels need (LinearInt8Group
// makes them for those only; null otherwise). The AMX prompt kernels
// (matmul_rows16_amx-inl.h) also take d and s laid out 16 tokens to a run,
// [t / 16][g][16] (tokens past the last standing in as the last), which
// starts at the same offset t * groups for any t that is a multiple of 16
// (null where they are not made).
struct QuantizedActs {
  // The activations from token t on, for `cols` columns in `groups` groups
  // (the tiled scales where t is a multiple of 16).
  QuantizedActs From(size_t t, size_t cols, size_t groups) const {
    const auto at = [&](const auto* p) { return p ? p + t * groups : nullptr; };
    return {q + t * cols, at(d), at(s), at(qs), at(d_tiles), at(s_tiles)};
  }

  const int8_t* q;
  const float* d;
  const float* s;
  const int32_t* qs = nullptr;
  const float* d_tiles = nullptr;
  const float* s_tiles = nullptr;
};

// out[n, w.rows] = x * W^T (+ bias) with int8 activations. Returns false
// (and leaves out untouched) when w is not q4/q8 or the dispatched target has
// no int8 dot product; w must already be validated by Linear.
bool LinearInt8(const float* x, size_t n, const WeightView& w, const float* bias, float* out,
                ThreadPool* pool);
// LinearGroup's int8 path: false (nothing written) unless every weight is
// q4/q8 with the same columns and activation group and the target has an
// int8 dot product.
bool LinearInt8Group(const float* x, size_t n, const LinearOut* items, size_t count,
                     ThreadPool* pool);

// Decode's rows go to threads as ParallelRanges shares of blocks of
// `block_rows` rows of w, walked in pieces of about 32 KB of weights (the
// owner checks for a thread that wants part of its share once per piece;
// pieces of 8 to 64 KB measured alike). The piece in blocks, at least 1.
size_t DecodePiece(const WeightView& w, size_t block_rows);

// Quantizes x[cols] per `block` values exactly as LinearInt8 does, on the
// dispatched target (the tests check it against the reference).
void QuantizeActivations(const float* x, size_t cols, size_t block, int8_t* q, float* d, float* s);

}  // namespace pocket::cpu
