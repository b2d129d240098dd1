// A GGUF writer for tests, written from the format's description (not from
// llama.cpp): metadata of every value type, tensors of any ggml type from
// their raw bytes, and knobs to write lying counts, offsets and sizes. Also
// ggml's reference Q8_0 / Q4_0 / Q4_1 quantizers and dequantizers, written
// here independently of src/convert, so tests can compare a conversion
// with the values the GGUF itself stands for.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "util/fp16.h"

namespace pocket::testing_gguf {

enum Type : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

enum Ggml : uint32_t {
  kGgmlF32 = 0,
  kGgmlF16 = 1,
  kGgmlQ4_0 = 2,
  kGgmlQ4_1 = 3,
  kGgmlQ5_0 = 6,
  kGgmlQ5_1 = 7,
  kGgmlQ8_0 = 8,
  kGgmlQ2_K = 10,
  kGgmlQ3_K = 11,
  kGgmlQ4_K = 12,
  kGgmlQ5_K = 13,
  kGgmlQ6_K = 14,
  kGgmlQ8_K = 15,
  kGgmlIQ2_XXS = 16,
  kGgmlBF16 = 30,
};

class Bytes {
 public:
  template <typename T>
  void Put(T v) {
    const size_t at = s_.size();
    s_.resize(at + sizeof(T));
    std::memcpy(&s_[at], &v, sizeof(T));
  }
  void Str(const std::string& v) {
    Put<uint64_t>(v.size());
    s_ += v;
  }
  void Raw(const std::string& v) { s_ += v; }
  const std::string& str() const { return s_; }
  size_t size() const { return s_.size(); }

 private:
  std::string s_;
};

class GgufWriter {
 public:
  // Metadata. Scalars and arrays are written in the order added.
  template <typename T>
  void Scalar(const std::string& key, Type type, T v) {
    kv_.Str(key);
    kv_.Put<uint32_t>(type);
    kv_.Put<T>(v);
    ++n_kv_;
  }
  void U32(const std::string& key, uint32_t v) { Scalar(key, kU32, v); }
  void I32(const std::string& key, int32_t v) { Scalar(key, kI32, v); }
  void F32(const std::string& key, float v) { Scalar(key, kF32, v); }
  void Bool(const std::string& key, bool v) { Scalar<uint8_t>(key, kBool, v ? 1 : 0); }
  void Str(const std::string& key, const std::string& v) {
    kv_.Str(key);
    kv_.Put<uint32_t>(kString);
    kv_.Str(v);
    ++n_kv_;
  }
  void StrArray(const std::string& key, const std::vector<std::string>& v) {
    ArrayHeader(key, kString, v.size());
    for (const std::string& s : v) kv_.Str(s);
  }
  template <typename T>
  void Array(const std::string& key, Type elem, const std::vector<T>& v) {
    ArrayHeader(key, elem, v.size());
    for (const T& x : v) kv_.Put<T>(x);
  }
  // The header of an array whose elements the caller writes with raw().
  void ArrayHeader(const std::string& key, Type elem, uint64_t count) {
    kv_.Str(key);
    kv_.Put<uint32_t>(kArray);
    kv_.Put<uint32_t>(elem);
    kv_.Put<uint64_t>(count);
    ++n_kv_;
  }
  Bytes& raw_kv() { return kv_; }

  // A tensor; `dims` in GGUF order (dims[0] = columns). `offset` ~0 places
  // it after the previous one, aligned.
  void Tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, std::string data,
              uint64_t offset = ~uint64_t{0}) {
    tensors_.push_back({name, std::move(dims), type, std::move(data), offset});
  }

  uint32_t version = 3;
  uint32_t alignment = 32;  // also written as general.alignment when not 32
  int64_t tensor_count_delta = 0;
  int64_t kv_count_delta = 0;

  std::string Finish() const {
    Bytes kv = kv_;
    uint64_t n_kv = n_kv_;
    if (alignment != 32) {
      kv.Str("general.alignment");
      kv.Put<uint32_t>(kU32);
      kv.Put<uint32_t>(alignment);
      ++n_kv;
    }
    Bytes out;
    out.Raw("GGUF");
    out.Put<uint32_t>(version);
    out.Put<uint64_t>(tensors_.size() + tensor_count_delta);
    out.Put<uint64_t>(n_kv + kv_count_delta);
    out.Raw(kv.str());
    std::vector<uint64_t> offsets;
    uint64_t next = 0;
    for (const T& t : tensors_) {
      const uint64_t off = t.offset != ~uint64_t{0} ? t.offset : next;
      offsets.push_back(off);
      next = std::max(next, (off + t.data.size() + alignment - 1) / alignment * alignment);
      out.Str(t.name);
      out.Put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
      for (uint64_t d : t.dims) out.Put<uint64_t>(d);
      out.Put<uint32_t>(t.type);
      out.Put<uint64_t>(off);
    }
    std::string file = out.str();
    file.resize((file.size() + alignment - 1) / alignment * alignment, '\0');
    const size_t data = file.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const size_t end = data + offsets[i] + tensors_[i].data.size();
      if (file.size() < end) file.resize(end, '\0');
      std::memcpy(&file[data + offsets[i]], tensors_[i].data.data(), tensors_[i].data.size());
    }
    return file;
  }

 private:
  struct T {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::string data;
    uint64_t offset;
  };
  Bytes kv_;
  uint64_t n_kv_ = 0;
  std::vector<T> tensors_;
};

inline std::string F32Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

inline void PutHalf(std::string* s, float v) {
  const uint16_t h = F32ToF16(v);
  s->append(reinterpret_cast<const char*>(&h), 2);
}
inline float GetHalf(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}

inline std::string F16Bytes(const std::vector<float>& v) {
  std::string s;
  for (float x : v) PutHalf(&s, x);
  return s;
}
inline std::string BF16Bytes(const std::vector<float>& v) {
  std::string s;
  for (float x : v) {
    const uint16_t b = F32ToBF16(x);
    s.append(reinterpret_cast<const char*>(&b), 2);
  }
  return s;
}

// ggml's reference quantizers (quantize_row_*_ref): blocks of 32.
inline std::string QuantizeQ8_0(const std::vector<float>& v) {
  std::string s;
  for (size_t b = 0; b < v.size(); b += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[b + j]));
    const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
    PutHalf(&s, d);
    for (int j = 0; j < 32; ++j) s.push_back(static_cast<char>(std::lround(v[b + j] * id)));
  }
  return s;
}
inline std::string QuantizeQ4_0(const std::vector<float>& v) {
  std::string s;
  for (size_t b = 0; b < v.size(); b += 32) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(v[b + j]) > amax) {
        amax = std::fabs(v[b + j]);
        max = v[b + j];
      }
    }
    const float d = max / -8, id = d ? 1.0f / d : 0.0f;
    PutHalf(&s, d);
    for (int j = 0; j < 16; ++j) {
      const int x0 = std::min(15, static_cast<int>(v[b + j] * id + 8.5f));
      const int x1 = std::min(15, static_cast<int>(v[b + j + 16] * id + 8.5f));
      s.push_back(static_cast<char>(x0 | (x1 << 4)));
    }
  }
  return s;
}
// `pair_groups`: the (min, max) of each 64-weight pair of blocks, as a
// model quantized with groups of 64 and exported to Q4_1 has.
inline std::string QuantizeQ4_1(const std::vector<float>& v, bool pair_groups = false) {
  std::string s;
  const size_t span = pair_groups ? 64 : 32;
  for (size_t b = 0; b < v.size(); b += 32) {
    const size_t g = b / span * span;
    float lo = v[g], hi = v[g];
    for (size_t j = g; j < g + span; ++j) {
      lo = std::min(lo, v[j]);
      hi = std::max(hi, v[j]);
    }
    const float d = (hi - lo) / 15, id = d ? 1.0f / d : 0.0f;
    PutHalf(&s, d);
    PutHalf(&s, lo);
    for (int j = 0; j < 16; ++j) {
      const int x0 = std::min(15, static_cast<int>((v[b + j] - lo) * id + 0.5f));
      const int x1 = std::min(15, static_cast<int>((v[b + j + 16] - lo) * id + 0.5f));
      s.push_back(static_cast<char>(x0 | (x1 << 4)));
    }
  }
  return s;
}

// ggml's dequantize_row_* for the same types.
inline std::vector<float> Dequantize(uint32_t type, const std::string& bytes, size_t n) {
  std::vector<float> y(n);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  for (size_t b = 0; b < n / 32; ++b) {
    float* out = y.data() + b * 32;
    if (type == kGgmlQ8_0) {
      const uint8_t* x = p + b * 34;
      const float d = GetHalf(x);
      for (int j = 0; j < 32; ++j) out[j] = static_cast<int8_t>(x[2 + j]) * d;
    } else if (type == kGgmlQ4_0) {
      const uint8_t* x = p + b * 18;
      const float d = GetHalf(x);
      for (int j = 0; j < 16; ++j) {
        out[j] = ((x[2 + j] & 0x0F) - 8) * d;
        out[j + 16] = ((x[2 + j] >> 4) - 8) * d;
      }
    } else if (type == kGgmlQ4_1) {
      const uint8_t* x = p + b * 20;
      const float d = GetHalf(x), m = GetHalf(x + 2);
      for (int j = 0; j < 16; ++j) {
        out[j] = (x[4 + j] & 0x0F) * d + m;
        out[j + 16] = (x[4 + j] >> 4) * d + m;
      }
    }
  }
  return y;
}

// Normal-ish values from a seed (a sum of four uniforms), scaled by `scale`.
inline std::vector<float> RandomValues(size_t n, uint64_t seed, float scale) {
  std::vector<float> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    float sum = 0;
    for (int k = 0; k < 4; ++k) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      sum += static_cast<float>(x >> 40) / static_cast<float>(1 << 24) - 0.5f;
    }
    v[i] = sum * scale;
  }
  return v;
}

}  // namespace pocket::testing_gguf
