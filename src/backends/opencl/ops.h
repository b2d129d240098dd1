// OpenCL backend: the op set of docs/graph.md over device buffers, with the
// same contracts as src/backends/cpu/ops.h (the CPU twin of every function
// here has the same name). Activations are f32; weights stay in their stored
// dtype (uploaded once, weights.h); the KV cache lives on the device
// (kv_cache.h). Ops are enqueued in order and return before they finish;
// errors are argument checks and enqueue failures.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/opencl/context.h"
#include "format/dtype.h"
#include "format/model_config.h"
#include "graph/kv_type.h"
#include "util/status.h"

namespace pocket::opencl {

// f32 values starting `offset` floats into a device buffer (a row offset
// into an activation).
struct Span {
  const Buffer* buffer = nullptr;
  size_t offset = 0;
};

// A weight matrix [rows, cols] in its stored layout (format/dtype.h).
struct DeviceWeight {
  const Buffer* buffer = nullptr;
  DType dtype = DType::kF32;
  uint32_t group = 0;
  size_t rows = 0;
  size_t cols = 0;
};

// One layer's KV cache: positions [0, capacity) contiguous, position p's
// row (row_stride values, all kv heads) at element p * row_stride. q8
// buffers hold the int8 codes of all positions, then one f16 scale per
// (position, head of head_dim values), the CPU's q8 encoding.
struct DeviceKvView {
  KvType type = KvType::kF16;
  const Buffer* k = nullptr;
  const Buffer* v = nullptr;
  size_t row_stride = 0;
  size_t head_dim = 0;  // values per q8 scale
  size_t capacity = 0;
};

// Bytes of one K (or V) buffer holding `tokens` positions, and the byte
// offset of the q8 scales in it.
size_t KvBufferBytes(KvType type, size_t tokens, size_t row_stride, size_t head_dim);
size_t KvScalesOffset(KvType type, size_t tokens, size_t row_stride);

// out[n, w.rows] = x[n, w.cols] W^T (+ bias[w.rows] when non-null).
Status Linear(Context* ctx, Span x, size_t n, const DeviceWeight& w, const Buffer* bias, Span out);
// out[i] = row ids[i] of table, dequantized (ids are host memory).
Status Embed(Context* ctx, const DeviceWeight& table, const int32_t* ids, size_t n, Span out);
// Row-wise RMSNorm of x[n, d] times w[d]; out may be x.
Status RmsNorm(Context* ctx, Span x, const Buffer& w, size_t n, size_t d, float eps, Span out);
// RMSNorm of each head_dim slice of x[n, n_heads * head_dim], in place.
Status HeadRmsNorm(Context* ctx, Span x, const Buffer& w, size_t n, size_t n_heads, size_t head_dim,
                   float eps);
// Rotary embedding in place; token i is at positions[i] (host memory).
Status Rope(Context* ctx, Span x, size_t n, size_t n_heads, size_t head_dim,
            const int32_t* positions, float theta, RopeStyle style);
// out = silu(g) * u over `count` values; out may be g.
Status Swiglu(Context* ctx, Span g, Span u, size_t count, Span out);
// out = a + b; out may be a.
Status Add(Context* ctx, Span a, Span b, size_t count, Span out);
// Writes k[n, row_stride], v[n, row_stride] at positions [n_past, n_past + n).
Status KvAppend(Context* ctx, const DeviceKvView& kv, size_t n_past, Span k, Span v, size_t n);
// Moves cache positions [src, src + count) to [dst, dst + count), dst < src,
// for a sliding window: V rows are copied as stored; K rows are re-encoded
// at their new positions (rotated by dst - src positions with `rope`, as
// the CPU's KvShift rotates them) and stored again. Ranges that overlap
// move in steps of src - dst positions.
Status KvShift(Context* ctx, const DeviceKvView& kv, size_t dst, size_t src, size_t count,
               const KvRope& rope);
// Causal GQA attention: q[n, n_heads*head_dim] at positions
// [n_past, n_past + n) over cache positions [0, n_past + n); out has q's
// shape and must not overlap q.
Status Attention(Context* ctx, Span q, size_t n, size_t n_past, const DeviceKvView& kv,
                 size_t n_heads, size_t n_kv_heads, size_t head_dim, Span out);

}  // namespace pocket::opencl
