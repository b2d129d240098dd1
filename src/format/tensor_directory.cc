#include "format/tensor_directory.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_set>

namespace pocket {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the .pocket format is little-endian and read with memcpy");

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// Bounds-checked little-endian cursor over the section bytes.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  bool Read(T* v) {
    if (n_ - pos_ < sizeof(T)) return false;
    std::memcpy(v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool ReadBytes(size_t len, std::string* s) {
    if (n_ - pos_ < len) return false;
    s->assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return true;
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return n_ - pos_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

std::string Quoted(const std::string& name) {
  // Names come from untrusted files: keep messages printable and bounded.
  std::string s = "'";
  for (size_t i = 0; i < name.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    s += (c >= 0x20 && c < 0x7F) ? static_cast<char>(c) : '?';
  }
  if (name.size() > 64) s += "...";
  return s + "'";
}

}  // namespace

Status ValidateTensorInfo(const TensorInfo& t) {
  const std::string name = Quoted(t.name);
  if (t.name.empty()) return Status(StatusCode::kCorruptFile, "tensor with an empty name");
  if (t.name.size() > kMaxTensorNameLength) {
    return Errorf(StatusCode::kCorruptFile, "tensor %s: name is %zu bytes, the limit is %u",
                  name.c_str(), t.name.size(), kMaxTensorNameLength);
  }
  if (static_cast<int>(t.dtype) >= kNumDTypes) {
    return Errorf(StatusCode::kCorruptFile, "tensor %s: unknown dtype %u", name.c_str(),
                  static_cast<unsigned>(t.dtype));
  }
  if (static_cast<int>(t.layout) >= kNumLayouts) {
    return Errorf(StatusCode::kCorruptFile,
                  "tensor %s: unknown layout %u (a newer Pocket may read it)", name.c_str(),
                  static_cast<unsigned>(t.layout));
  }
  if (t.shape.empty() || t.shape.size() > kMaxTensorDims) {
    return Errorf(StatusCode::kCorruptFile, "tensor %s: has %zu dims, must have 1 to %u",
                  name.c_str(), t.shape.size(), kMaxTensorDims);
  }
  uint64_t elements = 1;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] == 0) {
      return Errorf(StatusCode::kCorruptFile, "tensor %s: dim %zu is zero", name.c_str(), i);
    }
    if (__builtin_mul_overflow(elements, t.shape[i], &elements)) {
      return Errorf(StatusCode::kCorruptFile,
                    "tensor %s: element count overflows 64 bits (dim %zu = %llu)", name.c_str(), i,
                    static_cast<unsigned long long>(t.shape[i]));
    }
  }
  if (!IsValidGroup(t.dtype, t.group)) {
    return Errorf(StatusCode::kCorruptFile,
                  "tensor %s: group %u is not valid for dtype %s (q4: 32/64/128, q8: 32, "
                  "plain types: 0)",
                  name.c_str(), t.group, DTypeName(t.dtype));
  }
  if (!IsValidLayout(t.layout, t.dtype, t.rows())) {
    return Errorf(StatusCode::kCorruptFile,
                  "tensor %s: layout %s does not hold a %s tensor of %llu rows (rows16 is for "
                  "q4 and q8 with rows a multiple of 16)",
                  name.c_str(), LayoutName(t.layout), DTypeName(t.dtype),
                  static_cast<unsigned long long>(t.rows()));
  }
  uint64_t expected;
  if (!TensorByteSize(t.dtype, t.rows(), t.cols(), t.group, &expected)) {
    return Errorf(StatusCode::kCorruptFile,
                  "tensor %s: %s group %u does not divide %llu columns, or the size overflows",
                  name.c_str(), DTypeName(t.dtype), t.group,
                  static_cast<unsigned long long>(t.cols()));
  }
  if (t.nbytes != expected) {
    return Errorf(StatusCode::kCorruptFile,
                  "tensor %s: nbytes is %llu but a %s tensor of this shape takes %llu",
                  name.c_str(), static_cast<unsigned long long>(t.nbytes), DTypeName(t.dtype),
                  static_cast<unsigned long long>(expected));
  }
  return Status::Ok();
}

std::string EncodeTensorDirectory(const std::vector<TensorInfo>& infos) {
  std::string out;
  Put<uint32_t>(&out, static_cast<uint32_t>(infos.size()));
  for (const TensorInfo& t : infos) {
    Put<uint16_t>(&out, static_cast<uint16_t>(t.name.size()));
    out += t.name;
    Put<uint8_t>(&out, static_cast<uint8_t>(t.dtype));
    Put<uint8_t>(&out, static_cast<uint8_t>(t.layout));
    Put<uint8_t>(&out, static_cast<uint8_t>(t.shape.size()));
    Put<uint8_t>(&out, 0);
    Put<uint32_t>(&out, t.group);
    for (uint64_t d : t.shape) Put<uint64_t>(&out, d);
    Put<uint64_t>(&out, t.offset);
    Put<uint64_t>(&out, t.nbytes);
  }
  return out;
}

StatusOr<std::vector<TensorInfo>> DecodeTensorDirectory(const uint8_t* bytes, size_t size,
                                                        uint64_t section_offset,
                                                        uint64_t data_size) {
  Cursor c(bytes, size);
  uint32_t count = 0;
  if (!c.Read(&count)) {
    return Errorf(StatusCode::kCorruptFile,
                  "tensors section at byte %llu is %zu bytes, too short for its count",
                  static_cast<unsigned long long>(section_offset), size);
  }
  // Each entry takes at least 32 bytes; refuse counts the section cannot
  // hold before reserving memory for them.
  if (count > c.remaining() / 32) {
    return Errorf(StatusCode::kCorruptFile,
                  "tensors section at byte %llu claims %u tensors but holds only %zu bytes",
                  static_cast<unsigned long long>(section_offset), count, size);
  }
  std::vector<TensorInfo> infos(count);
  std::unordered_set<std::string_view> names;
  names.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    TensorInfo& t = infos[i];
    const unsigned long long at = section_offset + c.pos();
    auto truncated = [&]() {
      return Errorf(StatusCode::kCorruptFile,
                    "tensors section: entry %u (starting at file byte %llu) runs past the end "
                    "of the section",
                    i, at);
    };
    uint16_t name_len;
    uint8_t dtype, layout, ndim, reserved;
    if (!c.Read(&name_len) || !c.ReadBytes(name_len, &t.name) || !c.Read(&dtype) ||
        !c.Read(&layout) || !c.Read(&ndim) || !c.Read(&reserved) || !c.Read(&t.group)) {
      return truncated();
    }
    const std::string name = Quoted(t.name);
    if (dtype >= kNumDTypes) {
      return Errorf(StatusCode::kCorruptFile,
                    "tensors section: entry %u (tensor %s, file byte %llu) has unknown dtype "
                    "%u; the file may need a newer Pocket",
                    i, name.c_str(), at, dtype);
    }
    if (ndim == 0 || ndim > kMaxTensorDims) {
      return Errorf(StatusCode::kCorruptFile,
                    "tensors section: entry %u (tensor %s, file byte %llu) has %u dims, must "
                    "have 1 to %u",
                    i, name.c_str(), at, ndim, kMaxTensorDims);
    }
    t.dtype = static_cast<DType>(dtype);
    t.layout = static_cast<TensorLayout>(layout);
    t.shape.resize(ndim);
    for (uint64_t& d : t.shape) {
      if (!c.Read(&d)) return truncated();
    }
    if (!c.Read(&t.offset) || !c.Read(&t.nbytes)) return truncated();

    Status s = ValidateTensorInfo(t);
    if (!s.ok()) {
      return Errorf(StatusCode::kCorruptFile, "tensors section: entry %u at file byte %llu: %s", i,
                    at, s.message().c_str());
    }
    if (t.offset % kTensorAlignment != 0) {
      return Errorf(StatusCode::kCorruptFile,
                    "tensor %s (entry %u): data offset %llu is not a multiple of %llu",
                    name.c_str(), i, static_cast<unsigned long long>(t.offset),
                    static_cast<unsigned long long>(kTensorAlignment));
    }
    uint64_t end;
    if (__builtin_add_overflow(t.offset, t.nbytes, &end) || end > data_size) {
      return Errorf(StatusCode::kCorruptFile,
                    "tensor %s (entry %u): bytes [%llu, +%llu) lie outside the %llu-byte data "
                    "section",
                    name.c_str(), i, static_cast<unsigned long long>(t.offset),
                    static_cast<unsigned long long>(t.nbytes),
                    static_cast<unsigned long long>(data_size));
    }
    if (!names.insert(t.name).second) {
      return Errorf(StatusCode::kCorruptFile, "tensor %s (entry %u): duplicate name", name.c_str(),
                    i);
    }
  }
  if (c.remaining() != 0) {
    return Errorf(StatusCode::kCorruptFile,
                  "tensors section at byte %llu: %zu unexpected bytes after the last entry",
                  static_cast<unsigned long long>(section_offset), c.remaining());
  }

  // Overlaps: sort by offset and compare neighbours.
  std::vector<uint32_t> order(count);
  for (uint32_t i = 0; i < count; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return infos[a].offset < infos[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = infos[order[k - 1]];
    const TensorInfo& cur = infos[order[k]];
    if (prev.offset + prev.nbytes > cur.offset) {
      return Errorf(StatusCode::kCorruptFile,
                    "tensors %s and %s overlap in the data section (at offsets %llu and %llu)",
                    Quoted(prev.name).c_str(), Quoted(cur.name).c_str(),
                    static_cast<unsigned long long>(prev.offset),
                    static_cast<unsigned long long>(cur.offset));
    }
  }
  return infos;
}

}  // namespace pocket
