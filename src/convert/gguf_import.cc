#include "convert/gguf_import.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "convert/gguf_pretokenizers.h"
#include "convert/source_files.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_data.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/fp16.h"
#include "util/log.h"

namespace pocket {
namespace {

using ull = unsigned long long;

struct ArchInfo {
  const char* name;
  bool qk_norm;
  bool qkv_bias;
  // llama.cpp's converter permutes a llama's q/k rows from Hugging Face's
  // rotate-half order into pairs (2i, 2i+1) and rotates those; qwen2 and
  // qwen3 keep the halves (llama.cpp's NEOX rope type).
  RopeStyle rope;
};
constexpr ArchInfo kArchitectures[] = {
    {"llama", false, false, RopeStyle::kInterleaved},
    {"qwen2", false, true, RopeStyle::kNeox},
    {"qwen3", true, false, RopeStyle::kNeox},
};

// GGUF token types (the same numbers as SentencePiece's piece types).
enum TokenType : int64_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// --- Metadata access: each error names the key. ---

class Meta {
 public:
  explicit Meta(const GgufFile& f) : f_(f) {}

  const GgufValue* Find(const std::string& key) const { return f_.Find(key); }

  Status String(const std::string& key, bool required, std::string* out) const {
    const GgufValue* v = f_.Find(key);
    if (v == nullptr) return required ? Missing(key) : Status::Ok();
    if (v->type != GgufType::kString) return WrongType(key, *v, "a string");
    out->assign(v->str);
    return Status::Ok();
  }
  // An integer in [min, INT32_MAX].
  Status Int(const std::string& key, bool required, int64_t min, int32_t* out) const {
    const GgufValue* v = f_.Find(key);
    if (v == nullptr) return required ? Missing(key) : Status::Ok();
    int64_t x = 0;
    if (!v->AsInt(&x)) return WrongType(key, *v, "an integer");
    if (x < min || x > INT32_MAX) {
      return Errorf(StatusCode::kCorruptFile, "GGUF metadata %s = %lld is out of range [%lld, %d]",
                    key.c_str(), static_cast<long long>(x), static_cast<long long>(min), INT32_MAX);
    }
    *out = static_cast<int32_t>(x);
    return Status::Ok();
  }
  Status Float(const std::string& key, bool required, double* out) const {
    const GgufValue* v = f_.Find(key);
    if (v == nullptr) return required ? Missing(key) : Status::Ok();
    if (!v->IsFloat()) return WrongType(key, *v, "a float");
    *out = v->f;
    return Status::Ok();
  }
  Status Bool(const std::string& key, bool* out) const {
    const GgufValue* v = f_.Find(key);
    if (v == nullptr) return Status::Ok();
    if (v->type != GgufType::kBool) return WrongType(key, *v, "a bool");
    *out = v->u != 0;
    return Status::Ok();
  }
  // An array of `count` elements of one of `types` (count 0: any length).
  Status Array(const std::string& key, std::initializer_list<GgufType> types, uint64_t count,
               const GgufValue** out) const {
    const GgufValue* v = f_.Find(key);
    if (v == nullptr) return Missing(key);
    bool type_ok = false;
    for (GgufType t : types) type_ok |= v->type == GgufType::kArray && v->elem == t;
    if (!type_ok) {
      return Errorf(StatusCode::kCorruptFile, "GGUF metadata %s has type %s%s%s, not array of %s",
                    key.c_str(), GgufTypeName(v->type), v->type == GgufType::kArray ? " of " : "",
                    v->type == GgufType::kArray ? GgufTypeName(v->elem) : "",
                    GgufTypeName(*types.begin()));
    }
    if (count != 0 && v->count != count) {
      return Errorf(StatusCode::kCorruptFile,
                    "GGUF metadata %s has %llu elements; tokenizer.ggml.tokens has %llu",
                    key.c_str(), static_cast<ull>(v->count), static_cast<ull>(count));
    }
    *out = v;
    return Status::Ok();
  }

 private:
  static Status Missing(const std::string& key) {
    return Errorf(StatusCode::kCorruptFile, "GGUF metadata %s is missing", key.c_str());
  }
  static Status WrongType(const std::string& key, const GgufValue& v, const char* want) {
    return Errorf(StatusCode::kCorruptFile, "GGUF metadata %s has type %s, not %s", key.c_str(),
                  GgufTypeName(v.type), want);
  }
  const GgufFile& f_;
};

// --- Tensors ---

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
float LoadF16(const uint8_t* p) { return F16ToF32(LoadU16(p)); }
void StoreU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// The 6-bit scale and min of sub-block j of a Q4_K / Q5_K super-block.
void ScaleMinK4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// One block of `type` at `b` into y[block weights], with ggml's float
// operations in ggml's order: the values of F32/F16/BF16/Q8_0/Q4_0/Q4_1 are
// ggml's bit for bit (their products are exact); the K-quants' may differ in
// the last bit where a compiler fuses a multiply-add differently.
void DequantizeBlock(GgmlType type, const uint8_t* b, float* y) {
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(y, b, 4);
      return;
    case GgmlType::kF16:
      *y = LoadF16(b);
      return;
    case GgmlType::kBF16:
      *y = BF16ToF32(LoadU16(b));
      return;
    case GgmlType::kQ8_0: {
      const float d = LoadF16(b);
      for (int j = 0; j < 32; ++j) y[j] = static_cast<int8_t>(b[2 + j]) * d;
      return;
    }
    case GgmlType::kQ4_0: {
      const float d = LoadF16(b);
      for (int j = 0; j < 16; ++j) {
        y[j] = ((b[2 + j] & 0xF) - 8) * d;
        y[j + 16] = ((b[2 + j] >> 4) - 8) * d;
      }
      return;
    }
    case GgmlType::kQ4_1: {
      const float d = LoadF16(b), m = LoadF16(b + 2);
      for (int j = 0; j < 16; ++j) {
        y[j] = (b[4 + j] & 0xF) * d + m;
        y[j + 16] = (b[4 + j] >> 4) * d + m;
      }
      return;
    }
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1: {
      const bool q51 = type == GgmlType::kQ5_1;
      const float d = LoadF16(b), m = q51 ? LoadF16(b + 2) : 0.0f;
      const uint8_t* hp = b + (q51 ? 4 : 2);
      const uint8_t* qs = hp + 4;
      uint32_t qh;
      std::memcpy(&qh, hp, 4);
      for (int j = 0; j < 16; ++j) {
        const int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
        const int x0 = (qs[j] & 0xF) | h0, x1 = (qs[j] >> 4) | h1;
        if (q51) {
          y[j] = x0 * d + m;
          y[j + 16] = x1 * d + m;
        } else {
          y[j] = (x0 - 16) * d;
          y[j + 16] = (x1 - 16) * d;
        }
      }
      return;
    }
    case GgmlType::kQ2_K: {
      const uint8_t* scales = b;
      const uint8_t* q = b + 16;
      const float d = LoadF16(b + 80), dmin = LoadF16(b + 82);
      for (int n = 0, is = 0; n < 256; n += 128, q += 32) {
        for (int shift = 0; shift < 8; shift += 2) {
          for (int half = 0; half < 2; ++half, ++is) {
            const float dl = d * (scales[is] & 0xF), ml = dmin * (scales[is] >> 4);
            for (int l = 0; l < 16; ++l) *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
          }
        }
      }
      return;
    }
    case GgmlType::kQ3_K: {
      // 16 6-bit scales: low 4 bits in bytes 0-7, high 2 bits in bytes 8-11.
      const uint8_t* hmask = b;
      const uint8_t* q = b + 32;
      const uint8_t* packed = b + 96;
      const float d = LoadF16(b + 108);
      int8_t scales[16];
      for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
        const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
        scales[j] = static_cast<int8_t>(low | (high << 4));
      }
      uint8_t m = 1;
      for (int n = 0, is = 0; n < 256; n += 128, q += 32) {
        for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
          for (int half = 0; half < 2; ++half, ++is) {
            const float dl = d * (scales[is] - 32);
            for (int l = 0; l < 16; ++l) {
              const int k = l + 16 * half;
              *y++ = dl * (((q[k] >> shift) & 3) - ((hmask[k] & m) ? 0 : 4));
            }
          }
        }
      }
      return;
    }
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: {
      const bool q5 = type == GgmlType::kQ5_K;
      const float d = LoadF16(b), dmin = LoadF16(b + 2);
      const uint8_t* scales = b + 4;
      const uint8_t* qh = b + 16;
      const uint8_t* q = b + (q5 ? 48 : 16);
      uint8_t u1 = 1, u2 = 2;
      for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
        uint8_t sc, m;
        ScaleMinK4(is, scales, &sc, &m);
        const float d1 = d * sc, m1 = dmin * m;
        ScaleMinK4(is + 1, scales, &sc, &m);
        const float d2 = d * sc, m2 = dmin * m;
        for (int l = 0; l < 32; ++l) {
          const int h = q5 && (qh[l] & u1) ? 16 : 0;
          *y++ = d1 * ((q[l] & 0xF) + h) - m1;
        }
        for (int l = 0; l < 32; ++l) {
          const int h = q5 && (qh[l] & u2) ? 16 : 0;
          *y++ = d2 * ((q[l] >> 4) + h) - m2;
        }
        u1 <<= 2;
        u2 <<= 2;
      }
      return;
    }
    case GgmlType::kQ6_K: {
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
      const float d = LoadF16(b + 208);
      for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
        for (int l = 0; l < 32; ++l) {
          const int is = l / 16;
          const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
          const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
          const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
          y[l] = d * sc[is] * q1;
          y[l + 32] = d * sc[is + 2] * q2;
          y[l + 64] = d * sc[is + 4] * q3;
          y[l + 96] = d * sc[is + 6] * q4;
        }
      }
      return;
    }
    default:
      return;
  }
}

bool Dequantizable(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return true;
    default:
      return false;
  }
}

Status NotFinite(const GgufTensor& t, uint64_t block, const char* what) {
  return Errorf(StatusCode::kInvalidArgument,
                "GGUF tensor '%s' (%s): block %llu has a non-finite %s", t.name.c_str(),
                GgmlTypeName(t.type).c_str(), static_cast<ull>(block), what);
}

// The .pocket dtype and group a tensor's own bytes convert to exactly, if
// any: F32/F16/BF16 as they are, Q8_0 as q8, Q4_0 and Q4_1 as q4 g32, and
// Q4_1 as q4 g64 where every pair of adjacent blocks of a row shares its
// (d, m), as a g64 model exported to Q4_1 does.
bool NativeStorage(const GgufFile& f, const GgufTensor& t, DType* dtype, uint32_t* group) {
  switch (static_cast<GgmlType>(t.type)) {
    case GgmlType::kF32:
      *dtype = DType::kF32;
      *group = 0;
      return true;
    case GgmlType::kF16:
      *dtype = DType::kF16;
      *group = 0;
      return true;
    case GgmlType::kBF16:
      *dtype = DType::kBF16;
      *group = 0;
      return true;
    case GgmlType::kQ8_0:
      *dtype = DType::kQ8;
      *group = 32;
      return true;
    case GgmlType::kQ4_0:
      *dtype = DType::kQ4;
      *group = 32;
      return true;
    case GgmlType::kQ4_1: {
      *dtype = DType::kQ4;
      *group = 32;
      if (t.dims[0] % 64 != 0) return true;
      const uint8_t* p = f.TensorData(t);
      for (uint64_t pair = 0; pair < t.Elements() / 64; ++pair, p += 40) {
        if (std::memcmp(p, p + 20, 4) != 0) return true;
      }
      *group = 64;
      return true;
    }
    default:
      return false;
  }
}

// The tensor's bytes in the planar layout of `dtype` / `group`
// (format/dtype.h), whose dequantized values equal ggml's bit for bit:
// q4 and Q4_x both hold weight j of a group in the low nibble of byte j and
// weight j + G/2 in the high one; Q4_0's (q - 8)·d is q·d + min with
// min = -8·d, exact in f16 and in the float arithmetic.
StatusOr<std::vector<uint8_t>> NativeBytes(const GgufFile& f, const GgufTensor& t, DType dtype,
                                           uint32_t group) {
  const uint8_t* src = f.TensorData(t);
  const uint64_t n = t.Elements();
  if (!IsQuantized(dtype)) {
    std::vector<uint8_t> out(src, src + t.nbytes);
    for (uint64_t i = 0; i < n; ++i) {
      float v;
      DequantizeBlock(static_cast<GgmlType>(t.type), src + i * (t.nbytes / n), &v);
      if (!std::isfinite(v)) {
        return Errorf(StatusCode::kInvalidArgument,
                      "GGUF tensor '%s' has a non-finite value at %llu", t.name.c_str(),
                      static_cast<ull>(i));
      }
    }
    return out;
  }
  const uint64_t groups = n / group;
  std::vector<uint8_t> out;
  if (dtype == DType::kQ8) {
    out.resize(n + groups * 2);
    uint8_t* codes = out.data();
    uint8_t* scales = out.data() + n;
    for (uint64_t g = 0; g < groups; ++g, src += 34) {
      if (!std::isfinite(LoadF16(src))) return NotFinite(t, g, "scale");
      for (int j = 0; j < 32; ++j) {
        if (src[2 + j] == 0x80) {
          return Errorf(StatusCode::kUnsupported,
                        "GGUF tensor '%s' (Q8_0): block %llu holds the code -128, which q8 does "
                        "not (its codes are -127..127); convert with quant=q8 (or another type)",
                        t.name.c_str(), static_cast<ull>(g));
        }
      }
      std::memcpy(codes + g * 32, src + 2, 32);
      std::memcpy(scales + g * 2, src, 2);
    }
    return out;
  }
  out.resize(n / 2 + groups * 4);
  uint8_t* codes = out.data();
  uint8_t* scales = out.data() + n / 2;
  uint8_t* mins = scales + groups * 2;
  const bool q40 = t.type == static_cast<uint32_t>(GgmlType::kQ4_0);
  const uint64_t block_bytes = q40 ? 18 : 20;
  const uint8_t* qs_at = src + (q40 ? 2 : 4);
  for (uint64_t b = 0; b < n / 32; ++b) {
    const uint8_t* block = src + b * block_bytes;
    const uint8_t* qs = qs_at + b * block_bytes;
    const float d = LoadF16(block);
    if (!std::isfinite(d)) return NotFinite(t, b, "scale");
    uint16_t min_h;
    if (q40) {
      min_h = F32ToF16(-8.0f * d);
      if (F16ToF32(min_h) != -8.0f * d) {
        return Errorf(StatusCode::kUnsupported,
                      "GGUF tensor '%s' (Q4_0): block %llu's scale %g makes the offset -8·d "
                      "overflow f16; convert with quant=q4 (or another type)",
                      t.name.c_str(), static_cast<ull>(b), d);
      }
    } else {
      min_h = LoadU16(block + 2);
      if (!std::isfinite(F16ToF32(min_h))) return NotFinite(t, b, "min");
    }
    if (group == 32) {
      std::memcpy(codes + b * 16, qs, 16);
    } else if (b % 2 == 0) {
      // Block pair (A, B) into one g64 group: byte j holds weight j (A's
      // weight j) low and weight j + 32 (B's weight j) high.
      const uint8_t* qb = qs + block_bytes;
      uint8_t* dst = codes + b * 16;
      for (int j = 0; j < 32; ++j) {
        const int a = j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
        const int c = j < 16 ? qb[j] & 0xF : qb[j - 16] >> 4;
        dst[j] = static_cast<uint8_t>(a | (c << 4));
      }
    }
    if (group == 32 || b % 2 == 0) {
      const uint64_t g = group == 32 ? b : b / 2;
      std::memcpy(scales + g * 2, block, 2);
      StoreU16(mins + g * 2, min_h);
    }
  }
  return out;
}

// --- Tokenizer ---

// A minimal protobuf writer for the SentencePiece ModelProto.
class Proto {
 public:
  void Varint(uint32_t field, uint64_t v) {
    Key(field, 0);
    Raw(v);
  }
  void Bytes(uint32_t field, std::string_view s) {
    Key(field, 2);
    Raw(s.size());
    out_.append(s);
  }
  void Float(uint32_t field, float f) {
    Key(field, 5);
    char b[4];
    std::memcpy(b, &f, 4);
    out_.append(b, 4);
  }
  const std::string& str() const { return out_; }

 private:
  void Key(uint32_t field, uint32_t wire) { Raw((uint64_t{field} << 3) | wire); }
  void Raw(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  std::string out_;
};

struct Vocab {
  const GgufValue* tokens = nullptr;
  const GgufValue* types = nullptr;  // nullptr: every token normal
  int32_t bos = -1, eos = -1;
  int64_t Type(uint64_t i) const {
    return types ? static_cast<int64_t>(types->ArrayNumber(i)) : kNormal;
  }
};

// tokenizer.ggml.model "llama": SentencePiece pieces, scores and types, run
// as llama.cpp runs them: a BPE model merging by piece score, byte
// fallback, "▁" for spaces and a dummy prefix (tokenizer.ggml.add_space_prefix,
// default true), no other normalization. Written as a SentencePiece model
// proto that libsentencepiece runs.
StatusOr<std::unique_ptr<Tokenizer>> SentencePieceFromGguf(const Meta& meta, const Vocab& v) {
  const uint64_t n = v.tokens->count;
  const GgufValue* scores = nullptr;
  if (meta.Find("tokenizer.ggml.scores")) {
    POCKET_RETURN_IF_ERROR(
        meta.Array("tokenizer.ggml.scores", {GgufType::kF32, GgufType::kF64}, n, &scores));
  }
  bool add_space_prefix = true, byte_fallback = false;
  POCKET_RETURN_IF_ERROR(meta.Bool("tokenizer.ggml.add_space_prefix", &add_space_prefix));
  Proto model, trainer, normalizer;
  int64_t unk = -1;
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t type = v.Type(i);
    if (type == kUnknown && unk < 0) unk = static_cast<int64_t>(i);
    byte_fallback |= type == kByte;
    Proto piece;
    piece.Bytes(1, v.tokens->strings[i]);
    piece.Float(2, scores ? static_cast<float>(scores->ArrayNumber(i)) : 0.0f);
    piece.Varint(3, static_cast<uint64_t>(type));
    model.Bytes(1, piece.str());
  }
  if (unk < 0) {
    return Status(StatusCode::kCorruptFile,
                  "GGUF tokenizer.ggml.token_type marks no token unknown (type 2), which a "
                  "SentencePiece vocabulary needs");
  }
  trainer.Varint(3, 2);  // model_type: BPE
  trainer.Varint(4, n);
  trainer.Varint(35, byte_fallback);
  trainer.Varint(40, static_cast<uint64_t>(unk));
  trainer.Bytes(45, v.tokens->strings[unk]);
  // libsentencepiece finds bos and eos by their pieces.
  if (v.bos >= 0) trainer.Bytes(46, v.tokens->strings[v.bos]);
  if (v.eos >= 0) trainer.Bytes(47, v.tokens->strings[v.eos]);
  normalizer.Bytes(1, "identity");
  normalizer.Bytes(2, "");
  normalizer.Varint(3, add_space_prefix);
  normalizer.Varint(4, 0);  // remove_extra_whitespaces: llama.cpp keeps them
  normalizer.Varint(5, 1);  // escape_whitespaces
  model.Bytes(2, trainer.str());
  model.Bytes(3, normalizer.str());
  return Tokenizer::FromSentencePiece(model.str());
}

// tokenizer.ggml.model "gpt2": byte-level BPE with tokenizer.ggml.merges
// and the pre-tokenizer of tokenizer.ggml.pre, which also says whether a
// BOS token goes first when tokenizer.ggml.add_bos_token does not.
StatusOr<std::unique_ptr<Tokenizer>> ByteLevelFromGguf(const Meta& meta, const Vocab& v,
                                                       bool* add_bos) {
  std::string pre;
  POCKET_RETURN_IF_ERROR(meta.String("tokenizer.ggml.pre", false, &pre));
  POCKET_ASSIGN_OR_RETURN(const GgufPreTokenizer split, FindGgufPreTokenizer(pre));
  const GgufValue* merges = nullptr;
  POCKET_RETURN_IF_ERROR(meta.Array("tokenizer.ggml.merges", {GgufType::kString}, 0, &merges));
  tok::BpeData d;
  d.kind = TokenizerKind::kByteLevelBpe;
  d.flags = split.flags;
  tok::SetRegexPatterns(split.patterns, &d);
  *add_bos = split.add_bos;
  d.bos = v.bos;
  d.eos = v.eos;
  std::unordered_map<std::string_view, int32_t> ids;
  for (uint64_t i = 0; i < v.tokens->count; ++i) {
    const std::string_view text = v.tokens->strings[i];
    const int64_t type = v.Type(i);
    ids.emplace(text, static_cast<int32_t>(i));
    std::string bytes;
    if (type == kControl || type == kUserDefined) {
      d.AddToken(text, type == kControl ? tok::kAttrAdded | tok::kAttrSpecial : tok::kAttrAdded);
    } else if (tok::FromByteLevel(text, &bytes)) {
      d.AddToken(bytes, 0);
    } else {
      d.AddToken(text, 0);
    }
    if (type == kUnknown && d.unk < 0) d.unk = static_cast<int32_t>(i);
  }
  d.merges.reserve(merges->count * 3);
  for (uint64_t r = 0; r < merges->count; ++r) {
    const std::string_view m = merges->strings[r];
    const size_t sp = m.find(' ');
    const auto a = sp == std::string_view::npos ? ids.end() : ids.find(m.substr(0, sp));
    const auto b = sp == std::string_view::npos ? ids.end() : ids.find(m.substr(sp + 1));
    const std::string joined = sp == std::string_view::npos
                                   ? std::string()
                                   : std::string(m.substr(0, sp)) + std::string(m.substr(sp + 1));
    const auto c = ids.find(joined);
    if (a == ids.end() || b == ids.end() || c == ids.end()) {
      return Errorf(StatusCode::kCorruptFile,
                    "GGUF tokenizer.ggml.merges[%llu] '%.*s' is not two tokens whose join is a "
                    "token",
                    static_cast<ull>(r), static_cast<int>(std::min<size_t>(m.size(), 64)),
                    m.data());
    }
    d.merges.insert(d.merges.end(), {a->second, b->second, c->second});
  }
  return Tokenizer::FromBlob(tok::SerializeBpe(d));
}

Status ReadTokenizer(const Meta& meta, ModelConfig* c, std::string* blob) {
  std::string kind;
  POCKET_RETURN_IF_ERROR(meta.String("tokenizer.ggml.model", true, &kind));
  Vocab v;
  POCKET_RETURN_IF_ERROR(meta.Array("tokenizer.ggml.tokens", {GgufType::kString}, 0, &v.tokens));
  const uint64_t n = v.tokens->count;
  if (n == 0 || n > static_cast<uint64_t>(c->vocab)) {
    return Errorf(StatusCode::kCorruptFile,
                  "GGUF tokenizer.ggml.tokens has %llu tokens; token_embd.weight has %d rows",
                  static_cast<ull>(n), c->vocab);
  }
  if (meta.Find("tokenizer.ggml.token_type")) {
    POCKET_RETURN_IF_ERROR(
        meta.Array("tokenizer.ggml.token_type",
                   {GgufType::kI32, GgufType::kU32, GgufType::kI8, GgufType::kU8}, n, &v.types));
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t t = v.Type(i);
      if (t < kNormal || t > kByte) {
        return Errorf(StatusCode::kCorruptFile,
                      "GGUF tokenizer.ggml.token_type[%llu] = %lld is not a token type (1-6)",
                      static_cast<ull>(i), static_cast<long long>(t));
      }
    }
  }
  const int64_t last = static_cast<int64_t>(n) - 1;
  POCKET_RETURN_IF_ERROR(meta.Int("tokenizer.ggml.bos_token_id", false, 0, &v.bos));
  POCKET_RETURN_IF_ERROR(meta.Int("tokenizer.ggml.eos_token_id", false, 0, &v.eos));
  int32_t eot = -1;
  POCKET_RETURN_IF_ERROR(meta.Int("tokenizer.ggml.eot_token_id", false, 0, &eot));
  for (const auto& [name, id] :
       {std::pair<const char*, int32_t>{"bos", v.bos}, {"eos", v.eos}, {"eot", eot}}) {
    if (id > last) {
      return Errorf(StatusCode::kCorruptFile,
                    "GGUF tokenizer.ggml.%s_token_id = %d is past the last token (%lld)", name, id,
                    static_cast<long long>(last));
    }
  }
  std::unique_ptr<Tokenizer> tok;
  if (kind == "llama") {
    POCKET_ASSIGN_OR_RETURN(tok, SentencePieceFromGguf(meta, v));
    c->add_bos = true;
  } else if (kind == "gpt2") {
    POCKET_ASSIGN_OR_RETURN(tok, ByteLevelFromGguf(meta, v, &c->add_bos));
  } else {
    return Errorf(StatusCode::kUnsupported,
                  "GGUF tokenizer.ggml.model '%s' is not supported (llama: SentencePiece, gpt2: "
                  "byte-level BPE)",
                  kind.c_str());
  }
  POCKET_RETURN_IF_ERROR(meta.Bool("tokenizer.ggml.add_bos_token", &c->add_bos));
  if (c->add_bos && v.bos < 0) {
    return Status(StatusCode::kCorruptFile,
                  "GGUF tokenizer.ggml.add_bos_token (or the pre-tokenizer's default) asks for a "
                  "BOS token but there is no bos_token_id");
  }
  c->bos_id = v.bos;
  c->eos_id = v.eos;
  if (v.eos >= 0) c->stop_token_ids.push_back(v.eos);
  if (eot >= 0 && eot != v.eos) c->stop_token_ids.push_back(eot);
  POCKET_RETURN_IF_ERROR(meta.String("tokenizer.chat_template", false, &c->chat_template));
  c->chat_template_kind =
      c->chat_template.empty() ? "none" : DetectChatTemplateKind(c->chat_template);
  *blob = tok->ToBlob();
  return Status::Ok();
}

// --- Config ---

Status ReadConfig(const Meta& meta, ModelConfig* c) {
  std::string arch;
  POCKET_RETURN_IF_ERROR(meta.String("general.architecture", true, &arch));
  const ArchInfo* info = nullptr;
  for (const ArchInfo& a : kArchitectures) {
    if (arch == a.name) info = &a;
  }
  if (info == nullptr) {
    return Errorf(StatusCode::kUnsupported,
                  "GGUF architecture '%s' is not supported; supported: llama, qwen2, qwen3",
                  arch.c_str());
  }
  c->architecture = arch;
  c->qk_norm = info->qk_norm;
  c->qkv_bias = info->qkv_bias;
  c->rope_style = info->rope;
  const std::string p = arch + ".";
  POCKET_RETURN_IF_ERROR(meta.Int(p + "block_count", true, 1, &c->n_layers));
  POCKET_RETURN_IF_ERROR(meta.Int(p + "embedding_length", true, 1, &c->hidden));
  POCKET_RETURN_IF_ERROR(meta.Int(p + "feed_forward_length", true, 1, &c->ffn));
  POCKET_RETURN_IF_ERROR(meta.Int(p + "context_length", true, 1, &c->context));
  POCKET_RETURN_IF_ERROR(meta.Int(p + "attention.head_count", true, 1, &c->n_heads));
  c->n_kv_heads = c->n_heads;
  POCKET_RETURN_IF_ERROR(meta.Int(p + "attention.head_count_kv", false, 1, &c->n_kv_heads));
  c->head_dim = c->hidden / c->n_heads;
  POCKET_RETURN_IF_ERROR(meta.Int(p + "attention.key_length", false, 1, &c->head_dim));
  int32_t value_length = c->head_dim, rope_dims = c->head_dim, experts = 0;
  POCKET_RETURN_IF_ERROR(meta.Int(p + "attention.value_length", false, 1, &value_length));
  POCKET_RETURN_IF_ERROR(meta.Int(p + "rope.dimension_count", false, 1, &rope_dims));
  POCKET_RETURN_IF_ERROR(meta.Int(p + "expert_count", false, 0, &experts));
  if (value_length != c->head_dim) {
    return Errorf(StatusCode::kUnsupported,
                  "GGUF %sattention.value_length %d differs from key_length %d; Pocket's "
                  "attention has one head size",
                  p.c_str(), value_length, c->head_dim);
  }
  if (rope_dims != c->head_dim) {
    return Errorf(StatusCode::kUnsupported,
                  "GGUF %srope.dimension_count %d is not the head size %d; RoPE rotates the "
                  "whole head",
                  p.c_str(), rope_dims, c->head_dim);
  }
  if (experts > 0) {
    return Errorf(StatusCode::kUnsupported,
                  "GGUF %sexpert_count %d: mixture-of-experts models are not supported", p.c_str(),
                  experts);
  }
  std::string scaling;
  POCKET_RETURN_IF_ERROR(meta.String(p + "rope.scaling.type", false, &scaling));
  if (!scaling.empty() && scaling != "none") {
    return Errorf(StatusCode::kUnsupported,
                  "GGUF %srope.scaling.type '%s' is not supported; only plain RoPE is implemented",
                  p.c_str(), scaling.c_str());
  }
  c->rope_theta = 10000.0;
  POCKET_RETURN_IF_ERROR(meta.Float(p + "rope.freq_base", false, &c->rope_theta));
  POCKET_RETURN_IF_ERROR(meta.Float(p + "attention.layer_norm_rms_epsilon", true, &c->rms_eps));
  c->license = "unknown";
  POCKET_RETURN_IF_ERROR(meta.String("general.license", false, &c->license));
  return Status::Ok();
}

// Layer tensors GGUF files name as .pocket does ("blk.N.<suffix>").
constexpr const char* kLayerSuffixes[] = {
    "attn_norm.weight",   "attn_q.weight",      "attn_k.weight",   "attn_v.weight",
    "attn_q.bias",        "attn_k.bias",        "attn_v.bias",     "attn_q_norm.weight",
    "attn_k_norm.weight", "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight",
    "ffn_up.weight",      "ffn_down.weight",
};

bool IsKnownName(const std::string& name) {
  if (name == "token_embd.weight" || name == "output_norm.weight" || name == "output.weight") {
    return true;
  }
  if (name.compare(0, 4, "blk.") != 0) return false;
  size_t i = 4;
  while (i < name.size() && i < 4 + 6 && name[i] >= '0' && name[i] <= '9') ++i;
  if (i == 4 || i >= name.size() || name[i] != '.' || (i > 5 && name[4] == '0')) return false;
  const std::string suffix = name.substr(i + 1);
  for (const char* s : kLayerSuffixes) {
    if (suffix == s) return true;
  }
  return false;
}

}  // namespace

StatusOr<std::vector<float>> DequantizeGgufTensor(const GgufFile& file, const GgufTensor& t) {
  if (!Dequantizable(t.type)) {
    return Errorf(StatusCode::kUnsupported, "GGUF tensor '%s' is %s, which Pocket does not read",
                  t.name.c_str(), GgmlTypeName(t.type).c_str());
  }
  uint32_t block = 0, bytes = 0;
  GgmlBlockSize(t.type, &block, &bytes);
  std::vector<float> out(t.Elements());
  const uint8_t* src = file.TensorData(t);
  for (uint64_t b = 0; b < out.size() / block; ++b) {
    DequantizeBlock(static_cast<GgmlType>(t.type), src + b * bytes, out.data() + b * block);
  }
  return out;
}

StatusOr<SourceModel> ImportGgufFile(std::shared_ptr<const GgufFile> file,
                                     const std::string& source) {
  const Meta meta(*file);
  SourceModel model;
  ModelConfig& c = model.config;
  POCKET_RETURN_IF_ERROR(ReadConfig(meta, &c));

  std::string unknown, unreadable;
  bool has_output = false;
  const GgufTensor* embd = file->FindTensor("token_embd.weight");
  for (const GgufTensor& t : file->tensors()) {
    if (!IsKnownName(t.name)) {
      unknown += (unknown.empty() ? "" : ", ") + t.name;
    } else if (!Dequantizable(t.type)) {
      unreadable += (unreadable.empty() ? "" : ", ") + t.name + " (" + GgmlTypeName(t.type) + ")";
    }
    has_output |= t.name == "output.weight";
  }
  if (!unknown.empty()) {
    return Errorf(StatusCode::kUnsupported, "GGUF tensors Pocket does not know: %s",
                  unknown.c_str());
  }
  if (!unreadable.empty()) {
    return Errorf(StatusCode::kUnsupported,
                  "GGUF tensors of types Pocket does not read: %s (Pocket reads F32, F16, BF16, "
                  "Q8_0, Q4_0, Q4_1 exactly and requantizes Q5_0, Q5_1 and Q2_K to Q6_K)",
                  unreadable.c_str());
  }
  if (embd == nullptr || embd->dims.size() != 2) {
    return Status(StatusCode::kCorruptFile,
                  "GGUF has no 2-D token_embd.weight to size the vocabulary from");
  }
  if (embd->dims[1] > INT32_MAX) {
    return Errorf(StatusCode::kCorruptFile, "GGUF token_embd.weight has %llu rows",
                  static_cast<ull>(embd->dims[1]));
  }
  c.vocab = static_cast<int32_t>(embd->dims[1]);
  c.tied_embeddings = !has_output;
  POCKET_RETURN_IF_ERROR(ReadTokenizer(meta, &c, &model.tokenizer_blob));

  for (const GgufTensor& t : file->tensors()) {
    SourceTensor s;
    s.name = t.name;
    s.shape = t.Shape();
    s.source_type = GgmlTypeName(t.type);
    s.load = [file, &t]() { return DequantizeGgufTensor(*file, t); };
    DType dtype;
    uint32_t group;
    if (t.dims.size() >= 2 && NativeStorage(*file, t, &dtype, &group)) {
      s.native_dtype = dtype;
      s.native_group = group;
      s.load_native = [file, &t, dtype, group]() { return NativeBytes(*file, t, dtype, group); };
    }
    model.tensors.push_back(std::move(s));
  }
  ProvenanceBuilder prov(source);
  prov.AddBytes(source, file->data(), file->size());
  c.provenance_json = prov.ToJson();
  return model;
}

StatusOr<std::string> ConvertGgufToTemporaryFile(const std::string& path) {
  const char* dir = std::getenv("TMPDIR");
  std::string tmp =
      std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/pocket-gguf-XXXXXX.pocket";
  const int fd = ::mkstemps(tmp.data(), static_cast<int>(std::strlen(".pocket")));
  if (fd < 0) {
    return Errorf(StatusCode::kIoError,
                  "cannot create a temporary file to convert '%s' into (%s): %s", path.c_str(),
                  tmp.c_str(), std::strerror(errno));
  }
  ::close(fd);
  Log(LogLevel::kInfo,
      "converting the GGUF file '%s' at load; `pocket convert` writes a .pocket "
      "file that loads without this step",
      path.c_str());
  ConvertOptions options;
  options.quant.keep_source_types = true;
  auto stats = ConvertModel(path, tmp, options);
  if (!stats.ok()) {
    std::remove(tmp.c_str());
    return stats.status();
  }
  return tmp;
}

StatusOr<SourceModel> ImportGguf(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  auto model = ImportGgufFile(std::shared_ptr<const GgufFile>(std::move(file)), path);
  if (!model.ok())
    return Status(model.status().code(), "'" + path + "': " + model.status().message());
  return model;
}

}  // namespace pocket
