#include "runtime/cpu_kernels.h"

#include "backends/cpu/kernel_target.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/roofline.h"
#include "backends/cpu/thread_pool.h"

namespace pocket {

size_t MaxCpuThreads() { return cpu::kMaxThreads; }

std::vector<std::string> CpuKernelTargets() { return cpu::KernelTargets(); }

const char* CpuKernelTarget() { return cpu::KernelTargetName(); }

CpuKernelChoice CpuKernelsFor(const Model& model, const SessionOptions& options) {
  cpu::KvView cache;
  cache.type = options.kv_type;
  cache.page_tokens = options.kv_page_tokens;
  cache.head_dim = static_cast<size_t>(model.config().head_dim);
  CpuKernelChoice choice;
  switch (cpu::AttentionMathFor(cache, cache.head_dim, model.attention_math())) {
    case cpu::AttentionMath::kBf16:
      choice.attention_math = "bf16";
      break;
    case cpu::AttentionMath::kInt8:
      choice.attention_math = "int8";
      break;
    case cpu::AttentionMath::kF32:
      choice.attention_math = "f32";
      break;
  }
  if (model.quant_math() == QuantMath::kInt8 && cpu::MatrixExtensionChosen()) {
    choice.prefill_matrix_ext = cpu::MatrixExtensionName();
  }
  if (cpu::AttentionByMatrixExtension(cache, cache.head_dim, model.attention_math())) {
    choice.attention_matrix_ext = cpu::MatrixExtensionName();
  }
  return choice;
}

double MeasureReadBandwidth(const Model& model, size_t bytes, int passes) {
  return cpu::MeasureReadBandwidth(model.pool(), bytes, passes);
}

double MeasureInt8Peak(const Model& model, size_t tokens, int passes) {
  return cpu::MeasureInt8Peak(model.pool(), tokens, passes);
}

}  // namespace pocket
