#include "convert/gguf_reader.h"

#include <algorithm>
#include <cstring>

#include "util/file_io.h"
#include "util/mapped_file.h"

namespace pocket {
namespace {

using ull = unsigned long long;

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
// ggml's limits: at most 4 dimensions, tensor names under 64 bytes. Keys
// are bounded the same way (real keys are under 64 bytes too).
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kMaxNameBytes = 63;
constexpr uint64_t kMaxKeyBytes = 256;
// Far above any tensor; keeps every product of dimensions below overflow.
constexpr uint64_t kMaxElements = uint64_t{1} << 48;
constexpr uint64_t kMaxAlignment = uint64_t{1} << 20;

struct TypeInfo {
  uint32_t type;
  const char* name;
  uint32_t block;
  uint32_t bytes;
};
// Every type ggml defines in GGUF files, so that each is named in errors.
constexpr TypeInfo kTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},      {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},      {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74},  {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},  {22, "IQ2_S", 256, 82},
    {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},
    {29, "IQ1_M", 256, 56},   {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},
};

const TypeInfo* FindType(uint32_t type) {
  for (const TypeInfo& t : kTypes) {
    if (t.type == type) return &t;
  }
  return nullptr;
}

// Bytes of one scalar of a metadata type; 0 for strings, arrays and
// unknown types.
uint64_t ScalarBytes(uint32_t type) {
  switch (static_cast<GgufType>(type)) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool:
      return 1;
    case GgufType::kU16:
    case GgufType::kI16:
      return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32:
      return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64:
      return 8;
    default:
      return 0;
  }
}

bool IsKnownValueType(uint32_t type) { return type <= static_cast<uint32_t>(GgufType::kF64); }

bool IsSigned(GgufType t) {
  return t == GgufType::kI8 || t == GgufType::kI16 || t == GgufType::kI32 || t == GgufType::kI64;
}

// Reads one scalar of `type` at `p` (ScalarBytes(type) bytes there).
void DecodeScalar(GgufType type, const uint8_t* p, GgufValue* v) {
  uint8_t buf[8] = {0};
  std::memcpy(buf, p, ScalarBytes(static_cast<uint32_t>(type)));
  auto as = [&buf](auto zero) {
    decltype(zero) x;
    std::memcpy(&x, buf, sizeof(x));
    return x;
  };
  switch (type) {
    case GgufType::kU8:
      v->u = as(uint8_t{});
      break;
    case GgufType::kI8:
      v->i = as(int8_t{});
      break;
    case GgufType::kU16:
      v->u = as(uint16_t{});
      break;
    case GgufType::kI16:
      v->i = as(int16_t{});
      break;
    case GgufType::kU32:
      v->u = as(uint32_t{});
      break;
    case GgufType::kI32:
      v->i = as(int32_t{});
      break;
    case GgufType::kU64:
      v->u = as(uint64_t{});
      break;
    case GgufType::kI64:
      v->i = as(int64_t{});
      break;
    case GgufType::kF32:
      v->f = as(float{});
      break;
    case GgufType::kF64:
      v->f = as(double{});
      break;
    case GgufType::kBool:
      v->u = buf[0] != 0;
      break;
    default:
      break;
  }
}

// Sequential reads over the header, each checked against the file's end.
class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  Status Need(uint64_t n, const std::string& what) {
    if (n > left()) {
      return Errorf(StatusCode::kCorruptFile,
                    "%s needs %llu bytes at offset %llu but the file ends at %llu (truncated?)",
                    what.c_str(), static_cast<ull>(n), static_cast<ull>(pos_),
                    static_cast<ull>(size_));
    }
    return Status::Ok();
  }
  template <typename T>
  Status Read(const std::string& what, T* out) {
    POCKET_RETURN_IF_ERROR(Need(sizeof(T), what));
    std::memcpy(out, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  // A GGUF string: uint64 length, then the bytes (no terminator).
  Status String(const std::string& what, uint64_t max_len, std::string_view* out) {
    uint64_t len = 0;
    POCKET_RETURN_IF_ERROR(Read(what + "'s length", &len));
    if (len > left()) {
      return Errorf(StatusCode::kCorruptFile,
                    "%s is %llu bytes long at offset %llu, past the end of the file (%llu bytes)",
                    what.c_str(), static_cast<ull>(len), static_cast<ull>(pos_),
                    static_cast<ull>(size_));
    }
    if (len > max_len) {
      return Errorf(StatusCode::kCorruptFile, "%s is %llu bytes long; at most %llu are allowed",
                    what.c_str(), static_cast<ull>(len), static_cast<ull>(max_len));
    }
    *out = std::string_view(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }
  const uint8_t* Skip(uint64_t n) {
    const uint8_t* p = base_ + pos_;
    pos_ += n;
    return p;
  }

 private:
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

Status ReadValue(Cursor* c, const std::string& key, GgufValue* v) {
  uint32_t type = 0;
  POCKET_RETURN_IF_ERROR(c->Read("the type of metadata '" + key + "'", &type));
  if (!IsKnownValueType(type)) {
    return Errorf(StatusCode::kCorruptFile,
                  "metadata '%s' has value type %u, which GGUF does not define", key.c_str(), type);
  }
  v->type = static_cast<GgufType>(type);
  const std::string what = "metadata '" + key + "'";
  if (v->type == GgufType::kString) {
    return c->String(what, UINT64_MAX, &v->str);
  }
  if (v->type != GgufType::kArray) {
    POCKET_RETURN_IF_ERROR(c->Need(ScalarBytes(type), what));
    const uint8_t* p = c->Skip(ScalarBytes(type));
    if (v->type == GgufType::kBool && *p > 1) {
      return Errorf(StatusCode::kCorruptFile, "%s is a bool holding %u, not 0 or 1", what.c_str(),
                    *p);
    }
    DecodeScalar(v->type, p, v);
    return Status::Ok();
  }
  uint32_t elem = 0;
  POCKET_RETURN_IF_ERROR(c->Read(what + "'s element type", &elem));
  POCKET_RETURN_IF_ERROR(c->Read(what + "'s element count", &v->count));
  if (elem == static_cast<uint32_t>(GgufType::kArray)) {
    return Errorf(StatusCode::kUnsupported, "%s is an array of arrays, which Pocket does not read",
                  what.c_str());
  }
  if (!IsKnownValueType(elem)) {
    return Errorf(StatusCode::kCorruptFile,
                  "%s is an array of value type %u, which GGUF does not define", what.c_str(),
                  elem);
  }
  v->elem = static_cast<GgufType>(elem);
  // Each element takes at least its scalar size (a string its 8-byte
  // length), so a count the rest of the file cannot hold is refused before
  // anything is sized from it.
  const uint64_t min_bytes = v->elem == GgufType::kString ? 8 : ScalarBytes(elem);
  if (v->count > c->left() / min_bytes) {
    return Errorf(StatusCode::kCorruptFile,
                  "%s claims %llu elements of type %s, more than the %llu bytes left in the file "
                  "can hold",
                  what.c_str(), static_cast<ull>(v->count), GgufTypeName(v->elem),
                  static_cast<ull>(c->left()));
  }
  v->elems = c->Skip(0);
  if (v->elem != GgufType::kString) {
    c->Skip(v->count * min_bytes);
    return Status::Ok();
  }
  v->strings.reserve(v->count);
  for (uint64_t i = 0; i < v->count; ++i) {
    std::string_view s;
    POCKET_RETURN_IF_ERROR(c->String(what + "[" + std::to_string(i) + "]", UINT64_MAX, &s));
    v->strings.push_back(s);
  }
  return Status::Ok();
}

}  // namespace

const char* GgufTypeName(GgufType t) {
  static constexpr const char* kNames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                           "int32",  "float32", "bool",   "string", "array",
                                           "uint64", "int64",   "float64"};
  const uint32_t i = static_cast<uint32_t>(t);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "unknown";
}

std::string GgmlTypeName(uint32_t type) {
  const TypeInfo* t = FindType(type);
  return t ? std::string(t->name) : "type " + std::to_string(type);
}

bool GgmlBlockSize(uint32_t type, uint32_t* block, uint32_t* bytes) {
  const TypeInfo* t = FindType(type);
  if (!t) return false;
  *block = t->block;
  *bytes = t->bytes;
  return true;
}

bool GgufValue::IsInteger() const {
  switch (type) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kU16:
    case GgufType::kI16:
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kU64:
    case GgufType::kI64:
      return true;
    default:
      return false;
  }
}

double GgufValue::ArrayNumber(uint64_t index) const {
  GgufValue v;
  DecodeScalar(elem, elems + index * ScalarBytes(static_cast<uint32_t>(elem)), &v);
  if (elem == GgufType::kF32 || elem == GgufType::kF64) return v.f;
  return IsSigned(elem) ? static_cast<double>(v.i) : static_cast<double>(v.u);
}

bool GgufValue::AsInt(int64_t* out) const {
  if (!IsInteger()) return false;
  if (!IsSigned(type) && u > static_cast<uint64_t>(INT64_MAX)) return false;
  *out = IsSigned(type) ? i : static_cast<int64_t>(u);
  return true;
}

std::vector<uint64_t> GgufTensor::Shape() const {
  return std::vector<uint64_t>(dims.rbegin(), dims.rend());
}

uint64_t GgufTensor::Elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  return n;
}

GgufFile::~GgufFile() = default;

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapping,
                          MappedFile::Open(path, "GGUF model (.gguf file)"));
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->base_ = mapping->data();
  f->size_ = mapping->size();
  f->mapping_ = std::move(mapping);
  const Status s = f->Parse();
  if (!s.ok()) return Status(s.code(), "'" + path + "': " + s.message());
  return f;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::FromMemory(const uint8_t* data, size_t size) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->base_ = data;
  f->size_ = size;
  POCKET_RETURN_IF_ERROR(f->Parse());
  return f;
}

bool GgufFile::HasMagic(const std::string& path) {
  auto file = RegularFile::Open(path, "GGUF model (.gguf file)");
  if (!file.ok()) return false;
  uint32_t magic = 0;
  auto n = file->Read(&magic, sizeof(magic));
  return n.ok() && *n == sizeof(magic) && magic == kMagic;
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Status GgufFile::Parse() {
  Cursor c(base_, size_);
  uint32_t magic = 0;
  uint64_t n_tensors = 0, n_kv = 0;
  POCKET_RETURN_IF_ERROR(c.Read("the GGUF magic", &magic));
  if (magic != kMagic) {
    return Status(StatusCode::kCorruptFile, "not a GGUF file (the first 4 bytes are not \"GGUF\")");
  }
  POCKET_RETURN_IF_ERROR(c.Read("the GGUF version", &version_));
  if (version_ == 1) {
    return Status(StatusCode::kUnsupported,
                  "GGUF version 1 (32-bit counts) is not supported; re-save the file with a "
                  "current llama.cpp (versions 2 and 3 are read)");
  }
  if (version_ != 2 && version_ != 3) {
    const uint32_t swapped = __builtin_bswap32(version_);
    return Errorf(StatusCode::kUnsupported, "GGUF version %u is not supported (2 and 3 are)%s",
                  version_,
                  swapped == 2 || swapped == 3 ? "; this looks like a big-endian GGUF file" : "");
  }
  POCKET_RETURN_IF_ERROR(c.Read("the tensor count", &n_tensors));
  POCKET_RETURN_IF_ERROR(c.Read("the metadata count", &n_kv));
  // A key/value pair takes at least 13 bytes (key length, type, a u8); a
  // tensor info at least 32 (name length, dim count, one dim, type, offset).
  if (n_kv > c.left() / 13) {
    return Errorf(StatusCode::kCorruptFile,
                  "the header claims %llu metadata pairs, more than the file's %llu bytes can hold "
                  "(truncated?)",
                  static_cast<ull>(n_kv), static_cast<ull>(size_));
  }
  if (n_tensors > c.left() / 32) {
    return Errorf(
        StatusCode::kCorruptFile,
        "the header claims %llu tensors, more than the file's %llu bytes can hold (truncated?)",
        static_cast<ull>(n_tensors), static_cast<ull>(size_));
  }
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string_view key;
    POCKET_RETURN_IF_ERROR(c.String("metadata key #" + std::to_string(i), kMaxKeyBytes, &key));
    const std::string k(key);
    GgufValue v;
    POCKET_RETURN_IF_ERROR(ReadValue(&c, k, &v));
    if (values_.count(k)) {
      return Errorf(StatusCode::kCorruptFile, "metadata key '%s' appears twice", k.c_str());
    }
    keys_.push_back(k);
    values_.emplace(k, std::move(v));
  }
  if (const GgufValue* a = Find("general.alignment")) {
    if (a->type != GgufType::kU32 || a->u == 0 || (a->u & (a->u - 1)) != 0 ||
        a->u > kMaxAlignment) {
      return Errorf(StatusCode::kCorruptFile,
                    "general.alignment must be a uint32 power of two up to %llu (it is a %s "
                    "holding %llu)",
                    static_cast<ull>(kMaxAlignment), GgufTypeName(a->type), static_cast<ull>(a->u));
    }
    alignment_ = a->u;
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    std::string_view name;
    POCKET_RETURN_IF_ERROR(
        c.String("the name of tensor #" + std::to_string(i), kMaxNameBytes, &name));
    t.name = std::string(name);
    const std::string what = "tensor '" + t.name + "'";
    uint32_t n_dims = 0;
    POCKET_RETURN_IF_ERROR(c.Read(what + "'s dimension count", &n_dims));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return Errorf(StatusCode::kCorruptFile, "%s has %u dimensions; GGUF tensors have 1 to %u",
                    what.c_str(), n_dims, kMaxDims);
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      POCKET_RETURN_IF_ERROR(c.Read(what + "'s dimensions", &dim));
      if (dim == 0 || dim > kMaxElements || elements > kMaxElements / dim) {
        return Errorf(StatusCode::kCorruptFile,
                      "%s has dimension %u = %llu; dimensions must be positive and multiply to at "
                      "most 2^48",
                      what.c_str(), d, static_cast<ull>(dim));
      }
      elements *= dim;
      t.dims.push_back(dim);
    }
    uint64_t rel = 0;
    POCKET_RETURN_IF_ERROR(c.Read(what + "'s type", &t.type));
    POCKET_RETURN_IF_ERROR(c.Read(what + "'s offset", &rel));
    const TypeInfo* type = FindType(t.type);
    if (type == nullptr) {
      return Errorf(StatusCode::kCorruptFile, "%s has ggml type %u, which ggml does not define",
                    what.c_str(), t.type);
    }
    if (t.dims[0] % type->block != 0) {
      return Errorf(StatusCode::kCorruptFile,
                    "%s is %s, whose blocks of %u weights do not divide its %llu columns",
                    what.c_str(), type->name, type->block, static_cast<ull>(t.dims[0]));
    }
    t.nbytes = elements / type->block * type->bytes;
    if (rel % alignment_ != 0) {
      return Errorf(StatusCode::kCorruptFile,
                    "%s's data offset %llu is not a multiple of the alignment %llu", what.c_str(),
                    static_cast<ull>(rel), static_cast<ull>(alignment_));
    }
    t.offset = rel;  // made absolute once the data section's start is known
    if (tensor_index_.count(t.name)) {
      return Errorf(StatusCode::kCorruptFile, "tensor '%s' appears twice", t.name.c_str());
    }
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  data_offset_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (!tensors_.empty() && data_offset_ > size_) {
    return Errorf(StatusCode::kCorruptFile,
                  "the tensor data would start at byte %llu, past the end of the file (%llu "
                  "bytes; truncated?)",
                  static_cast<ull>(data_offset_), static_cast<ull>(size_));
  }
  const uint64_t data_bytes = tensors_.empty() ? 0 : size_ - data_offset_;
  for (GgufTensor& t : tensors_) {
    if (t.offset > data_bytes || t.nbytes > data_bytes - t.offset) {
      return Errorf(StatusCode::kCorruptFile,
                    "tensor '%s' (%s, %llu bytes at data offset %llu) ends past the end of the "
                    "file (%llu bytes of data; truncated?)",
                    t.name.c_str(), GgmlTypeName(t.type).c_str(), static_cast<ull>(t.nbytes),
                    static_cast<ull>(t.offset), static_cast<ull>(data_bytes));
    }
    t.offset += data_offset_;
  }
  // Two tensors sharing bytes would convert as one another's weights.
  std::vector<const GgufTensor*> by_offset;
  for (const GgufTensor& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensor& a = *by_offset[i - 1];
    const GgufTensor& b = *by_offset[i];
    if (a.offset + a.nbytes > b.offset) {
      return Errorf(StatusCode::kCorruptFile,
                    "tensors '%s' (data offset %llu, %llu bytes) and '%s' (data offset %llu) "
                    "overlap",
                    a.name.c_str(), static_cast<ull>(a.offset - data_offset_),
                    static_cast<ull>(a.nbytes), b.name.c_str(),
                    static_cast<ull>(b.offset - data_offset_));
    }
  }
  return Status::Ok();
}

}  // namespace pocket
