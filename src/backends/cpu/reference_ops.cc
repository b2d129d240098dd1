#include "backends/cpu/reference_ops.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "util/fp16.h"

namespace pocket::cpu::reference {
namespace {

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Address of cache row t (all kv heads) in a K or V page table.
const uint8_t* KvRow(const KvView& kv, void* const* pages, size_t t) {
  const size_t elem = kv.type == KvType::kF32 ? 4 : 2;
  return static_cast<const uint8_t*>(pages[t / kv.page_tokens]) +
         (t % kv.page_tokens) * kv.row_stride * elem;
}

float KvAt(const KvView& kv, const uint8_t* row, size_t i) {
  if (kv.type == KvType::kF32) {
    float f;
    std::memcpy(&f, row + 4 * i, 4);
    return f;
  }
  return F16ToF32(LoadU16(row + 2 * i));
}

void KvStore(const KvView& kv, uint8_t* row, size_t i, float value) {
  if (kv.type == KvType::kF32) {
    std::memcpy(row + 4 * i, &value, 4);
  } else {
    const uint16_t h = F32ToF16(value);
    std::memcpy(row + 2 * i, &h, 2);
  }
}

}  // namespace

void DequantizeRow(const WeightView& w, size_t row, float* out) {
  const size_t cols = w.cols;
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

void KvAppend(const KvView& kv, size_t n_past, const float* k, const float* v, size_t n) {
  for (size_t t = 0; t < n; ++t) {
    uint8_t* krow = const_cast<uint8_t*>(KvRow(kv, kv.k_pages, n_past + t));
    uint8_t* vrow = const_cast<uint8_t*>(KvRow(kv, kv.v_pages, n_past + t));
    for (size_t i = 0; i < kv.row_stride; ++i) {
      KvStore(kv, krow, i, k[t * kv.row_stride + i]);
      KvStore(kv, vrow, i, v[t * kv.row_stride + i]);
    }
  }
}

void Attention(const float* q, size_t n, size_t n_past, const KvView& kv, size_t n_heads,
               size_t n_kv_heads, size_t head_dim, float* out) {
  const size_t group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> scores(n_past + n);
  for (size_t i = 0; i < n; ++i) {
    const size_t len = n_past + i + 1;  // causal: positions [0, n_past + i]
    for (size_t h = 0; h < n_heads; ++h) {
      const float* qh = q + (i * n_heads + h) * head_dim;
      const size_t kv_off = (h / group) * head_dim;
      float max_score = -INFINITY;
      for (size_t p = 0; p < len; ++p) {
        const uint8_t* krow = KvRow(kv, kv.k_pages, p);
        float dot = 0.0f;
        for (size_t j = 0; j < head_dim; ++j) dot += qh[j] * KvAt(kv, krow, kv_off + j);
        scores[p] = dot * scale;
        if (scores[p] > max_score) max_score = scores[p];
      }
      float sum = 0.0f;
      for (size_t p = 0; p < len; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        sum += scores[p];
      }
      float* oh = out + (i * n_heads + h) * head_dim;
      for (size_t j = 0; j < head_dim; ++j) oh[j] = 0.0f;
      for (size_t p = 0; p < len; ++p) {
        const uint8_t* vrow = KvRow(kv, kv.v_pages, p);
        const float weight = scores[p] / sum;
        for (size_t j = 0; j < head_dim; ++j) oh[j] += weight * KvAt(kv, vrow, kv_off + j);
      }
    }
  }
}

}  // namespace pocket::cpu::reference
