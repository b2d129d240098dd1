// Helpers of the GPU backends' op tests, over either backend's buffers:
// the tolerance checks, the weight and KV views of test data, and the
// reference's host KV pages. Random data and weight encoding come from the
// CPU backend's test helpers, so every backend is tested on identically
// built inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "backends/gpu/ops.h"
#include "backends/kv_pages.h"
#include "backends/ops_test_util.h"
#include "backends/reference/ops.h"
#include "util/fp16.h"

namespace pocket::gpu::testing {

// |got - want| <= abs_tol + rel_tol * |want| for every element.
inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                        float abs_tol, float rel_tol) {
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float tol = abs_tol + rel_tol * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tol) && bad++ < 5) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i]
                    << " (tolerance " << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << "elements outside the tolerance";
}

// The view of a test weight whose bytes are `offset` bytes into `buffer`.
template <class Buffer>
DeviceWeight<Buffer> WeightAt(const cpu::testing::TestWeight& w, const Buffer* buffer,
                              size_t offset) {
  DeviceWeight<Buffer> d;
  d.buffer = buffer;
  d.offset = offset;
  d.dtype = w.view.dtype;
  d.group = w.view.group;
  d.rows = w.view.rows;
  d.cols = w.view.cols;
  return d;
}

// A weight dtype of the parameterized weight tests, and its test name.
struct WeightCase {
  DType dtype;
  uint32_t group;
};
inline std::string CaseName(const ::testing::TestParamInfo<WeightCase>& info) {
  return std::string(DTypeName(info.param.dtype)) +
         (info.param.group != 0 ? "_g" + std::to_string(info.param.group) : "");
}

struct AttentionCase {
  size_t n_heads, n_kv_heads, head_dim;
  size_t n_past, n;
};
inline void PrintTo(const AttentionCase& c, std::ostream* os) {
  *os << c.n_heads << " heads, " << c.n_kv_heads << " kv heads of " << c.head_dim << ", n_past "
      << c.n_past << ", n " << c.n;
}
using AttentionParam = std::tuple<AttentionCase, KvType>;
inline std::string AttentionParamName(const ::testing::TestParamInfo<AttentionParam>& info) {
  const AttentionCase& c = std::get<0>(info.param);
  return "h" + std::to_string(c.n_heads) + "kv" + std::to_string(c.n_kv_heads) + "d" +
         std::to_string(c.head_dim) + "_past" + std::to_string(c.n_past) + "_n" +
         std::to_string(c.n) + "_" + KvTypeName(std::get<1>(info.param));
}

// The reference's cache: host pages of kPageTokens tokens.
class HostKv {
 public:
  static constexpr size_t kPageTokens = 16;
  HostKv(KvType type, size_t row, size_t head_dim, size_t tokens) {
    const size_t pages = (tokens + kPageTokens - 1) / kPageTokens;
    storage_.assign(2 * pages, std::vector<uint8_t>(kPageTokens * KvRowBytes(type, row, head_dim)));
    for (size_t p = 0; p < pages; ++p) {
      k_.push_back(storage_[2 * p].data());
      v_.push_back(storage_[2 * p + 1].data());
    }
    view_.type = type;
    view_.k_pages = k_.data();
    view_.v_pages = v_.data();
    view_.page_tokens = kPageTokens;
    view_.row_stride = row;
    view_.head_dim = head_dim;
  }
  const KvView& view() const { return view_; }

 private:
  std::vector<std::vector<uint8_t>> storage_;
  std::vector<void*> k_, v_;
  KvView view_;
};

// Row t of a K or V buffer's bytes (`base`, laid out as `kv` says) in
// KvReadRow's form: its stored values, then (q8) its scales.
template <class Buffer>
std::vector<uint8_t> KvRowOf(const DeviceKvView<Buffer>& kv, const uint8_t* base, size_t t) {
  const size_t row_bytes = KvRowBytes(kv.type, kv.row_stride, kv.head_dim);
  const size_t values = kv.type == KvType::kQ8 ? kv.row_stride : row_bytes;
  const size_t scales = row_bytes - values;
  std::vector<uint8_t> row(base + t * values, base + (t + 1) * values);
  const uint8_t* s = base + KvScalesOffset(kv.type, kv.capacity, kv.row_stride) + t * scales;
  row.insert(row.end(), s, s + scales);
  return row;
}

// The device cache (K and V buffers' bytes at k_base, v_base, laid out as
// `kv` says) holds exactly what the reference stored in `host` for
// positions [0, tokens) (f16 and q8 scales: the same round-to-nearest-even
// conversion; q8 codes: the same rounding), but for rotated q8 rows
// (`rotated_q8`) a code may be one step off and its scale, from max|y|, one
// f16 ulp.
template <class Buffer>
void ExpectStoredRows(const KvView& host, const DeviceKvView<Buffer>& kv, const uint8_t* k_base,
                      const uint8_t* v_base, size_t tokens, bool rotated_q8) {
  const size_t row_bytes = KvRowBytes(kv.type, kv.row_stride, kv.head_dim);
  const size_t codes = kv.type == KvType::kQ8 ? kv.row_stride : row_bytes;
  std::vector<uint8_t> host_row(row_bytes);
  for (size_t t = 0; t < tokens; ++t) {
    for (bool keys : {true, false}) {
      const std::vector<uint8_t> got = KvRowOf(kv, keys ? k_base : v_base, t);
      reference::KvReadRow(host, keys ? host.k_pages : host.v_pages, t, host_row.data());
      if (!rotated_q8) {
        ASSERT_EQ(got, host_row) << (keys ? "K" : "V") << " row " << t;
        continue;
      }
      for (size_t i = 0; i < codes; ++i) {
        ASSERT_LE(std::abs(static_cast<int8_t>(got[i]) - static_cast<int8_t>(host_row[i])), 1)
            << (keys ? "K" : "V") << " row " << t << " code " << i;
      }
      for (size_t i = codes; i < row_bytes; i += 2) {
        const int g = got[i] | got[i + 1] << 8, h = host_row[i] | host_row[i + 1] << 8;
        ASSERT_LE(std::abs(g - h), 1) << (keys ? "K" : "V") << " row " << t << " scale " << i;
      }
    }
  }
}

// A K row both sides rotated and stored again: f32 values within two ulp
// of values below 4 (one rounding more or less of a*c - b*s), f16 values
// within one step (the ulp may carry across a rounding boundary); q8 heads
// with scales within one f16 step and every decoded value within half a
// step of each side's exact value. q8 rows in the Hadamard basis leave and
// re-enter it by butterflies on the device and by the CPU's vector or
// matrix Hadamard, whose sums round differently too.
inline void ExpectReencodedRowClose(KvType type, size_t row, size_t head_dim,
                                    const std::vector<uint8_t>& got,
                                    const std::vector<uint8_t>& want) {
  const auto u16 = [](const std::vector<uint8_t>& b, size_t at) {
    uint16_t h;
    std::memcpy(&h, b.data() + at, 2);
    return h;
  };
  for (size_t j = 0; type != KvType::kQ8 && j < row; ++j) {
    if (type == KvType::kF32) {
      float g, w;
      std::memcpy(&g, got.data() + 4 * j, 4);
      std::memcpy(&w, want.data() + 4 * j, 4);
      ASSERT_LE(std::fabs(g - w), 5e-7f) << "value " << j;
    } else {
      ASSERT_LE(std::abs(u16(got, 2 * j) - u16(want, 2 * j)), 1) << "value " << j;
    }
  }
  for (size_t h = 0; type == KvType::kQ8 && h < row / head_dim; ++h) {
    const uint16_t gs = u16(got, row + 2 * h), ws = u16(want, row + 2 * h);
    ASSERT_LE(std::abs(gs - ws), 1) << "head " << h;
    const float tol = 0.5f * (F16ToF32(gs) + F16ToF32(ws)) * 1.001f;
    for (size_t j = h * head_dim; j < (h + 1) * head_dim; ++j) {
      const float g = F16ToF32(gs) * static_cast<float>(static_cast<int8_t>(got[j]));
      const float w = F16ToF32(ws) * static_cast<float>(static_cast<int8_t>(want[j]));
      ASSERT_LE(std::fabs(g - w), tol) << "value " << j;
    }
  }
}

}  // namespace pocket::gpu::testing
