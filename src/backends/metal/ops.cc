#include "backends/metal/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/metal/launch.h"

namespace pocket::metal {
namespace {

// An out-of-bounds access on the GPU is silent corruption or a lost device,
// so every op checks its spans against their buffers first.
Status CheckSpan(const char* op, const char* name, Span s, size_t count) {
  if (s.buffer == nullptr) {
    return Errorf(StatusCode::kInvalidArgument, "%s: %s has no buffer", op, name);
  }
  if ((s.offset + count) * sizeof(float) > s.buffer->bytes) {
    return Errorf(StatusCode::kInvalidArgument,
                  "%s: %s needs %zu floats at offset %zu but its buffer holds %zu", op, name, count,
                  s.offset, s.buffer->bytes / sizeof(float));
  }
  return Status::Ok();
}

Status CheckWeight(const char* op, const DeviceWeight& w) {
  uint64_t bytes = 0;
  if (w.buffer == nullptr || !TensorByteSize(w.dtype, w.rows, w.cols, w.group, &bytes) ||
      w.offset > w.buffer->bytes || bytes > w.buffer->bytes - w.offset) {
    return Errorf(StatusCode::kInvalidArgument,
                  "%s: weight [%zu, %zu] %s (group %u) at byte %zu does not fit its buffer", op,
                  w.rows, w.cols, DTypeName(w.dtype), w.group, w.offset);
  }
  return Status::Ok();
}

// MAX_ROTATED_HEAD in hadamard.cl: q8 heads are quantized in thread arrays.
constexpr size_t kMaxQ8HeadDim = 256;

Status CheckKv(const char* op, const DeviceKvView& kv, size_t positions) {
  if (kv.type != KvType::kF32 && kv.type != KvType::kF16 && kv.type != KvType::kQ8) {
    return Errorf(StatusCode::kUnsupported, "%s: the Metal kernels store no %s KV cache", op,
                  KvTypeName(kv.type));
  }
  if (kv.type == KvType::kQ8 && (kv.head_dim == 0 || kv.row_stride % kv.head_dim != 0)) {
    return Errorf(StatusCode::kInvalidArgument, "%s: q8 KV head_dim %zu does not divide row %zu",
                  op, kv.head_dim, kv.row_stride);
  }
  if (kv.type == KvType::kQ8 && kv.head_dim > kMaxQ8HeadDim) {
    return Errorf(StatusCode::kUnsupported,
                  "%s: the Metal kernels quantize KV heads of at most %zu values to q8, this "
                  "model's have %zu; use kv_type=f16",
                  op, kMaxQ8HeadDim, kv.head_dim);
  }
  const size_t bytes = KvBufferBytes(kv.type, kv.capacity, kv.row_stride, kv.head_dim);
  if (kv.k == nullptr || kv.v == nullptr || kv.k->bytes < bytes || kv.v->bytes < bytes) {
    return Errorf(StatusCode::kInvalidArgument, "%s: KV view does not match its buffers", op);
  }
  if (positions > kv.capacity) {
    return Errorf(StatusCode::kInvalidArgument,
                  "%s: needs %zu KV positions but the cache holds %zu; reserve them first", op,
                  positions, kv.capacity);
  }
  return Status::Ok();
}

// Bound on the attention scores scratch: 16 MiB.
constexpr size_t kMaxScoreFloats = size_t{4} << 20;

// LINEAR_TOKENS in linear.cl: tokens per threadgroup of both linear kernels.
constexpr size_t kLinearTokens = 4;

// The enum values are what dequant.cl's DTYPE_* and KV_* constants mirror.
size_t DTypeCode(DType t) { return static_cast<size_t>(t); }
size_t KvCode(KvType t) { return static_cast<size_t>(t); }

// Each token's cos and sin of every rope frequency, computed exactly as the
// CPU backend computes them (kernels/cpu/rope-inl.h), so both backends
// rotate by identical floats.
Status UploadRopeAngles(Encoder* enc, const int32_t* positions, size_t n, size_t head_dim,
                        float theta, const Buffer** cos_buf, size_t* cos_off,
                        const Buffer** sin_buf, size_t* sin_off) {
  const size_t half = head_dim / 2;
  std::vector<float> cos_t(n * half), sin_t(n * half);
  for (size_t i = 0; i < half; ++i) {
    const float freq =
        1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
    for (size_t t = 0; t < n; ++t) {
      const float angle = static_cast<float>(positions[t]) * freq;
      cos_t[t * half + i] = std::cos(angle);
      sin_t[t * half + i] = std::sin(angle);
    }
  }
  const size_t bytes = cos_t.size() * sizeof(float);
  POCKET_ASSIGN_OR_RETURN(*cos_buf, enc->Upload(cos_t.data(), bytes, cos_off));
  POCKET_ASSIGN_OR_RETURN(*sin_buf, enc->Upload(sin_t.data(), bytes, sin_off));
  return Status::Ok();
}

}  // namespace

size_t KvBufferBytes(KvType type, size_t tokens, size_t row_stride, size_t head_dim) {
  switch (type) {
    case KvType::kF32:
      return tokens * row_stride * 4;
    case KvType::kF16:
      return tokens * row_stride * 2;
    case KvType::kQ8:
      return tokens * row_stride + tokens * (row_stride / head_dim) * 2;
    case KvType::kBf16:  // a CPU layout: CheckKv refuses it
      break;
  }
  return 0;
}

size_t KvScalesOffset(KvType type, size_t tokens, size_t row_stride) {
  return type == KvType::kQ8 ? tokens * row_stride : 0;
}

Status Linear(Encoder* enc, Span x, size_t n, const DeviceWeight& w, const Buffer* bias, Span out) {
  POCKET_RETURN_IF_ERROR(CheckWeight("linear", w));
  POCKET_RETURN_IF_ERROR(CheckSpan("linear", "x", x, n * w.cols));
  POCKET_RETURN_IF_ERROR(CheckSpan("linear", "out", out, n * w.rows));
  if (bias != nullptr) POCKET_RETURN_IF_ERROR(CheckSpan("linear", "bias", Span{bias, 0}, w.rows));
  // Decode: linear_rows, one SIMD-group per output row. Prefill:
  // linear_mma, SIMD-group matrices over 8-token tiles (8 rows per
  // SIMD-group of 32); else linear, one threadgroup per row and block of
  // LINEAR_TOKENS tokens.
  const size_t simds = enc->threads_per_group() / enc->simd_width();
  Pipeline pipeline = Pipeline::kLinear;
  size_t rows_per_group = 1, tokens_per_group = kLinearTokens;
  if (n == 1) {
    pipeline = Pipeline::kLinearRows;
    rows_per_group = simds;
  } else if (w.cols % 8 == 0 && enc->simd_width() == 32) {
    pipeline = Pipeline::kLinearMma;
    rows_per_group = 8 * simds;
    tokens_per_group = 8;
  }
  return Launch(enc, pipeline)
      .Arg(*x.buffer)
      .Arg(*w.buffer, w.offset)
      .Arg(bias != nullptr ? *bias : *out.buffer)  // unread when has_bias is 0
      .Arg(*out.buffer)
      .Arg(x.offset)
      .Arg(out.offset)
      .Arg(n)
      .Arg(w.rows)
      .Arg(w.cols)
      .Arg(DTypeCode(w.dtype))
      .Arg(static_cast<size_t>(w.group))
      .Arg(static_cast<size_t>(bias != nullptr))
      .RunGroups((w.rows + rows_per_group - 1) / rows_per_group,
                 (n + tokens_per_group - 1) / tokens_per_group);
}

Status Embed(Encoder* enc, const DeviceWeight& table, const int32_t* ids, size_t n, Span out) {
  POCKET_RETURN_IF_ERROR(CheckWeight("embed", table));
  POCKET_RETURN_IF_ERROR(CheckSpan("embed", "out", out, n * table.cols));
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= table.rows) {
      return Errorf(StatusCode::kInvalidArgument, "embed: id %d at index %zu is outside [0, %zu)",
                    ids[i], i, table.rows);
    }
  }
  size_t ids_off = 0;
  POCKET_ASSIGN_OR_RETURN(const Buffer* ids_buf, enc->Upload(ids, n * sizeof(int32_t), &ids_off));
  return Launch(enc, Pipeline::kEmbed)
      .Arg(*table.buffer, table.offset)
      .Arg(*ids_buf, ids_off)
      .Arg(*out.buffer)
      .Arg(out.offset)
      .Arg(n)
      .Arg(table.rows)
      .Arg(table.cols)
      .Arg(DTypeCode(table.dtype))
      .Arg(static_cast<size_t>(table.group))
      .RunThreads(n * table.cols);
}

Status RmsNorm(Encoder* enc, Span x, const Buffer& w, size_t n, size_t d, float eps, Span out) {
  POCKET_RETURN_IF_ERROR(CheckSpan("rms_norm", "x", x, n * d));
  POCKET_RETURN_IF_ERROR(CheckSpan("rms_norm", "out", out, n * d));
  POCKET_RETURN_IF_ERROR(CheckSpan("rms_norm", "w", Span{&w, 0}, d));
  return Launch(enc, Pipeline::kRmsNorm)
      .Arg(*x.buffer)
      .Arg(w)
      .Arg(*out.buffer)
      .Arg(x.offset)
      .Arg(out.offset)
      .Arg(d)
      .Arg(eps)
      .RunGroups(n, 1);
}

Status HeadRmsNorm(Encoder* enc, Span x, const Buffer& w, size_t n, size_t n_heads, size_t head_dim,
                   float eps) {
  return RmsNorm(enc, x, w, n * n_heads, head_dim, eps, x);
}

Status Rope(Encoder* enc, Span x, size_t n, size_t n_heads, size_t head_dim,
            const int32_t* positions, float theta, RopeStyle style) {
  POCKET_RETURN_IF_ERROR(CheckSpan("rope", "x", x, n * n_heads * head_dim));
  if (head_dim % 2 != 0) {
    return Errorf(StatusCode::kInvalidArgument, "rope: head_dim %zu is odd", head_dim);
  }
  size_t cos_off = 0, sin_off = 0;
  const Buffer *cos_buf = nullptr, *sin_buf = nullptr;
  POCKET_RETURN_IF_ERROR(
      UploadRopeAngles(enc, positions, n, head_dim, theta, &cos_buf, &cos_off, &sin_buf, &sin_off));
  return Launch(enc, Pipeline::kRope)
      .Arg(*x.buffer)
      .Arg(*cos_buf, cos_off)
      .Arg(*sin_buf, sin_off)
      .Arg(x.offset)
      .Arg(n)
      .Arg(n_heads)
      .Arg(head_dim)
      .Arg(static_cast<size_t>(style))  // matches ROPE_NEOX in rope.cl
      .RunThreads(n * n_heads * (head_dim / 2));
}

namespace {

Status Elementwise(Encoder* enc, Pipeline pipeline, const char* op, Span a, Span b, size_t count,
                   Span out) {
  POCKET_RETURN_IF_ERROR(CheckSpan(op, "first input", a, count));
  POCKET_RETURN_IF_ERROR(CheckSpan(op, "second input", b, count));
  POCKET_RETURN_IF_ERROR(CheckSpan(op, "out", out, count));
  return Launch(enc, pipeline)
      .Arg(*a.buffer)
      .Arg(*b.buffer)
      .Arg(*out.buffer)
      .Arg(a.offset)
      .Arg(b.offset)
      .Arg(out.offset)
      .Arg(count)
      .RunThreads(count);
}

}  // namespace

Status Swiglu(Encoder* enc, Span g, Span u, size_t count, Span out) {
  return Elementwise(enc, Pipeline::kSwiglu, "swiglu", g, u, count, out);
}

Status Add(Encoder* enc, Span a, Span b, size_t count, Span out) {
  return Elementwise(enc, Pipeline::kAdd, "add", a, b, count, out);
}

Status KvAppend(Encoder* enc, const DeviceKvView& kv, size_t n_past, Span k, Span v, size_t n) {
  POCKET_RETURN_IF_ERROR(CheckKv("kv_append", kv, n_past + n));
  POCKET_RETURN_IF_ERROR(CheckSpan("kv_append", "k", k, n * kv.row_stride));
  POCKET_RETURN_IF_ERROR(CheckSpan("kv_append", "v", v, n * kv.row_stride));
  if (kv.type == KvType::kQ8) {
    return Launch(enc, Pipeline::kKvAppendQ8)
        .Arg(*k.buffer)
        .Arg(*v.buffer)
        .Arg(*kv.k)
        .Arg(*kv.v)
        .Arg(k.offset)
        .Arg(v.offset)
        .Arg(n_past)
        .Arg(n)
        .Arg(kv.row_stride)
        .Arg(kv.head_dim)
        .Arg(KvScalesOffset(kv.type, kv.capacity, kv.row_stride))
        .RunThreads(n * (kv.row_stride / kv.head_dim));
  }
  return Launch(enc, Pipeline::kKvAppend)
      .Arg(*k.buffer)
      .Arg(*v.buffer)
      .Arg(*kv.k)
      .Arg(*kv.v)
      .Arg(k.offset)
      .Arg(v.offset)
      .Arg(n_past)
      .Arg(n)
      .Arg(kv.row_stride)
      .Arg(KvCode(kv.type))
      .RunThreads(n * kv.row_stride);
}

namespace {

// Copies positions [src, src + count) of one K or V buffer to dst: the
// codes (or values), then the q8 scales.
Status CopyKvRows(Encoder* enc, const DeviceKvView& kv, const Buffer& buffer, size_t dst,
                  size_t src, size_t count) {
  const size_t values = KvBufferBytes(kv.type, 1, kv.row_stride, kv.head_dim);
  const size_t codes = kv.type == KvType::kQ8 ? kv.row_stride : values;
  POCKET_RETURN_IF_ERROR(enc->Copy(buffer, src * codes, buffer, dst * codes, count * codes));
  if (kv.type != KvType::kQ8) return Status::Ok();
  const size_t scales = KvScalesOffset(kv.type, kv.capacity, kv.row_stride);
  const size_t scale_bytes = values - codes;
  return enc->Copy(buffer, scales + src * scale_bytes, buffer, scales + dst * scale_bytes,
                   count * scale_bytes);
}

}  // namespace

Status KvShift(Encoder* enc, const DeviceKvView& kv, size_t dst, size_t src, size_t count,
               const KvRope& rope) {
  POCKET_RETURN_IF_ERROR(CheckKv("kv_shift", kv, src + count));
  const size_t group = kv.type == KvType::kQ8 ? kv.head_dim : kv.row_stride;
  if (dst >= src ||
      (rope.head_dim != 0 && (rope.head_dim % 2 != 0 || group % rope.head_dim != 0))) {
    return Errorf(StatusCode::kInvalidArgument,
                  "kv_shift: cannot move positions from %zu to %zu with rope heads of %zu in rows "
                  "of %zu",
                  src, dst, rope.head_dim, kv.row_stride);
  }
  if (count == 0) return Status::Ok();
  // A negative position rotates backwards: R(p) then R(dst - src) is
  // R(p + dst - src).
  const int32_t delta = -static_cast<int32_t>(src - dst);
  const Buffer *cos_buf = nullptr, *sin_buf = nullptr;
  size_t cos_off = 0, sin_off = 0;
  if (rope.head_dim != 0) {
    POCKET_RETURN_IF_ERROR(UploadRopeAngles(enc, &delta, 1, rope.head_dim, rope.theta, &cos_buf,
                                            &cos_off, &sin_buf, &sin_off));
  }
  // Steps of at most src - dst positions never write a row that a later
  // thread of the same dispatch reads; dispatches and copies run in
  // encoding order.
  const size_t step = src - dst;
  for (size_t done = 0; done < count; done += step) {
    const size_t n = std::min(step, count - done);
    POCKET_RETURN_IF_ERROR(CopyKvRows(enc, kv, *kv.v, dst + done, src + done, n));
    if (rope.head_dim == 0) {
      POCKET_RETURN_IF_ERROR(CopyKvRows(enc, kv, *kv.k, dst + done, src + done, n));
    } else if (kv.type == KvType::kQ8) {
      POCKET_RETURN_IF_ERROR(Launch(enc, Pipeline::kKvShiftQ8)
                                 .Arg(*kv.k)
                                 .Arg(*cos_buf, cos_off)
                                 .Arg(*sin_buf, sin_off)
                                 .Arg(dst + done)
                                 .Arg(src + done)
                                 .Arg(n)
                                 .Arg(kv.row_stride)
                                 .Arg(kv.head_dim)
                                 .Arg(rope.head_dim)
                                 .Arg(static_cast<size_t>(rope.style))
                                 .Arg(KvScalesOffset(kv.type, kv.capacity, kv.row_stride))
                                 .RunThreads(n * (kv.row_stride / kv.head_dim)));
    } else {
      POCKET_RETURN_IF_ERROR(Launch(enc, Pipeline::kKvShift)
                                 .Arg(*kv.k)
                                 .Arg(*cos_buf, cos_off)
                                 .Arg(*sin_buf, sin_off)
                                 .Arg(dst + done)
                                 .Arg(src + done)
                                 .Arg(n)
                                 .Arg(kv.row_stride)
                                 .Arg(rope.head_dim)
                                 .Arg(static_cast<size_t>(rope.style))
                                 .Arg(KvCode(kv.type))
                                 .RunThreads(n * (kv.row_stride / 2)));
    }
  }
  return Status::Ok();
}

Status Attention(Encoder* enc, Span q, size_t n, size_t n_past, const DeviceKvView& kv,
                 size_t n_heads, size_t n_kv_heads, size_t head_dim, Span out) {
  if (n_kv_heads == 0 || n_heads % n_kv_heads != 0 || kv.row_stride != n_kv_heads * head_dim ||
      (kv.type == KvType::kQ8 && kv.head_dim != head_dim)) {
    return Errorf(StatusCode::kInvalidArgument,
                  "attention: %zu heads, %zu kv heads of %zu do not fit a KV row of %zu", n_heads,
                  n_kv_heads, head_dim, kv.row_stride);
  }
  POCKET_RETURN_IF_ERROR(CheckKv("attention", kv, n_past + n));
  POCKET_RETURN_IF_ERROR(CheckSpan("attention", "q", q, n * n_heads * head_dim));
  POCKET_RETURN_IF_ERROR(CheckSpan("attention", "out", out, n * n_heads * head_dim));
  // Each query head's scores take a row of the scratch; queries run in
  // batches so that a long prefill at a long context keeps it bounded. A
  // batch of tokens [i0, i0 + m) is the same attention at n_past + i0.
  const size_t row = n_past + n;
  const size_t batch = std::max<size_t>(1, kMaxScoreFloats / (n_heads * row));
  POCKET_ASSIGN_OR_RETURN(
      const Buffer* scores,
      enc->Scratch(ScratchId::kScores, std::min(batch, n) * n_heads * row * sizeof(float)));
  const size_t q_width = n_heads * head_dim;
  for (size_t i0 = 0; i0 < n; i0 += batch) {
    const size_t m = std::min(batch, n - i0);
    POCKET_RETURN_IF_ERROR(Launch(enc, Pipeline::kAttention)
                               .Arg(*q.buffer)
                               .Arg(*kv.k)
                               .Arg(*kv.v)
                               .Arg(*scores)
                               .Arg(*out.buffer)
                               .Arg(q.offset + i0 * q_width)
                               .Arg(out.offset + i0 * q_width)
                               .Arg(m)
                               .Arg(n_past + i0)
                               .Arg(n_heads)
                               .Arg(n_kv_heads)
                               .Arg(head_dim)
                               .Arg(KvCode(kv.type))
                               .Arg(KvScalesOffset(kv.type, kv.capacity, kv.row_stride))
                               .Arg(1.0f / std::sqrt(static_cast<float>(head_dim)))
                               .RunGroups(m * n_heads, 1));
  }
  return Status::Ok();
}

}  // namespace pocket::metal
