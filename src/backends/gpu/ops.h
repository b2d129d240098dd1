// The op set of docs/graph.md for the GPU backends, written once over a
// backend's device: the same contracts as src/backends/cpu/ops.h (the CPU
// twin of every function here has the same name). Each op checks its
// arguments, then launches one kernel of kernels/gpu (attention and
// kv_shift: one per batch or step); launches run in the order given and
// return before they finish. Activations are f32; weights stay in their
// stored dtype.
//
// A backend brings its `Device` (the ops' first argument) and, in its own
// namespace so that the ops find them by argument-dependent lookup:
//   const Buffer* DeviceBuffer(const Device*);  // declared only: the buffer type
//   size_t ByteSize(const Buffer&);
//   Launcher StartLaunch(Device*, Kernel);  // .Arg(buffer[, byte offset]),
//       .Arg(size_t), .Arg(float) bind the kernel's parameters in order;
//       .RunThreads(n), .RunGroups(g0, g1) launch it (launcher.h)
//   StatusOr<At<Buffer>> Stage(Device*, Staged, const void* data, size_t bytes);
//   StatusOr<const Buffer*> ScoresScratch(Device*, size_t bytes);
//   LinearTiling PickLinear(const Device*, size_t n, size_t cols);
// and the member Copy(src, src_offset, dst, dst_offset, bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backends/gpu/kernels.h"
#include "backends/gpu/kv_layout.h"
#include "format/dtype.h"
#include "format/model_config.h"
#include "graph/kv_type.h"
#include "util/status.h"

namespace pocket::gpu {

template <class Device>
using BufferOf =
    std::remove_cv_t<std::remove_pointer_t<decltype(DeviceBuffer(std::declval<const Device*>()))>>;

// f32 values starting `offset` floats into a device buffer (a row offset
// into an activation).
template <class Buffer>
struct Span {
  const Buffer* buffer = nullptr;
  size_t offset = 0;
};

// A weight matrix [rows, cols] in its stored layout (format/dtype.h, row
// major), `offset` bytes into `buffer`.
template <class Buffer>
struct DeviceWeight {
  const Buffer* buffer = nullptr;
  size_t offset = 0;
  DType dtype = DType::kF32;
  uint32_t group = 0;
  size_t rows = 0;
  size_t cols = 0;
};

// One layer's KV cache in the layout of kv_layout.h.
template <class Buffer>
struct DeviceKvView {
  KvType type = KvType::kF16;
  const Buffer* k = nullptr;
  const Buffer* v = nullptr;
  size_t row_stride = 0;
  size_t head_dim = 0;  // values per q8 scale
  size_t capacity = 0;
};

// Host data an op hands its kernel, and where it landed.
enum class Staged { kIds, kRopeCos, kRopeSin };
template <class Buffer>
struct At {
  const Buffer* buffer = nullptr;
  size_t offset = 0;  // bytes
};

// The linear kernel a backend picks for n tokens of a cols-wide input, and
// the output rows and tokens each of its work-groups covers.
struct LinearTiling {
  Kernel kernel = Kernel::kLinear;
  size_t rows_per_group = 1;
  size_t tokens_per_group = 4;  // LINEAR_TOKENS in linear.cl
};

// out[n, w.rows] = x[n, w.cols] W^T (+ bias[w.rows] when non-null).
template <class Device>
Status Linear(Device* dev, Span<BufferOf<Device>> x, size_t n,
              const DeviceWeight<BufferOf<Device>>& w, const BufferOf<Device>* bias,
              Span<BufferOf<Device>> out);
// out[i] = row ids[i] of table, dequantized (ids are host memory).
template <class Device>
Status Embed(Device* dev, const DeviceWeight<BufferOf<Device>>& table, const int32_t* ids, size_t n,
             Span<BufferOf<Device>> out);
// Row-wise RMSNorm of x[n, d] times w[d]; out may be x.
template <class Device>
Status RmsNorm(Device* dev, Span<BufferOf<Device>> x, const BufferOf<Device>& w, size_t n, size_t d,
               float eps, Span<BufferOf<Device>> out);
// RMSNorm of each head_dim slice of x[n, n_heads * head_dim], in place.
template <class Device>
Status HeadRmsNorm(Device* dev, Span<BufferOf<Device>> x, const BufferOf<Device>& w, size_t n,
                   size_t n_heads, size_t head_dim, float eps);
// Rotary embedding in place; token i is at positions[i] (host memory).
template <class Device>
Status Rope(Device* dev, Span<BufferOf<Device>> x, size_t n, size_t n_heads, size_t head_dim,
            const int32_t* positions, float theta, RopeStyle style);
// out = silu(g) * u over `count` values; out may be g.
template <class Device>
Status Swiglu(Device* dev, Span<BufferOf<Device>> g, Span<BufferOf<Device>> u, size_t count,
              Span<BufferOf<Device>> out);
// out = a + b; out may be a.
template <class Device>
Status Add(Device* dev, Span<BufferOf<Device>> a, Span<BufferOf<Device>> b, size_t count,
           Span<BufferOf<Device>> out);
// Writes k[n, row_stride], v[n, row_stride] at positions [n_past, n_past + n).
template <class Device>
Status KvAppend(Device* dev, const DeviceKvView<BufferOf<Device>>& kv, size_t n_past,
                Span<BufferOf<Device>> k, Span<BufferOf<Device>> v, size_t n);
// Moves cache positions [src, src + count) to [dst, dst + count), dst < src,
// for a sliding window: V rows are copied as stored; K rows are re-encoded
// at their new positions (rotated by dst - src positions with `rope`, as
// the CPU's KvShift rotates them) and stored again. Ranges that overlap
// move in steps of src - dst positions.
template <class Device>
Status KvShift(Device* dev, const DeviceKvView<BufferOf<Device>>& kv, size_t dst, size_t src,
               size_t count, const KvRope& rope);
// Causal GQA attention: q[n, n_heads*head_dim] at positions
// [n_past, n_past + n) over cache positions [0, n_past + n); out has q's
// shape and must not overlap q.
template <class Device>
Status Attention(Device* dev, Span<BufferOf<Device>> q, size_t n, size_t n_past,
                 const DeviceKvView<BufferOf<Device>>& kv, size_t n_heads, size_t n_kv_heads,
                 size_t head_dim, Span<BufferOf<Device>> out);

}  // namespace pocket::gpu

#include "backends/gpu/ops-inl.h"
