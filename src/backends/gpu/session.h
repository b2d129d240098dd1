// What the GPU backends' sessions share over their device KV cache: the
// check of the session's KV type, truncation and clearing, and the byte
// counts the budget asks for, forwarded to the cache. A session derives
// from KvSession<its cache> and writes Run (over RunStep, step.h),
// Reserve, Drop, the row transfers and its scratch.
#pragma once

#include <cstddef>
#include <mutex>
#include <utility>

#include "backends/backend.h"
#include "backends/gpu/kv_layout.h"
#include "graph/kv_type.h"
#include "util/status.h"

namespace pocket::gpu {

template <class KvCache>
class KvSession : public BackendSession {
 public:
  // Positions beyond a truncation need no freeing: later appends overwrite
  // them.
  void Truncate(size_t n_tokens) override {}
  void Clear() override {
    std::lock_guard<std::mutex> lock(*mutex_);
    kv_.Clear();
  }

  // Device bytes held by the KV cache, and what its growth steps cost.
  size_t kv_bytes() const override { return kv_.bytes(); }
  size_t KvBytesFor(size_t n_tokens) const override { return kv_.BytesFor(n_tokens); }
  size_t kv_page_tokens() const override { return kv_.step_tokens(); }
  size_t kv_page_bytes() const override { return kv_.step_bytes(); }
  size_t kv_commit_slack() const override { return 0; }

 protected:
  // `backend` names the backend in errors; `mutex` is the one its sessions
  // hold while they use the device; the cache is built from `kv_args`.
  template <class... KvArgs>
  KvSession(const char* backend, std::mutex* mutex, KvType type, KvArgs&&... kv_args)
      : backend_name_(backend), mutex_(mutex), type_(type), kv_(std::forward<KvArgs>(kv_args)...) {}

  Status CheckType() const {
    if (kKvTypes & KvTypeBit(type_)) return Status::Ok();
    return Errorf(StatusCode::kUnsupported, "backend '%s' has no %s KV cache", backend_name_,
                  KvTypeName(type_));
  }

  const char* backend_name_;
  std::mutex* mutex_;
  KvType type_;
  KvCache kv_;
};

}  // namespace pocket::gpu
