#include "format/dtype.h"

namespace pocket {
namespace {

bool MulOk(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool AddOk(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

}  // namespace

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kQ8:
      return "q8";
    case DType::kQ4:
      return "q4";
  }
  return "unknown";
}

bool ParseDType(std::string_view name, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = static_cast<DType>(i);
    if (name == DTypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

bool IsQuantized(DType t) { return t == DType::kQ8 || t == DType::kQ4; }

bool IsValidGroup(DType t, uint32_t group) {
  switch (t) {
    case DType::kQ8:
      return group == kQ8Group;
    case DType::kQ4:
      return group == 32 || group == 64 || group == 128;
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return group == 0;
  }
  return false;
}

const char* LayoutName(TensorLayout l) {
  switch (l) {
    case TensorLayout::kRowMajor:
      return "row_major";
    case TensorLayout::kRows16:
      return "rows16";
  }
  return "unknown";
}

bool ParseLayout(std::string_view name, TensorLayout* out) {
  for (int i = 0; i < kNumLayouts; ++i) {
    const TensorLayout l = static_cast<TensorLayout>(i);
    if (name == LayoutName(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

bool IsValidLayout(TensorLayout l, DType t, uint64_t rows) {
  switch (l) {
    case TensorLayout::kRowMajor:
      return true;
    case TensorLayout::kRows16:
      return (t == DType::kQ4 || t == DType::kQ8) && rows % kRows16Block == 0;
  }
  return false;
}

bool TensorByteSize(DType t, uint64_t rows, uint64_t cols, uint32_t group, uint64_t* bytes) {
  uint64_t elements;
  if (!MulOk(rows, cols, &elements)) return false;
  switch (t) {
    case DType::kF32:
      return MulOk(elements, 4, bytes);
    case DType::kF16:
    case DType::kBF16:
      return MulOk(elements, 2, bytes);
    case DType::kQ8:
    case DType::kQ4:
      break;
    default:
      return false;
  }
  if (!IsValidGroup(t, group) || cols % group != 0) return false;
  // Quantized: codes, then one f16 scale per group (q4 adds one f16 min).
  uint64_t groups;
  if (!MulOk(rows, cols / group, &groups)) return false;
  const uint64_t code_bytes = t == DType::kQ8 ? elements : elements / 2;
  const uint64_t per_group = t == DType::kQ8 ? 2 : 4;
  uint64_t meta_bytes;
  return MulOk(groups, per_group, &meta_bytes) && AddOk(code_bytes, meta_bytes, bytes);
}

}  // namespace pocket
