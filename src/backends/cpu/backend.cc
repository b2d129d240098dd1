#include "backends/cpu/backend.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "backends/cpu/core_plan.h"
#include "backends/cpu/executor.h"
#include "backends/cpu/kernel_target.h"
#include "backends/cpu/thread_pool.h"
#include "backends/registry.h"
#include "format/reader.h"
#include "util/huge_page_buffer.h"

namespace pocket {
namespace cpu {

AttentionMath ChooseAttentionMath(const Plan& plan, const ModelConfig& config, QuantMath math) {
  const bool quantized = std::any_of(plan.steps.begin(), plan.steps.end(), [](const PlanStep& s) {
    return s.op == OpKind::kLinear &&
           (s.weight.dtype == DType::kQ4 || s.weight.dtype == DType::kQ8);
  });
  // The bf16 kernel takes head sizes in multiples of 16 (ops.h).
  return math == QuantMath::kInt8 && quantized && config.head_dim % 16 == 0 ? AttentionMath::kBf16
                                                                            : AttentionMath::kF32;
}

namespace {

// The file span that holds every tensor the plan reads goes into one
// HugePageBuffer, and the steps' pointers move with it. The span starts on
// an OS page, so each tensor keeps its alignment.
StatusOr<std::unique_ptr<HugePageBuffer>> CopyWeightsToHugePages(Plan* plan,
                                                                 const PocketFile& file) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& [offset, size] : plan->weight_ranges) {
    lo = std::min(lo, offset);
    hi = std::max(hi, offset + size);
  }
  if (lo >= hi) return std::unique_ptr<HugePageBuffer>();
  const long os_page = sysconf(_SC_PAGESIZE);
  const uint64_t page = os_page > 0 ? static_cast<uint64_t>(os_page) : 4096;
  lo = lo / page * page;
  auto copy = HugePageBuffer::Allocate(static_cast<size_t>(hi - lo));
  if (!copy.ok()) {
    return Status(copy.status().code(),
                  "cannot copy the weights into huge pages: " + copy.status().message() +
                      " (load without huge pages to use them from the file mapping)");
  }
  std::unique_ptr<HugePageBuffer> buffer = std::move(copy).value();
  // A chunk at a time, each chunk's mapped pages dropped once copied, so
  // loading holds at most one chunk twice.
  constexpr uint64_t kChunk = uint64_t{8} << 20;
  for (uint64_t at = lo; at < hi; at += kChunk) {
    const uint64_t n = std::min(kChunk, hi - at);
    std::memcpy(buffer->data() + (at - lo), file.bytes() + at, static_cast<size_t>(n));
    file.ReleasePages(at, n);
  }
  const uint8_t* begin = file.bytes() + lo;
  const uint8_t* end = file.bytes() + hi;
  const auto moved = [&](auto* p) {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(p);
    if (b == nullptr || b < begin || b >= end) return p;
    return reinterpret_cast<decltype(p)>(buffer->data() + (b - begin));
  };
  for (PlanStep& s : plan->steps) {
    s.weight.data = moved(s.weight.data);
    s.norm = moved(s.norm);
    s.bias = moved(s.bias);
  }
  return buffer;
}

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  BackendCapabilities capabilities() const override {
    BackendCapabilities c;
    c.kv_types = KvTypeBit(KvType::kF32) | KvTypeBit(KvType::kF16) | KvTypeBit(KvType::kQ8) |
                 KvTypeBit(KvType::kBf16);
    c.sliding_window = true;
    c.state_rows = true;
    c.op_times = true;
    c.exact_batch_rows = true;  // ops.h: kBatchTokens
    return c;
  }
  // bf16 where attention multiplies in bf16 on this CPU, since it rounds
  // f16 rows to bf16 anyway and reads bf16 pages in place (ops.h); f16
  // elsewhere.
  KvType default_kv_type() const override {
    return attention_math_ == AttentionMath::kBf16 && AttentionBf16Available() ? KvType::kBf16
                                                                               : KvType::kF16;
  }
  const HugePageBuffer* weights_copy() const override { return weights_copy_.get(); }
  int threads() const override { return static_cast<int>(pool_->NumThreads()); }
  ThreadPool* pool() const { return pool_.get(); }
  std::unique_ptr<BackendSession> NewSession(const BackendSessionOptions& options) const override {
    return std::make_unique<Executor>(plan_, pool_.get(), math_, attention_math_, options);
  }

  static StatusOr<std::unique_ptr<Backend>> Create(const BackendContext& context) {
    const BackendOptions& options = context.options;
    if (options.threads < 0 || static_cast<size_t>(options.threads) > kMaxThreads) {
      return Errorf(StatusCode::kInvalidArgument,
                    "threads must be in [0, %zu] (0 = one per fast core), got %d", kMaxThreads,
                    options.threads);
    }
    std::unique_ptr<CpuBackend> backend(new CpuBackend());
    backend->plan_ = context.plan;
    if (options.huge_pages) {
      POCKET_ASSIGN_OR_RETURN(backend->weights_copy_,
                              CopyWeightsToHugePages(context.plan, *context.file));
    }
    ThreadPoolOptions pool_options;
    pool_options.num_threads = static_cast<size_t>(options.threads);
    pool_options.pin_threads = options.pin_threads;
    backend->pool_ = std::make_unique<ThreadPool>(pool_options);
    backend->math_ = options.quant_math;
    backend->attention_math_ =
        ChooseAttentionMath(*context.plan, *context.config, options.quant_math);
    return std::unique_ptr<Backend>(std::move(backend));
  }

 private:
  CpuBackend() = default;

  const Plan* plan_ = nullptr;
  std::unique_ptr<ThreadPool> pool_;
  QuantMath math_ = QuantMath::kInt8;
  AttentionMath attention_math_ = AttentionMath::kF32;
  std::unique_ptr<HugePageBuffer> weights_copy_;  // with huge_pages; the plan points into it
};

// For example
//   "cpu         AVX3_DL kernels, prompts by AMX, bf16 attention by AMX, 2 hardware threads
//    (targets here: ...)"
//   "            2 compute threads by default; cores fastest first: 0 1"
std::string DescribeDevices() {
  const CorePlan plan = ThisProcessCorePlan();
  std::string order;
  for (const int core : plan.order) order += (order.empty() ? "" : " ") + std::to_string(core);
  // The matrix unit, where prompts use one (kernel_target.h), and bf16
  // attention too where it multiplies bf16 (x86's AMX-BF16).
  std::string matrix;
  if (MatrixExtensionChosen()) {
    matrix = std::string(", prompts by ") + MatrixExtensionName();
    if (MatrixExtensionMultipliesBf16()) {
      matrix += std::string(", bf16 attention by ") + MatrixExtensionName();
    }
  }
  std::string out = StringPrintf(
      "cpu         %s kernels%s, %u hardware threads (targets here: %s)\n"
      "            %zu compute threads by default; cores fastest first: %s\n",
      KernelTargetName(), matrix.c_str(), std::thread::hardware_concurrency(),
      KernelTargetList(" ").c_str(), plan.default_threads, order.c_str());
  std::string not_run;
  for (const std::string& name : KernelTargetsNotRunHere()) not_run += " " + name;
  if (!not_run.empty()) out += "            compiled, not run by this CPU:" + not_run + "\n";
  return out;
}

}  // namespace

ThreadPool* ThreadPoolOf(const Backend& backend) {
  return std::string(backend.name()) == "cpu" ? static_cast<const CpuBackend&>(backend).pool()
                                              : nullptr;
}

}  // namespace cpu

BackendEntry CpuBackendEntry() { return {"cpu", &cpu::CpuBackend::Create, &cpu::DescribeDevices}; }

}  // namespace pocket
