// A loaded model: the mapped .pocket file, its config, tokenizer and
// validated execution plan, and the backend (backends/backend.h) that holds
// the weights (in place, copied into huge pages with
// ModelOptions::huge_pages, or uploaded to a device) and makes the
// sessions' state.
//
// Threading: a Model is immutable after Load and may be shared by any number
// of Sessions, also on different threads at the same time. Each Session must
// be used by one thread at a time. On the CPU backend all sessions share the
// model's thread pool; when two sessions compute at the same moment, the one
// that finds the pool busy runs its kernels on its own thread (correct, just
// slower), so the machine is never oversubscribed.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backends/backend.h"
#include "backends/kv_pages.h"
#include "format/model_config.h"
#include "format/reader.h"
#include "grammar/token_mask.h"
#include "graph/plan.h"
#include "tokenizer/tokenizer.h"
#include "util/huge_page_buffer.h"
#include "util/status.h"

namespace pocket {

namespace cpu {
class ThreadPool;
}  // namespace cpu

struct ModelOptions {
  // Compute threads; 0 = one per physical core of the CPU's fast group (the
  // big cores of a phone, one thread per SMT core; backends/cpu/core_plan.h).
  // At most cpu::kMaxThreads; where the system refuses threads, the model
  // computes on those it got and logs a warning (threads() tells how many).
  int threads = 0;
  // The backend by its registry name (backends/registry.h; `pocket inspect
  // --devices` lists the ones this build has, docs/architecture.md says
  // what each is). A name this build lacks fails Load with
  // kInvalidArgument listing the names it has.
  std::string backend = "cpu";
  // q4/q8 Linear maths on the CPU (backends/cpu/ops.h): int8 activations,
  // and bf16 attention where the CPU has it (fast, the default), or f32
  // (the reference-accurate path). See backends/cpu/executor.h.
  QuantMath quant_math = QuantMath::kInt8;
  // Pin compute worker i to the i-th core of the core plan: the fast
  // group's cores fastest first, then the slow group's, then SMT siblings
  // (Linux and Android; elsewhere ignored). The calling thread is left where
  // the OS puts it, so the plan's first (fastest) core stays free for it.
  bool pin_threads = false;
  // Copy the weights out of the file mapping into anonymous memory backed
  // by transparent huge pages (util/huge_page_buffer.h), CPU backend only.
  // Decode streams every weight once per token: over 2 MiB pages it runs
  // as fast as the machine streams memory, while through the mapping its
  // speed depends on how the page cache holds the file (in 4 KiB pages,
  // up to 1.26x slower here; docs/performance.md). The price: loading
  // copies the weights (tens to hundreds of milliseconds), and the copy is
  // private memory, not page cache other processes mapping the same file
  // could share. Off by default; where the OS has no huge pages the copy is
  // ordinary memory.
  bool huge_pages = false;

  // CPU kernel tuning. The kernels dispatch per process, not per model, so
  // Load applies these to the whole process (every model loaded before or
  // after): set them before loading, never while a model computes. Left
  // unset, each keeps the process's setting.
  //
  // Holds the CPU kernels to an older target than the best this CPU runs
  // (any case; one of cpu::KernelTargets(), e.g. "AVX2" or "NEON"): what a
  // CPU without the newer extensions gets. Empty: the process's target (the
  // best unless an earlier load held it). Another name fails Load with
  // kInvalidArgument listing the choices.
  std::string cpu_target;
  // Whether prompts (and, on x86 with AMX-BF16, bf16 attention) may multiply
  // on the CPU's matrix unit: Arm's I8MM or x86's AMX (kernel_target.h;
  // the same as pocket_set_cpu_matrix_extension). Allowed by default.
  std::optional<bool> matrix_extension;
  // How far ahead of its reads decode's rows16 GEMV asks for weight lines
  // into L2, in bytes (0: none); by default cpu::DefaultDecodeReadAhead().
  std::optional<size_t> decode_read_ahead;
};

class Model {
 public:
  static StatusOr<std::unique_ptr<Model>> Load(const std::string& path,
                                               const ModelOptions& options);
  ~Model();

  // Distinct for every Model loaded in the process, also where a new one
  // takes a freed one's address: the key of what is learned about a loaded
  // model (speculation's step costs).
  uint64_t serial() const { return serial_; }
  const ModelConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const Plan& plan() const { return plan_; }
  const PocketFile& file() const { return *file_; }
  // The backend the model runs on, shared by its sessions.
  const Backend& backend() const { return *backend_; }
  // CPU threads the sessions compute on.
  int threads() const { return backend_->threads(); }
  QuantMath quant_math() const { return quant_math_; }
  // The CPU backend's thread pool (internally synchronized, see the
  // threading note above); null on other backends.
  cpu::ThreadPool* pool() const;
  // How the CPU backend runs attention: kBf16 with the int8 maths when the
  // model has q4/q8 Linears and a head size that is a multiple of 16 (so a
  // model with plain weights keeps f32 maths throughout), and then only
  // where cpu::AttentionBf16Available().
  AttentionMath attention_math() const;
  // The KV cache type sessions get unless they ask for one, the backend's
  // choice: on the CPU bf16 where attention multiplies in bf16, f16
  // elsewhere (backends/cpu/backend.cc).
  KvType default_kv_type() const { return backend_->default_kv_type(); }
  // Bytes of the mapped file the plan reads, whole OS pages (memory.h):
  // what decode reads per token, also when they were copied to huge pages.
  size_t weight_bytes() const { return weight_bytes_; }
  // Whether the weights were copied into a HugePageBuffer (ModelOptions;
  // the OS decides whether huge pages back it).
  bool weights_in_huge_pages() const { return backend_->weights_copy() != nullptr; }
  // The tokenizer, config and plan in memory plus the rest of the mapped
  // file (memory.h), and the huge-page copy's rounding beyond the weights.
  size_t model_bytes() const { return model_bytes_; }
  // Bytes of the mapped file and of the weights' copy resident in memory
  // now.
  size_t ResidentWeightBytes() const;
  // The vocabulary's token bytes as a trie for grammar-constrained decoding
  // (grammar/token_mask.h; special tokens excluded), built on the first
  // call (tens of milliseconds for 151K tokens) and kept: most models never
  // generate under a grammar. Thread-safe.
  std::shared_ptr<const grammar::TokenTrie> token_trie() const;

 private:
  Model() = default;

  uint64_t serial_ = 0;
  std::unique_ptr<PocketFile> file_;
  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  Plan plan_;  // the backend may point its weights at its own copy
  std::unique_ptr<Backend> backend_;
  QuantMath quant_math_ = QuantMath::kInt8;
  size_t weight_bytes_ = 0;
  size_t model_bytes_ = 0;
  mutable std::once_flag token_trie_once_;
  mutable std::shared_ptr<const grammar::TokenTrie> token_trie_;
};

}  // namespace pocket
