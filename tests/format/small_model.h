// A small valid model used by the format tests: one tensor of every dtype,
// with byte sizes computed by hand from dtype.h's layouts.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "format/writer.h"

namespace pocket::testing {

struct SmallTensor {
  TensorInfo info;
  std::vector<uint8_t> bytes;
};

inline TensorInfo MakeInfo(std::string name, DType dtype, std::vector<uint64_t> shape,
                           uint32_t group, uint64_t nbytes) {
  TensorInfo t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.group = group;
  t.nbytes = nbytes;
  return t;
}

inline std::vector<SmallTensor> SmallTensors() {
  std::vector<SmallTensor> ts = {
      {MakeInfo("token_embd.weight", DType::kF32, {3, 5}, 0, 60), {}},
      {MakeInfo("output_norm.weight", DType::kF16, {7}, 0, 14), {}},
      // 2*64 int8 codes + 2*(64/32) f16 scales.
      {MakeInfo("blk.0.attn_q.weight", DType::kQ8, {2, 64}, 32, 136), {}},
      // 3*128/2 code bytes + 3*(128/64) f16 scales + as many f16 mins.
      {MakeInfo("blk.0.ffn_up.weight", DType::kQ4, {3, 128}, 64, 216), {}},
      {MakeInfo("blk.0.attn_k.weight", DType::kBF16, {2, 2, 3}, 0, 24), {}},
  };
  std::mt19937 rng(1234);
  for (SmallTensor& t : ts) {
    t.bytes.resize(t.info.nbytes);
    for (uint8_t& b : t.bytes) b = static_cast<uint8_t>(rng());
  }
  return ts;
}

// The data offsets the layout rules give SmallTensors(): each tensor at the
// next multiple of 64 after the previous one ends.
inline std::vector<uint64_t> SmallOffsets() { return {0, 64, 128, 320, 576}; }

constexpr char kSmallConfig[] = "{\"architecture\":\"llama\",\"n_layers\":1}";
constexpr char kSmallGraph[] = "{\"nodes\":[{\"op\":\"embed\"}]}";
constexpr char kSmallTokenizer[] = "tokenizer\0blob\xff";

inline Status WriteSmallModel(const std::string& path) {
  PocketWriter w;
  w.SetConfigJson(kSmallConfig);
  w.SetGraphJson(kSmallGraph);
  w.SetTokenizerBlob(std::string(kSmallTokenizer, sizeof(kSmallTokenizer) - 1));
  for (SmallTensor& t : SmallTensors()) {
    Status s = w.AddTensor(t.info, t.bytes);
    if (!s.ok()) return s;
  }
  return w.Finish(path);
}

}  // namespace pocket::testing
