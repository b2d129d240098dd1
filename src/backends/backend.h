// The only thing the runtime knows of a backend. A Backend is made once per
// loaded model by the factory its registry entry names (registry.h): it
// holds the weights (read in place from the mapped file, copied, or uploaded
// to a device), says what its sessions can do, and makes them. A
// BackendSession is one conversation's state on that backend: its KV cache
// and the scratch its steps compute in, and it runs chunks of tokens
// through the plan (plan_walker.h walks the plan for it).
//
// Threading: a Backend is used by any number of sessions at once, from any
// threads (it is const after creation); each BackendSession by one thread at
// a time.
//
// The session's memory budget (runtime/session.h) is computed from what the
// backend says it holds, device memory included: weight_bytes() here, and
// the KV and scratch counts of BackendSession.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backends/op_times.h"
#include "graph/kv_type.h"
#include "graph/plan.h"
#include "graph/quant_math.h"
#include "util/status.h"

namespace pocket {

class HugePageBuffer;
class PocketFile;
struct ModelConfig;

// The model options a backend reads (runtime/model.h's ModelOptions has
// their documentation); a backend ignores those that mean nothing to it.
struct BackendOptions {
  int threads = 0;
  QuantMath quant_math = QuantMath::kInt8;
  bool pin_threads = false;
  bool huge_pages = false;
};

// What a backend is made from. The plan and the file outlive the backend.
// The plan is the model's: a backend that moves the weights in host memory
// (the CPU's huge-page copy) points the steps' weight, norm and bias at the
// copy before it returns, and leaves the plan alone afterwards.
struct BackendContext {
  Plan* plan = nullptr;
  const PocketFile* file = nullptr;
  const ModelConfig* config = nullptr;
  BackendOptions options;
};

// Which logits a run computes (BackendSession::Run).
enum class BackendOutput {
  kNone,     // none: the plan's row-wise tail is skipped
  kLastRow,  // the last token's [vocab]
  kAllRows,  // [n, vocab], a row per token
};

// What a backend's sessions can do. The runtime checks these before asking,
// and names the backend and the missing capability in its error.
struct BackendCapabilities {
  // Bit (1 << KvType) for each KV element type the sessions store.
  uint32_t kv_types = 0;
  // BackendSession::Drop (a sliding window, kv_policy=slide).
  bool sliding_window = false;
  // BackendSession::ExportRows / ValidateRows / ImportRows (session state
  // files).
  bool state_rows = false;
  // BackendSession::set_op_times adds the steps' wall times.
  bool op_times = false;
  // Each row of a kAllRows run of up to 16 tokens equals, bit for bit, the
  // logits of that token's own single-token run, so verifying guesses in
  // one step (speculative decoding) never changes the output; speculation
  // is on by default only on such backends.
  bool exact_batch_rows = false;

  bool Supports(KvType type) const { return (kv_types >> static_cast<unsigned>(type)) & 1u; }
};

constexpr uint32_t KvTypeBit(KvType type) { return uint32_t{1} << static_cast<unsigned>(type); }

struct BackendSessionOptions {
  KvType kv_type = KvType::kF16;  // one the backend Supports()
  // Positions per KV page for backends that page their cache (0: their
  // default); others ignore it.
  size_t kv_page_tokens = 0;
  size_t max_tokens = 0;  // the model's context
};

// The serialized KV rows of n_tokens positions, the same on every backend
// so states move between them: layer by layer (layers with no KV rows
// skipped), K rows of positions [0, n_tokens), then V rows, each
// KvRowBytes(type, kv_row[l], kv_head_dim[l]) bytes: the values in element
// order, then (q8) the row's f16 scales, one per head.
inline size_t KvStateRowBytes(const Plan& plan, KvType type) {
  size_t bytes = 0;
  for (size_t l = 0; l < plan.kv_row.size(); ++l) {
    if (plan.kv_row[l] != 0) bytes += 2 * KvRowBytes(type, plan.kv_row[l], plan.kv_head_dim[l]);
  }
  return bytes;
}

class BackendSession {
 public:
  virtual ~BackendSession() = default;

  // Runs tokens[0, n) at positions [n_past, n_past + n): appends their K
  // and V rows to the cache (which must hold n_past positions; Run reserves
  // what the new ones need) and writes the logits `output` asks for to
  // `logits` (ignored for kNone). Errors: BudgetExceeded where scratch or
  // KV memory cannot be had, before anything is computed; device failures,
  // after which positions from n_past on hold nothing valid.
  virtual Status Run(const int32_t* tokens, size_t n, size_t n_past, BackendOutput output,
                     float* logits) = 0;

  // --- the KV cache ---
  // Makes positions [0, n_tokens) addressable. On failure (BudgetExceeded,
  // OutOfRange past max_tokens) nothing new stays allocated.
  virtual Status Reserve(size_t n_tokens) = 0;
  // Keeps positions [0, n_tokens) and gives back what held the rest.
  virtual void Truncate(size_t n_tokens) = 0;
  // Gives back every position.
  virtual void Clear() = 0;
  // Of the n_tokens held, forgets positions [begin, begin + count): the
  // rows after them move down by `count` positions, K rotated to its new
  // positions with the plan's kv_rope, and what held the last `count`
  // positions is given back. Unsupported unless capabilities().sliding_window.
  virtual Status Drop(size_t begin, size_t count, size_t n_tokens) = 0;
  // Positions [0, n_tokens) in the serialized layout (KvStateRowBytes),
  // handed to `sink` in order, a row or a block of rows at a time (never
  // the whole cache at once). Unsupported unless state_rows.
  using ByteSink = std::function<void(const uint8_t* data, size_t size)>;
  virtual Status ExportRows(size_t n_tokens, const ByteSink& sink) const = 0;
  // Checks serialized rows from an untrusted source (size, every value
  // finite) without touching the cache: CorruptFile naming the layer and
  // position. Unsupported unless state_rows.
  virtual Status ValidateRows(size_t n_tokens, const uint8_t* data, size_t size) const = 0;
  // Replaces positions [0, n_tokens) with validated serialized rows; the
  // cache must have been Reserve(n_tokens)'d. Unsupported unless state_rows.
  virtual Status ImportRows(size_t n_tokens, const uint8_t* data) = 0;

  // --- memory, for the budget ---
  // Bytes the KV cache holds now, and would hold with n_tokens positions.
  virtual size_t kv_bytes() const = 0;
  virtual size_t KvBytesFor(size_t n_tokens) const = 0;
  // The cache grows by pages of kv_page_tokens() positions, each
  // kv_page_bytes(); the allocator may hold up to kv_commit_slack() more.
  virtual size_t kv_page_tokens() const = 0;
  virtual size_t kv_page_bytes() const = 0;
  virtual size_t kv_commit_slack() const = 0;
  // Bytes the scratch buffers (activations) hold now, and would hold after
  // running chunks of up to n tokens with `output`; held buffers never
  // shrink until ReleaseScratch.
  virtual size_t scratch_bytes() const = 0;
  virtual size_t ScratchBytesFor(size_t n, BackendOutput output) const = 0;
  // Frees the scratch buffers; the next Run allocates them again.
  virtual void ReleaseScratch() = 0;

  // Adds every step's wall time to *times from the next Run on (null:
  // none). Not owned. Ignored unless capabilities().op_times.
  virtual void set_op_times(OpTimes* /*times*/) {}
};

class Backend {
 public:
  virtual ~Backend() = default;

  // The registry name ("cpu", "opencl", ...).
  virtual const char* name() const = 0;
  virtual BackendCapabilities capabilities() const = 0;
  // The KV type sessions get unless they ask for one.
  virtual KvType default_kv_type() const = 0;
  // Device memory the weights were uploaded to (0 where the steps read
  // them in host memory); the budget counts it beside the host pages the
  // model's weights take (Model::weight_bytes).
  virtual size_t device_weight_bytes() const { return 0; }
  // The host copy of the weights the steps read, where the backend made one
  // (BackendOptions::huge_pages), else null: the model counts its
  // residency and its rounding.
  virtual const HugePageBuffer* weights_copy() const { return nullptr; }
  // CPU threads the sessions compute on.
  virtual int threads() const = 0;

  // A session with an empty cache. It allocates nothing yet (memory errors
  // come from Reserve and Run); a kv_type the backend does not Support()
  // fails its first Reserve or Run with Unsupported.
  virtual std::unique_ptr<BackendSession> NewSession(
      const BackendSessionOptions& options) const = 0;
};

}  // namespace pocket
