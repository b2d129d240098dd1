#include "backends/reference/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "util/fp16.h"

namespace pocket::reference {
namespace {

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// One stored weight: its code (q8: the int8 code's bits) and its group's
// f16 scale and min (0 for q8).
struct StoredWeight {
  uint8_t code;
  uint16_t scale, min;
};

// Weight (row, col) of a q4 rows16 tensor, read straight from dtype.h's
// picture (independent of quant/rows16.cc, which the kernels' tests check).
StoredWeight Rows16Q4Weight(const WeightView& w, size_t row, size_t col) {
  const size_t record_bytes = 8 * w.group + 64, i = row % 16, k = col % w.group;
  const uint8_t* record = w.data + ((row / 16) * (w.cols / w.group) + col / w.group) * record_bytes;
  const uint8_t byte = record[(k / 8) * 64 + 4 * i + k % 4];
  const uint8_t* meta = record + 8 * w.group;
  return StoredWeight{static_cast<uint8_t>(k % 8 < 4 ? byte & 0xF : byte >> 4),
                      LoadU16(meta + 2 * i), LoadU16(meta + 32 + 2 * i)};
}

// The same for q8 (group 32): a 544-byte record of 8 chunks of 64 codes,
// byte 4 i + j of chunk c being row i's weight 4 c + j, then 16 scales.
StoredWeight Rows16Q8Weight(const WeightView& w, size_t row, size_t col) {
  const size_t record_bytes = 16 * 32 + 32, i = row % 16, k = col % 32;
  const uint8_t* record = w.data + ((row / 16) * (w.cols / 32) + col / 32) * record_bytes;
  return StoredWeight{record[(k / 4) * 64 + 4 * i + k % 4], LoadU16(record + 16 * 32 + 2 * i), 0};
}

StoredWeight Rows16Weight(const WeightView& w, size_t row, size_t col) {
  return w.dtype == DType::kQ8 ? Rows16Q8Weight(w, row, col) : Rows16Q4Weight(w, row, col);
}

// Address of element i of cache row t in a K or V page table (kv_pages.h): K
// channel-major, V head-major, whatever the element type; bf16 K by pairs of
// channels and V by pairs of positions, where the partner exists.
uint8_t* KvElem(const KvView& kv, void* const* pages, size_t t, size_t i) {
  const size_t j = t % kv.page_tokens;
  const size_t head_dim = kv.head_dim == 0 ? kv.row_stride : kv.head_dim;
  const size_t head = i / head_dim, c = i % head_dim;
  size_t index = i * kv.page_tokens + j;
  if (pages == kv.v_pages) index = head * kv.page_tokens * head_dim + j * head_dim + c;
  if (kv.type == KvType::kBf16 && pages == kv.k_pages) {
    const size_t pair = i / 2;
    const bool partnered = 2 * pair + 1 < kv.row_stride;
    index = 2 * pair * kv.page_tokens + (partnered ? 2 * j + i % 2 : j);
  } else if (kv.type == KvType::kQ8 && pages == kv.k_pages) {
    // Quads of a head's channels; the last one narrower when head_dim is
    // not a multiple of 4.
    const size_t quad = c / 4 * 4;
    const size_t width = std::min<size_t>(4, head_dim - quad);
    index = (head * head_dim + quad) * kv.page_tokens + j * width + c % 4;
  } else if (kv.type == KvType::kBf16) {
    const size_t pair = j / 2;
    const bool partnered = 2 * pair + 1 < kv.page_tokens;
    index =
        head * kv.page_tokens * head_dim + 2 * pair * head_dim + (partnered ? 2 * c + j % 2 : c);
  }
  return static_cast<uint8_t*>(pages[t / kv.page_tokens]) + index * KvElemBytes(kv.type);
}

// q8: address of the f16 scale of element i of row t: after the page's
// codes, head-major (kv_pages.h).
uint8_t* KvScale(const KvView& kv, void* const* pages, size_t t, size_t i) {
  return static_cast<uint8_t*>(pages[t / kv.page_tokens]) + kv.page_tokens * kv.row_stride +
         ((i / kv.head_dim) * kv.page_tokens + t % kv.page_tokens) * 2;
}

// q8 with a power-of-two head_dim: head rows are stored as H x (kv_pages.h).
bool Rotated(const KvView& kv) {
  return kv.type == KvType::kQ8 && kv.head_dim > 1 && (kv.head_dim & (kv.head_dim - 1)) == 0;
}

float HadamardEntry(size_t i, size_t j, size_t n) {
  return (__builtin_popcountll(i & j) % 2 ? -1.0f : 1.0f) / std::sqrt(static_cast<float>(n));
}

// y[n] = H x, each element summed in double and rounded once; x and y must
// not overlap.
void RotateExact(const float* x, size_t n, float* y) {
  for (size_t i = 0; i < n; ++i) {
    double sum = 0.0;
    for (size_t j = 0; j < n; ++j) sum += static_cast<double>(HadamardEntry(i, j, n)) * x[j];
    y[i] = static_cast<float>(sum);
  }
}

float KvStoredAt(const KvView& kv, void* const* pages, size_t t, size_t i);

float KvAt(const KvView& kv, void* const* pages, size_t t, size_t i) {
  if (!Rotated(kv)) return KvStoredAt(kv, pages, t, i);
  // x = H y over i's head.
  const size_t head = i / kv.head_dim * kv.head_dim;
  float x = 0.0f;
  for (size_t j = 0; j < kv.head_dim; ++j) {
    x += HadamardEntry(i - head, j, kv.head_dim) * KvStoredAt(kv, pages, t, head + j);
  }
  return x;
}

// The value stored for element i of row t (in the Hadamard basis when
// rotated).
float KvStoredAt(const KvView& kv, void* const* pages, size_t t, size_t i) {
  const uint8_t* at = KvElem(kv, pages, t, i);
  switch (kv.type) {
    case KvType::kF32: {
      float f;
      std::memcpy(&f, at, 4);
      return f;
    }
    case KvType::kF16:
      return F16ToF32(LoadU16(at));
    case KvType::kBf16:
      return BF16ToF32(LoadU16(at));
    case KvType::kQ8:
      return F16ToF32(LoadU16(KvScale(kv, pages, t, i))) *
             static_cast<float>(static_cast<int8_t>(*at));
  }
  return 0.0f;
}

// Stores values[row_stride] as row t: f32 as is, f16 and bf16 rounded to
// nearest even, q8 per head: x = the values (rotated: H values), scale = f16(max|x| /
// 127), code = round(x / scale).
void KvStoreRow(const KvView& kv, void* const* pages, size_t t, const float* values) {
  std::vector<float> x(values, values + kv.row_stride);
  if (Rotated(kv)) {
    for (size_t h = 0; h < kv.row_stride; h += kv.head_dim) {
      RotateExact(values + h, kv.head_dim, x.data() + h);
    }
  }
  for (size_t i = 0; i < kv.row_stride; ++i) {
    if (kv.type == KvType::kF32) {
      std::memcpy(KvElem(kv, pages, t, i), &x[i], 4);
    } else if (kv.type == KvType::kF16 || kv.type == KvType::kBf16) {
      const uint16_t h = kv.type == KvType::kF16 ? F32ToF16(x[i]) : F32ToBF16(x[i]);
      std::memcpy(KvElem(kv, pages, t, i), &h, 2);
    } else if (i % kv.head_dim == 0) {
      float amax = 0.0f;
      for (size_t j = i; j < i + kv.head_dim; ++j) amax = std::max(amax, std::fabs(x[j]));
      const uint16_t h = F32ToF16(amax / 127.0f);
      std::memcpy(KvScale(kv, pages, t, i), &h, 2);
      const float scale = F16ToF32(h);
      for (size_t j = i; j < i + kv.head_dim; ++j) {
        const float code = scale > 0.0f ? std::nearbyint(x[j] / scale) : 0.0f;
        *KvElem(kv, pages, t, j) =
            static_cast<uint8_t>(static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, code))));
      }
    }
  }
}

}  // namespace

void DequantizeRow(const WeightView& w, size_t row, float* out) {
  const size_t cols = w.cols;
  if (w.layout == TensorLayout::kRows16) {
    const bool q8 = w.dtype == DType::kQ8;
    for (size_t j = 0; j < cols; ++j) {
      const StoredWeight e = Rows16Weight(w, row, j);
      const float scale = F16ToF32(e.scale);
      // q8 codes are signed and have no min (w = scale * code, as planar q8).
      out[j] = q8 ? scale * static_cast<float>(static_cast<int8_t>(e.code))
                  : scale * static_cast<float>(e.code) + F16ToF32(e.min);
    }
    return;
  }
  switch (w.dtype) {
    case DType::kF32:
      std::memcpy(out, w.data + row * cols * 4, cols * 4);
      return;
    case DType::kF16:
      for (size_t j = 0; j < cols; ++j) out[j] = F16ToF32(LoadU16(w.data + (row * cols + j) * 2));
      return;
    case DType::kBF16:
      for (size_t j = 0; j < cols; ++j) {
        out[j] = BF16ToF32(LoadU16(w.data + (row * cols + j) * 2));
      }
      return;
    case DType::kQ8: {
      const size_t groups = cols / kQ8Group;
      const int8_t* codes = reinterpret_cast<const int8_t*>(w.data) + row * cols;
      const uint8_t* scales = w.data + w.rows * cols + row * groups * 2;
      for (size_t j = 0; j < cols; ++j) {
        out[j] = F16ToF32(LoadU16(scales + (j / kQ8Group) * 2)) * static_cast<float>(codes[j]);
      }
      return;
    }
    case DType::kQ4: {
      const size_t g = w.group;
      const size_t groups = cols / g;
      const uint8_t* codes = w.data + row * (cols / 2);
      const uint8_t* scales = w.data + w.rows * (cols / 2) + row * groups * 2;
      const uint8_t* mins = w.data + w.rows * (cols / 2) + w.rows * groups * 2 + row * groups * 2;
      for (size_t j = 0; j < cols; ++j) {
        const size_t grp = j / g;
        const size_t k = j % g;
        const uint8_t byte = codes[grp * (g / 2) + k % (g / 2)];
        const int q = k < g / 2 ? (byte & 0xF) : (byte >> 4);
        const float scale = F16ToF32(LoadU16(scales + grp * 2));
        const float min = F16ToF32(LoadU16(mins + grp * 2));
        out[j] = scale * static_cast<float>(q) + min;
      }
      return;
    }
  }
}

void Linear(const float* x, size_t n, const WeightView& w, const float* bias, float* out) {
  std::vector<float> row(w.cols);
  for (size_t r = 0; r < w.rows; ++r) {
    DequantizeRow(w, r, row.data());
    for (size_t t = 0; t < n; ++t) {
      double sum = 0.0;  // double: the truth the f32 kernels are measured against
      for (size_t j = 0; j < w.cols; ++j) sum += static_cast<double>(row[j]) * x[t * w.cols + j];
      out[t * w.rows + r] = static_cast<float>(sum) + (bias ? bias[r] : 0.0f);
    }
  }
}

void QuantizeActivations(const float* x, size_t cols, size_t block, int8_t* q, float* d, float* s) {
  for (size_t b = 0; b < cols / block; ++b) {
    const float* xb = x + b * block;
    float amax = 0.0f;
    double sum = 0.0;
    for (size_t j = 0; j < block; ++j) {
      amax = std::max(amax, std::fabs(xb[j]));
      sum += xb[j];
    }
    d[b] = amax / 127.0f;
    s[b] = static_cast<float>(sum);
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (size_t j = 0; j < block; ++j) {
      q[b * block + j] = static_cast<int8_t>(std::nearbyint(xb[j] * inv));
    }
  }
}

void LinearInt8(const float* x, size_t n, const WeightView& w, const float* bias, float* out) {
  const bool q4 = w.dtype == DType::kQ4;
  const bool rows16 = w.layout == TensorLayout::kRows16;
  const size_t group = q4 ? w.group : kQ8Group;
  const size_t groups = w.cols / group;
  const size_t code_bytes = q4 ? w.cols / 2 : w.cols;
  const uint8_t* scales = w.data + w.rows * code_bytes;
  const uint8_t* mins = scales + w.rows * groups * 2;
  // Weight (r, col) as stored: its code and its group's f16 scale and min.
  auto element = [&](size_t r, size_t col) {
    if (rows16) return Rows16Weight(w, r, col);
    const size_t g = col / group, j = col % group, at = (r * groups + g) * 2;
    StoredWeight e{0, LoadU16(scales + at), q4 ? LoadU16(mins + at) : uint16_t{0}};
    if (q4) {
      const uint8_t byte = w.data[r * code_bytes + g * group / 2 + j % (group / 2)];
      e.code = j < group / 2 ? (byte & 0xF) : (byte >> 4);
    } else {
      e.code = w.data[r * code_bytes + col];
    }
    return e;
  };
  std::vector<int8_t> q(w.cols);
  std::vector<float> d(groups), s(groups);
  for (size_t t = 0; t < n; ++t) {
    QuantizeActivations(x + t * w.cols, w.cols, group, q.data(), d.data(), s.data());
    for (size_t r = 0; r < w.rows; ++r) {
      double sum = 0.0;
      for (size_t g = 0; g < groups; ++g) {
        int64_t dot = 0;
        StoredWeight first{};
        for (size_t j = 0; j < group; ++j) {
          const size_t col = g * group + j;
          const StoredWeight e = element(r, col);
          if (j == 0) first = e;
          const int code = q4 ? e.code : static_cast<int8_t>(e.code);
          dot += static_cast<int64_t>(code) * q[col];
        }
        sum += static_cast<double>(F16ToF32(first.scale)) * d[g] * static_cast<double>(dot);
        if (q4) sum += static_cast<double>(F16ToF32(first.min)) * s[g];
      }
      out[t * w.rows + r] = static_cast<float>(sum) + (bias ? bias[r] : 0.0f);
    }
  }
}

void Embed(const WeightView& table, const int32_t* ids, size_t n, float* out) {
  for (size_t t = 0; t < n; ++t) {
    DequantizeRow(table, static_cast<size_t>(ids[t]), out + t * table.cols);
  }
}

void RmsNorm(const float* x, const float* w, size_t n, size_t d, float eps, float* out) {
  for (size_t t = 0; t < n; ++t) {
    const float* xr = x + t * d;
    float ss = 0.0f;
    for (size_t j = 0; j < d; ++j) ss += xr[j] * xr[j];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
    for (size_t j = 0; j < d; ++j) out[t * d + j] = w[j] * (inv * xr[j]);
  }
}

void HeadRmsNorm(float* x, const float* w, size_t n, size_t n_heads, size_t head_dim, float eps) {
  RmsNorm(x, w, n * n_heads, head_dim, eps, x);
}

void Rope(float* x, size_t n, size_t n_heads, size_t head_dim, const int32_t* positions,
          float theta, RopeStyle style) {
  const size_t half = head_dim / 2;
  for (size_t t = 0; t < n; ++t) {
    for (size_t i = 0; i < half; ++i) {
      // llama2.c's formula, in float, so greedy output matches its golden.
      const float freq =
          1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
      const float angle = static_cast<float>(positions[t]) * freq;
      const float c = std::cos(angle);
      const float s = std::sin(angle);
      for (size_t h = 0; h < n_heads; ++h) {
        float* head = x + (t * n_heads + h) * head_dim;
        float* a = style == RopeStyle::kNeox ? head + i : head + 2 * i;
        float* b = style == RopeStyle::kNeox ? head + i + half : head + 2 * i + 1;
        const float v0 = *a;
        const float v1 = *b;
        *a = v0 * c - v1 * s;
        *b = v0 * s + v1 * c;
      }
    }
  }
}

void Swiglu(const float* g, const float* u, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void Add(const float* a, const float* b, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

size_t Argmax(const float* x, size_t count) {
  size_t best = 0;
  float best_value = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < count; ++i) {
    if (x[i] > best_value) {
      best_value = x[i];
      best = i;
    }
  }
  return best;
}

void KvAppend(const KvView& kv, size_t n_past, const float* k, const float* v, size_t n) {
  for (size_t t = 0; t < n; ++t) {
    KvStoreRow(kv, kv.k_pages, n_past + t, k + t * kv.row_stride);
    KvStoreRow(kv, kv.v_pages, n_past + t, v + t * kv.row_stride);
  }
}

namespace {

// x rounded to the nearest bf16 (ties to even), as a float; finite x only.
float RoundToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits = (bits + 0x7FFFu + (bits >> 16 & 1u)) & 0xFFFF0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

}  // namespace

void Attention(const float* q, size_t n, size_t n_past, const KvView& kv, size_t n_heads,
               size_t n_kv_heads, size_t head_dim, float* out, AttentionMath math) {
  const auto rounded = [&](float x) { return math == AttentionMath::kBf16 ? RoundToBf16(x) : x; };
  // q8 in bf16 or int8: the query meets the stored values (code * scale) in
  // their own basis (H q for rotated rows) and only the query is rounded
  // (int8: to its codes times its scale); the output comes back through H.
  const bool stored_basis = math != AttentionMath::kF32 && kv.type == KvType::kQ8;
  const bool int8_query = stored_basis && math == AttentionMath::kInt8;
  const bool rotate = stored_basis && Rotated(kv);
  const auto k_at = [&](size_t p, size_t i) {
    return stored_basis ? KvStoredAt(kv, kv.k_pages, p, i) : rounded(KvAt(kv, kv.k_pages, p, i));
  };
  const auto v_at = [&](size_t p, size_t i) {
    return stored_basis ? KvStoredAt(kv, kv.v_pages, p, i) : rounded(KvAt(kv, kv.v_pages, p, i));
  };
  const size_t group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> scores(n_past + n), qs(head_dim), os(head_dim);
  for (size_t i = 0; i < n; ++i) {
    const size_t len = n_past + i + 1;  // causal: positions [0, n_past + i]
    for (size_t h = 0; h < n_heads; ++h) {
      const float* qh = q + (i * n_heads + h) * head_dim;
      if (rotate) {
        RotateExact(qh, head_dim, qs.data());
      } else {
        std::copy(qh, qh + head_dim, qs.begin());
      }
      if (int8_query) {
        float max = 0.0f;
        for (float x : qs) max = std::max(max, std::fabs(x));
        const float step = max / 127.0f;
        for (float& x : qs) {
          x = max > 0.0f ? std::clamp(std::nearbyint(x * (127.0f / max)), -127.0f, 127.0f) * step
                         : 0.0f;
        }
      } else {
        for (float& x : qs) x = rounded(x);
      }
      const size_t kv_off = (h / group) * head_dim;
      float max_score = -INFINITY;
      for (size_t p = 0; p < len; ++p) {
        float dot = 0.0f;
        for (size_t j = 0; j < head_dim; ++j) dot += qs[j] * k_at(p, kv_off + j);
        scores[p] = dot * scale;
        if (scores[p] > max_score) max_score = scores[p];
      }
      float sum = 0.0f;
      for (size_t p = 0; p < len; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        sum += scores[p];
      }
      std::fill(os.begin(), os.end(), 0.0f);
      for (size_t p = 0; p < len; ++p) {
        const float weight = scores[p] / sum;
        for (size_t j = 0; j < head_dim; ++j) os[j] += weight * v_at(p, kv_off + j);
      }
      float* oh = out + (i * n_heads + h) * head_dim;
      if (rotate) {
        RotateExact(os.data(), head_dim, oh);
      } else {
        std::copy(os.begin(), os.end(), oh);
      }
    }
  }
}

void KvShift(const KvView& kv, size_t dst, size_t src, size_t count, const KvRope& rope) {
  std::vector<float> k(kv.row_stride);
  const int32_t position = static_cast<int32_t>(dst) - static_cast<int32_t>(src);
  const size_t elem_bytes = KvElemBytes(kv.type);
  for (size_t t = 0; t < count; ++t) {
    for (size_t i = 0; i < kv.row_stride; ++i) k[i] = KvAt(kv, kv.k_pages, src + t, i);
    if (rope.head_dim != 0) {
      Rope(k.data(), 1, kv.row_stride / rope.head_dim, rope.head_dim, &position, rope.theta,
           rope.style);
    }
    KvStoreRow(kv, kv.k_pages, dst + t, k.data());
    // V rows move unchanged, scales included.
    for (size_t i = 0; i < kv.row_stride; ++i) {
      std::memmove(KvElem(kv, kv.v_pages, dst + t, i), KvElem(kv, kv.v_pages, src + t, i),
                   elem_bytes);
    }
    if (kv.type == KvType::kQ8) {
      for (size_t i = 0; i < kv.row_stride; i += kv.head_dim) {
        std::memmove(KvScale(kv, kv.v_pages, dst + t, i), KvScale(kv, kv.v_pages, src + t, i), 2);
      }
    }
  }
}

void KvReadRow(const KvView& kv, void* const* pages, size_t t, uint8_t* bytes) {
  const size_t elem = KvElemBytes(kv.type);
  for (size_t i = 0; i < kv.row_stride; ++i)
    std::memcpy(bytes + i * elem, KvElem(kv, pages, t, i), elem);
  if (kv.type != KvType::kQ8) return;
  bytes += kv.row_stride;
  for (size_t i = 0; i < kv.row_stride; i += kv.head_dim, bytes += 2) {
    std::memcpy(bytes, KvScale(kv, pages, t, i), 2);
  }
}

void KvWriteRow(const KvView& kv, void* const* pages, size_t t, const uint8_t* bytes) {
  const size_t elem = KvElemBytes(kv.type);
  for (size_t i = 0; i < kv.row_stride; ++i)
    std::memcpy(KvElem(kv, pages, t, i), bytes + i * elem, elem);
  if (kv.type != KvType::kQ8) return;
  bytes += kv.row_stride;
  for (size_t i = 0; i < kv.row_stride; i += kv.head_dim, bytes += 2) {
    std::memcpy(KvScale(kv, pages, t, i), bytes, 2);
  }
}

}  // namespace pocket::reference
