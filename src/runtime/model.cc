#include "runtime/model.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "backends/cpu/backend.h"
#include "backends/cpu/kernel_target.h"
#include "backends/registry.h"
#include "runtime/memory.h"
#include "util/huge_page_buffer.h"
#include "util/log.h"

namespace pocket {

Model::~Model() = default;

size_t Model::ResidentWeightBytes() const {
  const size_t mapped = ResidentBytes(file_->bytes(), static_cast<size_t>(file_->size()));
  const HugePageBuffer* copy = backend_->weights_copy();
  return mapped + (copy != nullptr ? ResidentBytes(copy->data(), copy->size()) : 0);
}

cpu::ThreadPool* Model::pool() const { return cpu::ThreadPoolOf(*backend_); }

AttentionMath Model::attention_math() const {
  return cpu::ChooseAttentionMath(plan_, config_, quant_math_);
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
  POCKET_ASSIGN_OR_RETURN(const BackendEntry* backend_entry, FindBackend(options.backend));
  POCKET_RETURN_IF_ERROR(ApplyCpuTuning(options));
  std::unique_ptr<Model> model(new Model());
  static std::atomic<uint64_t> loaded{0};
  model->serial_ = ++loaded;
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

  BackendContext context;
  context.plan = &model->plan_;
  context.file = model->file_.get();
  context.config = &model->config_;
  context.options.threads = options.threads;
  context.options.quant_math = options.quant_math;
  context.options.pin_threads = options.pin_threads;
  context.options.huge_pages = options.huge_pages;
  auto backend = backend_entry->create(context);
  if (!backend.ok()) {
    return Status(backend.status().code(),
                  "backend=" + options.backend + ": " + backend.status().message());
  }
  model->backend_ = std::move(backend).value();
  model->quant_math_ = options.quant_math;
  // A copy of the weights holds whole 2 MiB pages: its rounding counts with
  // the model.
  if (const HugePageBuffer* copy = model->backend_->weights_copy()) {
    if (copy->size() > model->weight_bytes_)
      model->model_bytes_ += copy->size() - model->weight_bytes_;
  }
  Log(LogLevel::kInfo,
      "loaded %s: %s, %d layers, vocabulary %d, %zu bytes of weights; %s backend, threads %d",
      path.c_str(), model->config_.architecture.c_str(), model->config_.n_layers,
      model->config_.vocab, model->weight_bytes_, options.backend.c_str(), model->threads());
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

}  // namespace pocket
