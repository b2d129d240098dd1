// The GPU ops of ops.h: each op's checks, then its launch.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/gpu/ops.h"

namespace pocket::gpu {
namespace ops_internal {

// An out-of-bounds access on a GPU is silent corruption or a lost device,
// so every op checks its spans against their buffers first.
template <class Buffer>
Status CheckSpan(const char* op, const char* name, Span<Buffer> s, size_t count) {
  if (s.buffer == nullptr) {
    return Errorf(StatusCode::kInvalidArgument, "%s: %s has no buffer", op, name);
  }
  if ((s.offset + count) * sizeof(float) > ByteSize(*s.buffer)) {
    return Errorf(StatusCode::kInvalidArgument,
                  "%s: %s needs %zu floats at offset %zu but its buffer holds %zu", op, name, count,
                  s.offset, ByteSize(*s.buffer) / sizeof(float));
  }
  return Status::Ok();
}

template <class Buffer>
Status CheckWeight(const char* op, const DeviceWeight<Buffer>& w) {
  uint64_t bytes = 0;
  if (w.buffer == nullptr || !TensorByteSize(w.dtype, w.rows, w.cols, w.group, &bytes) ||
      w.offset > ByteSize(*w.buffer) || bytes > ByteSize(*w.buffer) - w.offset) {
    return Errorf(StatusCode::kInvalidArgument,
                  "%s: weight [%zu, %zu] %s (group %u) at byte %zu does not fit its buffer", op,
                  w.rows, w.cols, DTypeName(w.dtype), w.group, w.offset);
  }
  return Status::Ok();
}

// MAX_ROTATED_HEAD in hadamard.cl: q8 heads are quantized in thread arrays.
constexpr size_t kMaxQ8HeadDim = 256;

template <class Buffer>
Status CheckKv(const char* op, const DeviceKvView<Buffer>& kv, size_t positions) {
  if ((kKvTypes & KvTypeBit(kv.type)) == 0) {
    return Errorf(StatusCode::kUnsupported, "%s: the GPU kernels store no %s KV cache", op,
                  KvTypeName(kv.type));
  }
  if (kv.type == KvType::kQ8 && (kv.head_dim == 0 || kv.row_stride % kv.head_dim != 0)) {
    return Errorf(StatusCode::kInvalidArgument, "%s: q8 KV head_dim %zu does not divide row %zu",
                  op, kv.head_dim, kv.row_stride);
  }
  if (kv.type == KvType::kQ8 && kv.head_dim > kMaxQ8HeadDim) {
    return Errorf(StatusCode::kUnsupported,
                  "%s: the GPU kernels quantize KV heads of at most %zu values to q8, this "
                  "model's have %zu; use kv_type=f16",
                  op, kMaxQ8HeadDim, kv.head_dim);
  }
  const size_t bytes = KvBufferBytes(kv.type, kv.capacity, kv.row_stride, kv.head_dim);
  if (kv.k == nullptr || kv.v == nullptr || ByteSize(*kv.k) < bytes || ByteSize(*kv.v) < bytes) {
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

// The enum values are what dequant.cl's DTYPE_* and KV_* constants mirror.
inline size_t DTypeCode(DType t) { return static_cast<size_t>(t); }
inline size_t KvCode(KvType t) { return static_cast<size_t>(t); }

// Each token's cos and sin of every rope frequency, [n, head_dim / 2],
// computed exactly as the CPU backend computes them
// (kernels/cpu/rope-inl.h), so every backend rotates by identical floats.
template <class Device>
Status StageRopeAngles(Device* dev, const int32_t* positions, size_t n, size_t head_dim,
                       float theta, At<BufferOf<Device>>* cos_at, At<BufferOf<Device>>* sin_at) {
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
  POCKET_ASSIGN_OR_RETURN(*cos_at, Stage(dev, Staged::kRopeCos, cos_t.data(), bytes));
  POCKET_ASSIGN_OR_RETURN(*sin_at, Stage(dev, Staged::kRopeSin, sin_t.data(), bytes));
  return Status::Ok();
}

template <class Device>
Status Elementwise(Device* dev, Kernel kernel, const char* op, Span<BufferOf<Device>> a,
                   Span<BufferOf<Device>> b, size_t count, Span<BufferOf<Device>> out) {
  POCKET_RETURN_IF_ERROR(CheckSpan(op, "first input", a, count));
  POCKET_RETURN_IF_ERROR(CheckSpan(op, "second input", b, count));
  POCKET_RETURN_IF_ERROR(CheckSpan(op, "out", out, count));
  return StartLaunch(dev, kernel)
      .Arg(*a.buffer)
      .Arg(*b.buffer)
      .Arg(*out.buffer)
      .Arg(a.offset)
      .Arg(b.offset)
      .Arg(out.offset)
      .Arg(count)
      .RunThreads(count);
}

// Copies positions [src, src + count) of one K or V buffer to dst as
// stored: the codes (or values), then the q8 scales; the ranges must not
// overlap.
template <class Device>
Status CopyKvRows(Device* dev, const DeviceKvView<BufferOf<Device>>& kv,
                  const BufferOf<Device>& buffer, size_t dst, size_t src, size_t count) {
  const size_t values = KvBufferBytes(kv.type, 1, kv.row_stride, kv.head_dim);
  const size_t codes = kv.type == KvType::kQ8 ? kv.row_stride : values;
  POCKET_RETURN_IF_ERROR(dev->Copy(buffer, src * codes, buffer, dst * codes, count * codes));
  if (kv.type != KvType::kQ8) return Status::Ok();
  const size_t scales = KvScalesOffset(kv.type, kv.capacity, kv.row_stride);
  const size_t scale_bytes = values - codes;
  return dev->Copy(buffer, scales + src * scale_bytes, buffer, scales + dst * scale_bytes,
                   count * scale_bytes);
}

}  // namespace ops_internal

template <class Device>
Status Linear(Device* dev, Span<BufferOf<Device>> x, size_t n,
              const DeviceWeight<BufferOf<Device>>& w, const BufferOf<Device>* bias,
              Span<BufferOf<Device>> out) {
  using namespace ops_internal;
  POCKET_RETURN_IF_ERROR(CheckWeight("linear", w));
  POCKET_RETURN_IF_ERROR(CheckSpan("linear", "x", x, n * w.cols));
  POCKET_RETURN_IF_ERROR(CheckSpan("linear", "out", out, n * w.rows));
  if (bias != nullptr) {
    POCKET_RETURN_IF_ERROR(CheckSpan("linear", "bias", Span<BufferOf<Device>>{bias, 0}, w.rows));
  }
  const LinearTiling t = PickLinear(static_cast<const Device*>(dev), n, w.cols);
  return StartLaunch(dev, t.kernel)
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
      .RunGroups((w.rows + t.rows_per_group - 1) / t.rows_per_group,
                 (n + t.tokens_per_group - 1) / t.tokens_per_group);
}

template <class Device>
Status Embed(Device* dev, const DeviceWeight<BufferOf<Device>>& table, const int32_t* ids, size_t n,
             Span<BufferOf<Device>> out) {
  using namespace ops_internal;
  POCKET_RETURN_IF_ERROR(CheckWeight("embed", table));
  POCKET_RETURN_IF_ERROR(CheckSpan("embed", "out", out, n * table.cols));
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= table.rows) {
      return Errorf(StatusCode::kInvalidArgument, "embed: id %d at index %zu is outside [0, %zu)",
                    ids[i], i, table.rows);
    }
  }
  POCKET_ASSIGN_OR_RETURN(const At<BufferOf<Device>> staged,
                          Stage(dev, Staged::kIds, ids, n * sizeof(int32_t)));
  return StartLaunch(dev, Kernel::kEmbed)
      .Arg(*table.buffer, table.offset)
      .Arg(*staged.buffer, staged.offset)
      .Arg(*out.buffer)
      .Arg(out.offset)
      .Arg(n)
      .Arg(table.rows)
      .Arg(table.cols)
      .Arg(DTypeCode(table.dtype))
      .Arg(static_cast<size_t>(table.group))
      .RunThreads(n * table.cols);
}

template <class Device>
Status RmsNorm(Device* dev, Span<BufferOf<Device>> x, const BufferOf<Device>& w, size_t n, size_t d,
               float eps, Span<BufferOf<Device>> out) {
  using namespace ops_internal;
  POCKET_RETURN_IF_ERROR(CheckSpan("rms_norm", "x", x, n * d));
  POCKET_RETURN_IF_ERROR(CheckSpan("rms_norm", "out", out, n * d));
  POCKET_RETURN_IF_ERROR(CheckSpan("rms_norm", "w", Span<BufferOf<Device>>{&w, 0}, d));
  return StartLaunch(dev, Kernel::kRmsNorm)
      .Arg(*x.buffer)
      .Arg(w)
      .Arg(*out.buffer)
      .Arg(x.offset)
      .Arg(out.offset)
      .Arg(d)
      .Arg(eps)
      .RunGroups(n, 1);
}

template <class Device>
Status HeadRmsNorm(Device* dev, Span<BufferOf<Device>> x, const BufferOf<Device>& w, size_t n,
                   size_t n_heads, size_t head_dim, float eps) {
  return RmsNorm(dev, x, w, n * n_heads, head_dim, eps, x);
}

template <class Device>
Status Rope(Device* dev, Span<BufferOf<Device>> x, size_t n, size_t n_heads, size_t head_dim,
            const int32_t* positions, float theta, RopeStyle style) {
  using namespace ops_internal;
  POCKET_RETURN_IF_ERROR(CheckSpan("rope", "x", x, n * n_heads * head_dim));
  if (head_dim % 2 != 0) {
    return Errorf(StatusCode::kInvalidArgument, "rope: head_dim %zu is odd", head_dim);
  }
  At<BufferOf<Device>> cos_at, sin_at;
  POCKET_RETURN_IF_ERROR(StageRopeAngles(dev, positions, n, head_dim, theta, &cos_at, &sin_at));
  return StartLaunch(dev, Kernel::kRope)
      .Arg(*x.buffer)
      .Arg(*cos_at.buffer, cos_at.offset)
      .Arg(*sin_at.buffer, sin_at.offset)
      .Arg(x.offset)
      .Arg(n)
      .Arg(n_heads)
      .Arg(head_dim)
      .Arg(static_cast<size_t>(style))  // matches ROPE_NEOX in rope.cl
      .RunThreads(n * n_heads * (head_dim / 2));
}

template <class Device>
Status Swiglu(Device* dev, Span<BufferOf<Device>> g, Span<BufferOf<Device>> u, size_t count,
              Span<BufferOf<Device>> out) {
  return ops_internal::Elementwise(dev, Kernel::kSwiglu, "swiglu", g, u, count, out);
}

template <class Device>
Status Add(Device* dev, Span<BufferOf<Device>> a, Span<BufferOf<Device>> b, size_t count,
           Span<BufferOf<Device>> out) {
  return ops_internal::Elementwise(dev, Kernel::kAdd, "add", a, b, count, out);
}

template <class Device>
Status KvAppend(Device* dev, const DeviceKvView<BufferOf<Device>>& kv, size_t n_past,
                Span<BufferOf<Device>> k, Span<BufferOf<Device>> v, size_t n) {
  using namespace ops_internal;
  POCKET_RETURN_IF_ERROR(CheckKv("kv_append", kv, n_past + n));
  POCKET_RETURN_IF_ERROR(CheckSpan("kv_append", "k", k, n * kv.row_stride));
  POCKET_RETURN_IF_ERROR(CheckSpan("kv_append", "v", v, n * kv.row_stride));
  const bool q8 = kv.type == KvType::kQ8;
  auto launch = StartLaunch(dev, q8 ? Kernel::kKvAppendQ8 : Kernel::kKvAppend);
  launch.Arg(*k.buffer)
      .Arg(*v.buffer)
      .Arg(*kv.k)
      .Arg(*kv.v)
      .Arg(k.offset)
      .Arg(v.offset)
      .Arg(n_past)
      .Arg(n)
      .Arg(kv.row_stride);
  if (q8) {
    return launch.Arg(kv.head_dim)
        .Arg(KvScalesOffset(kv.type, kv.capacity, kv.row_stride))
        .RunThreads(n * (kv.row_stride / kv.head_dim));
  }
  return launch.Arg(KvCode(kv.type)).RunThreads(n * kv.row_stride);
}

template <class Device>
Status KvShift(Device* dev, const DeviceKvView<BufferOf<Device>>& kv, size_t dst, size_t src,
               size_t count, const KvRope& rope) {
  using namespace ops_internal;
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
  At<BufferOf<Device>> cos_at, sin_at;
  if (rope.head_dim != 0) {
    POCKET_RETURN_IF_ERROR(
        StageRopeAngles(dev, &delta, 1, rope.head_dim, rope.theta, &cos_at, &sin_at));
  }
  // Steps of at most src - dst positions never write a row that a later
  // thread of the same launch reads; launches and copies run in order, so
  // each step finishes before the next reads what it wrote.
  const size_t step = src - dst;
  for (size_t done = 0; done < count; done += step) {
    const size_t n = std::min(step, count - done);
    POCKET_RETURN_IF_ERROR(CopyKvRows(dev, kv, *kv.v, dst + done, src + done, n));
    if (rope.head_dim == 0) {
      POCKET_RETURN_IF_ERROR(CopyKvRows(dev, kv, *kv.k, dst + done, src + done, n));
      continue;
    }
    const bool q8 = kv.type == KvType::kQ8;
    auto launch = StartLaunch(dev, q8 ? Kernel::kKvShiftQ8 : Kernel::kKvShift);
    launch.Arg(*kv.k)
        .Arg(*cos_at.buffer, cos_at.offset)
        .Arg(*sin_at.buffer, sin_at.offset)
        .Arg(dst + done)
        .Arg(src + done)
        .Arg(n)
        .Arg(kv.row_stride);
    if (q8) {
      POCKET_RETURN_IF_ERROR(launch.Arg(kv.head_dim)
                                 .Arg(rope.head_dim)
                                 .Arg(static_cast<size_t>(rope.style))
                                 .Arg(KvScalesOffset(kv.type, kv.capacity, kv.row_stride))
                                 .RunThreads(n * (kv.row_stride / kv.head_dim)));
    } else {
      POCKET_RETURN_IF_ERROR(launch.Arg(rope.head_dim)
                                 .Arg(static_cast<size_t>(rope.style))
                                 .Arg(KvCode(kv.type))
                                 .RunThreads(n * (kv.row_stride / 2)));
    }
  }
  return Status::Ok();
}

template <class Device>
Status Attention(Device* dev, Span<BufferOf<Device>> q, size_t n, size_t n_past,
                 const DeviceKvView<BufferOf<Device>>& kv, size_t n_heads, size_t n_kv_heads,
                 size_t head_dim, Span<BufferOf<Device>> out) {
  using namespace ops_internal;
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
  POCKET_ASSIGN_OR_RETURN(const BufferOf<Device>* scores,
                          ScoresScratch(dev, std::min(batch, n) * n_heads * row * sizeof(float)));
  const size_t q_width = n_heads * head_dim;
  for (size_t i0 = 0; i0 < n; i0 += batch) {
    const size_t m = std::min(batch, n - i0);
    POCKET_RETURN_IF_ERROR(StartLaunch(dev, Kernel::kAttention)
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

}  // namespace pocket::gpu
