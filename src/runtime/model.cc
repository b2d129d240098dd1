#include "runtime/model.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "backends/cpu/kernel_target.h"
#include "runtime/memory.h"
#include "runtime/opencl_executor.h"
#include "util/log.h"

namespace pocket {

Model::~Model() = default;

size_t Model::ResidentWeightBytes() const {
  const size_t mapped = ResidentBytes(file_->bytes(), static_cast<size_t>(file_->size()));
  return mapped + (weights_copy_ ? ResidentBytes(weights_copy_->data(), weights_copy_->size()) : 0);
}

// The file span that holds every tensor the plan reads goes into one
// HugePageBuffer, and the steps' pointers move with it. The span starts on
// an OS page, so each tensor keeps its alignment. Runs after weight_bytes_
// and model_bytes_ are set.
Status Model::CopyWeightsToHugePages() {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& [offset, size] : plan_.weight_ranges) {
    lo = std::min(lo, offset);
    hi = std::max(hi, offset + size);
  }
  if (lo >= hi) return Status();
  lo = lo / OsPageSize() * OsPageSize();
  auto copy = HugePageBuffer::Allocate(static_cast<size_t>(hi - lo));
  if (!copy.ok()) {
    return Status(copy.status().code(),
                  "cannot copy the weights into huge pages: " + copy.status().message() +
                      " (load without huge pages to use them from the file mapping)");
  }
  weights_copy_ = std::move(copy).value();
  // A chunk at a time, each chunk's mapped pages dropped once copied, so
  // loading holds at most one chunk twice.
  constexpr uint64_t kChunk = uint64_t{8} << 20;
  for (uint64_t at = lo; at < hi; at += kChunk) {
    const uint64_t n = std::min(kChunk, hi - at);
    std::memcpy(weights_copy_->data() + (at - lo), file_->bytes() + at, static_cast<size_t>(n));
    file_->ReleasePages(at, n);
  }
  const uint8_t* begin = file_->bytes() + lo;
  const uint8_t* end = file_->bytes() + hi;
  const auto moved = [&](auto* p) {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(p);
    if (b == nullptr || b < begin || b >= end) return p;
    return reinterpret_cast<decltype(p)>(weights_copy_->data() + (b - begin));
  };
  for (PlanStep& s : plan_.steps) {
    s.weight.data = moved(s.weight.data);
    s.norm = moved(s.norm);
    s.bias = moved(s.bias);
  }
  // The copy holds whole 2 MiB pages: its rounding counts with the model.
  if (weights_copy_->size() > weight_bytes_) model_bytes_ += weights_copy_->size() - weight_bytes_;
  return Status();
}

// ModelOptions' CPU kernel tuning, process-wide (kernel_target.h).
static Status ApplyCpuTuning(const ModelOptions& options) {
  if (!options.cpu_target.empty() && !cpu::RestrictKernelTargets(options.cpu_target)) {
    return Errorf(StatusCode::kInvalidArgument,
                  "cpu_target='%s' is not available here; choose one of: %s",
                  options.cpu_target.c_str(), cpu::KernelTargetList(", ").c_str());
  }
  if (options.matrix_extension.has_value()) cpu::AllowMatrixExtension(*options.matrix_extension);
  if (options.decode_read_ahead.has_value()) cpu::SetDecodeReadAhead(*options.decode_read_ahead);
  return Status::Ok();
}

StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path, const ModelOptions& options) {
#ifdef POCKET_WITH_OPENCL
  const bool opencl = options.backend == "opencl";
  const char* available = "cpu, opencl";
#else
  const bool opencl = false;
  const char* available = "cpu";
#endif
  if (options.backend != "cpu" && !opencl) {
    return Errorf(StatusCode::kUnsupported,
                  "backend '%s' is not built into this library; available: %s",
                  options.backend.c_str(), available);
  }
  if (options.threads < 0 || static_cast<size_t>(options.threads) > cpu::kMaxThreads) {
    return Errorf(StatusCode::kInvalidArgument,
                  "threads must be in [0, %zu] (0 = one per fast core), got %d", cpu::kMaxThreads,
                  options.threads);
  }
  POCKET_RETURN_IF_ERROR(ApplyCpuTuning(options));
  std::unique_ptr<Model> model(new Model());
  POCKET_ASSIGN_OR_RETURN(model->file_, PocketFile::Open(path));
  // The heap the model's own structures take, measured around building them
  // (another thread allocating at the same time only makes it larger);
  // without a measurement, the tokenizer section's size stands in.
  const size_t heap_before = HeapBytesInUse();
  auto config = ParseModelConfig(std::string(model->file_->config_json()));
  if (!config.ok()) {
    return Status(config.status().code(), path + ": " + config.status().message());
  }
  model->config_ = std::move(config).value();
  Status valid = ValidateModelConfig(model->config_);
  if (!valid.ok()) return Status(valid.code(), path + ": " + valid.message());

  auto tokenizer = Tokenizer::FromBlob(model->file_->tokenizer_blob());
  if (!tokenizer.ok()) {
    return Status(tokenizer.status().code(),
                  path + ": tokenizer section: " + tokenizer.status().message());
  }
  model->tokenizer_ = std::move(tokenizer).value();
  if (model->tokenizer_->vocab_size() > model->config_.vocab) {
    return Errorf(StatusCode::kCorruptFile,
                  "%s: the tokenizer has %d tokens but the model's vocab is %d", path.c_str(),
                  model->tokenizer_->vocab_size(), model->config_.vocab);
  }

  auto plan = BuildPlan(model->file_->graph_json(), *model->file_, model->config_);
  if (!plan.ok()) return Status(plan.status().code(), path + ": " + plan.status().message());
  model->plan_ = std::move(plan).value();
  model->weight_bytes_ = PagesCovering(model->plan_.weight_ranges, OsPageSize());
  const size_t heap_after = HeapBytesInUse();
  // Everything before the data section now lives in the tokenizer and plan,
  // so its mapped pages (1.5 MB for a 64K vocabulary) need not stay resident.
  const size_t mapped =
      static_cast<size_t>(model->file_->size()) - model->file_->ReleaseMetadataPages();
  model->model_bytes_ = (heap_after > heap_before ? heap_after - heap_before
                                                  : model->file_->tokenizer_blob().size()) +
                        (mapped > model->weight_bytes_ ? mapped - model->weight_bytes_ : 0);

#ifdef POCKET_WITH_OPENCL
  if (opencl) {
    auto device = OpenClModel::Create(model->plan_);
    if (!device.ok()) {
      return Status(device.status().code(), "backend=opencl: " + device.status().message());
    }
    model->opencl_ = std::move(device).value();
  }
#endif

  if (options.huge_pages && !opencl) POCKET_RETURN_IF_ERROR(model->CopyWeightsToHugePages());

  cpu::ThreadPoolOptions pool_options;
  pool_options.num_threads = static_cast<size_t>(options.threads);
  pool_options.pin_threads = options.pin_threads;
  model->pool_ = std::make_unique<cpu::ThreadPool>(pool_options);
  model->quant_math_ = options.quant_math;
  const bool quantized =
      std::any_of(model->plan_.steps.begin(), model->plan_.steps.end(), [](const PlanStep& s) {
        return s.op == OpKind::kLinear &&
               (s.weight.dtype == DType::kQ4 || s.weight.dtype == DType::kQ8);
      });
  // The bf16 kernel takes head sizes in multiples of 16 (ops.h).
  model->attention_math_ =
      options.quant_math == QuantMath::kInt8 && quantized && model->config_.head_dim % 16 == 0
          ? cpu::AttentionMath::kBf16
          : cpu::AttentionMath::kF32;
  Log(LogLevel::kInfo,
      "loaded %s: %s, %d layers, vocabulary %d, %zu bytes of weights; %s backend, threads %zu",
      path.c_str(), model->config_.architecture.c_str(), model->config_.n_layers,
      model->config_.vocab, model->weight_bytes_, options.backend.c_str(),
      model->pool_->NumThreads());
  return model;
}

std::shared_ptr<const grammar::TokenTrie> Model::token_trie() const {
  std::call_once(token_trie_once_, [this] {
    const Tokenizer& tok = *tokenizer_;
    std::vector<std::string> bytes(static_cast<size_t>(tok.vocab_size()));
    std::vector<bool> usable(bytes.size());
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      bytes[id] = tok.TokenBytes(id);
      usable[id] = !tok.IsSpecial(id);
    }
    token_trie_ = std::make_shared<const grammar::TokenTrie>(bytes, usable);
  });
  return token_trie_;
}

KvType Model::default_kv_type() const {
#ifdef POCKET_WITH_OPENCL
  if (opencl_ != nullptr) return KvType::kF16;
#endif
  return attention_math_ == cpu::AttentionMath::kBf16 && cpu::AttentionBf16Available()
             ? KvType::kBf16
             : KvType::kF16;
}

}  // namespace pocket
