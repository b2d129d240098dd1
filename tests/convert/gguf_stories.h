// stories260K (tests/data/stories260K-hf) written as GGUF files the way
// llama.cpp's converter writes them: as `llama` with each head's q/k rows
// permuted from Hugging Face's rotate-half order into interleaved pairs, or
// as `qwen2` (rotate-half order kept, zero q/k/v biases), with the tok512
// SentencePiece vocabulary as `llama` tokenizer metadata. Matrices in any
// of the types the test writer quantizes to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convert/convert_test_util.h"
#include "convert/gguf_writer.h"
#include "convert/hf_import.h"

namespace pocket::testing_gguf {

struct SpmPiece {
  std::string piece;
  float score = 0;
  int32_t type = 1;
};

// The pieces of a SentencePiece model proto (field 1 of ModelProto: piece
// = 1, score = 2, type = 3), read with a minimal protobuf decoder.
inline std::vector<SpmPiece> ReadSpmPieces(const std::string& proto) {
  const auto* p = reinterpret_cast<const uint8_t*>(proto.data());
  auto varint = [](const uint8_t* b, size_t* i) {
    uint64_t r = 0;
    for (int shift = 0;; shift += 7) {
      const uint8_t c = b[(*i)++];
      r |= uint64_t{c & 0x7Fu} << shift;
      if (c < 0x80) return r;
    }
  };
  auto skip = [&](const uint8_t* b, size_t* i, uint32_t wire) {
    if (wire == 0) varint(b, i);
    if (wire == 1) *i += 8;
    if (wire == 2) *i += varint(b, i);
    if (wire == 5) *i += 4;
  };
  std::vector<SpmPiece> out;
  size_t i = 0;
  while (i < proto.size()) {
    const uint64_t key = varint(p, &i);
    if (key != ((1 << 3) | 2)) {
      skip(p, &i, key & 7);
      continue;
    }
    const size_t len = varint(p, &i), end = i + len;
    SpmPiece piece;
    while (i < end) {
      const uint64_t k = varint(p, &i);
      if (k == ((1 << 3) | 2)) {
        const size_t n = varint(p, &i);
        piece.piece.assign(proto, i, n);
        i += n;
      } else if (k == ((2 << 3) | 5)) {
        std::memcpy(&piece.score, p + i, 4);
        i += 4;
      } else if (k == ((3 << 3) | 0)) {
        piece.type = static_cast<int32_t>(varint(p, &i));
      } else {
        skip(p, &i, k & 7);
      }
    }
    out.push_back(piece);
  }
  return out;
}

// tokenizer.ggml.* for a SentencePiece .model file, as llama.cpp writes it.
inline void AddSpmTokenizer(GgufWriter* w, const std::string& model_path) {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (const SpmPiece& p : ReadSpmPieces(testing_util::ReadFile(model_path))) {
    tokens.push_back(p.piece);
    scores.push_back(p.score);
    types.push_back(p.type);
  }
  w->Str("tokenizer.ggml.model", "llama");
  w->StrArray("tokenizer.ggml.tokens", tokens);
  w->Array("tokenizer.ggml.scores", kF32, scores);
  w->Array("tokenizer.ggml.token_type", kI32, types);
  w->U32("tokenizer.ggml.bos_token_id", 1);
  w->U32("tokenizer.ggml.eos_token_id", 2);
  w->U32("tokenizer.ggml.unknown_token_id", 0);
  w->Bool("tokenizer.ggml.add_bos_token", true);
}

// llama.cpp's LlamaModel.permute: per head, rows (s, i) of the two halves
// become rows (i, s) of interleaved pairs.
inline std::vector<float> PermuteQk(const std::vector<float>& w, uint64_t rows, uint64_t cols,
                                    uint64_t heads) {
  std::vector<float> out(w.size());
  const uint64_t hd = rows / heads, half = hd / 2;
  for (uint64_t h = 0; h < heads; ++h) {
    for (uint64_t s = 0; s < 2; ++s) {
      for (uint64_t i = 0; i < half; ++i) {
        const uint64_t from = h * hd + s * half + i, to = h * hd + 2 * i + s;
        std::copy(w.begin() + from * cols, w.begin() + (from + 1) * cols, out.begin() + to * cols);
      }
    }
  }
  return out;
}

// The bytes of `values` (a [rows, cols] matrix) in ggml type `type`.
inline std::string Encode(uint32_t type, const std::vector<float>& values) {
  switch (type) {
    case kGgmlF16:
      return F16Bytes(values);
    case kGgmlBF16:
      return BF16Bytes(values);
    case kGgmlQ8_0:
      return QuantizeQ8_0(values);
    case kGgmlQ4_0:
      return QuantizeQ4_0(values);
    case kGgmlQ4_1:
      return QuantizeQ4_1(values);
    default:
      return F32Bytes(values);
  }
}

enum class StoriesArch { kLlama, kQwen2 };

// The GGUF file's bytes. Matrices whose columns 32 divides are written as
// `matrix_type`, the rest (ffn_down's 172 columns) and the norms as F32.
inline std::string StoriesGguf(StoriesArch arch, uint32_t matrix_type = kGgmlF32) {
  const std::string name = arch == StoriesArch::kLlama ? "llama" : "qwen2";
  GgufWriter w;
  w.Str("general.architecture", name);
  w.Str("general.name", "stories260K");
  w.U32(name + ".block_count", 5);
  w.U32(name + ".context_length", 512);
  w.U32(name + ".embedding_length", 64);
  w.U32(name + ".feed_forward_length", 172);
  w.U32(name + ".attention.head_count", 8);
  w.U32(name + ".attention.head_count_kv", 4);
  w.U32(name + ".rope.dimension_count", 8);
  w.F32(name + ".rope.freq_base", 10000.0f);
  w.F32(name + ".attention.layer_norm_rms_epsilon", 1e-5f);
  AddSpmTokenizer(&w, testing_util::DataPath("stories260K/tok512.model"));
  const auto tensors =
      testing_util::ParseF32Safetensors(testing_util::DataPath("stories260K-hf/model.safetensors"));
  for (const auto& [hf, t] : tensors) {
    const std::string gguf = MapHfTensorName(hf);
    std::vector<float> values = t.values;
    const uint64_t rows = t.shape.size() == 2 ? t.shape[0] : 1, cols = t.shape.back();
    const bool q = gguf.find("attn_q.weight") != std::string::npos;
    const bool k = gguf.find("attn_k.weight") != std::string::npos;
    if (arch == StoriesArch::kLlama && (q || k)) values = PermuteQk(values, rows, cols, q ? 8 : 4);
    std::vector<uint64_t> dims(t.shape.rbegin(), t.shape.rend());
    const uint32_t type = t.shape.size() == 2 && cols % 32 == 0 ? matrix_type : kGgmlF32;
    w.Tensor(gguf, dims, type, Encode(type, values));
    if (arch == StoriesArch::kQwen2 &&
        (q || k || gguf.find("attn_v.weight") != std::string::npos)) {
      const std::string bias = gguf.substr(0, gguf.size() - 6) + "bias";
      w.Tensor(bias, {rows}, kGgmlF32, F32Bytes(std::vector<float>(rows, 0.0f)));
    }
  }
  return w.Finish();
}

}  // namespace pocket::testing_gguf
