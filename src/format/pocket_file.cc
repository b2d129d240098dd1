#include "format/pocket_file.h"

namespace pocket {

const char* SectionKindName(SectionKind kind) {
  switch (kind) {
    case SectionKind::kConfig:
      return "config";
    case SectionKind::kTokenizer:
      return "tokenizer";
    case SectionKind::kGraph:
      return "graph";
    case SectionKind::kTensors:
      return "tensors";
    case SectionKind::kData:
      return "data";
  }
  return "unknown";
}

uint64_t TensorInfo::rows() const {
  uint64_t r = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}

uint64_t TensorInfo::elements() const { return rows() * cols(); }

}  // namespace pocket
